/**
 * `icecream`: the Icecream controller of the k8s-controller tutorial (`controller.nicoleh.io/v1alpha1`),
 * on the Levelset controller kit (docs/writing-a-controller.md). Like sample-controller's Foo it owns
 * a Deployment; it also watches that Deployment's Pods (Pod → ReplicaSet → Deployment → Icecream,
 * through controller references) and reports the nodes they are scheduled on.
 */
import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import {
  defineController,
  deployments,
  INVALID_SPEC,
  pods,
  readyFromDeployment,
  replicasets,
  TerminalError,
} from 'levelset/kit';
import { icecreamResource, icecreamSpecSchema, icecreamStatusSchema } from './api.ts';

/** The label carrying the Icecream's name on its Deployment, ReplicaSets and Pods (their selector). */
export const ICECREAM_LABEL = 'icecream';

/** The `icecream` controller module (registered in `controllers/index.ts`). */
export const icecreamController = defineController({
  name: 'icecream',
  primary: icecreamResource,
  spec: icecreamSpecSchema,
  status: icecreamStatusSchema,
  owns: [deployments],
  watches: [
    { resource: replicasets, labelSelector: ICECREAM_LABEL },
    { resource: pods, labelSelector: ICECREAM_LABEL },
  ],
  async reconcile({ object, spec, owned, list }) {
    const name = object.metadata.name;
    if (name.length > 63) throw new TerminalError(INVALID_SPEC, `${name}: too long to be a label value`);
    const labels = { app: 'nginx', [ICECREAM_LABEL]: name };
    const replicas = spec.replicas ?? 1;
    const deployment = owned(deployments).find((d) => d.metadata?.name === spec.deploymentName);
    const available = (deployment as V1Deployment | undefined)?.status?.availableReplicas ?? 0;
    const podList = (await list(pods, { labelSelector: `${ICECREAM_LABEL}=${name}` })) as V1Pod[];
    const nodeNames = [...new Set(podList.flatMap((p) => p.spec?.nodeName ?? []))].sort();
    return {
      children: [
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: spec.deploymentName, labels },
          spec: {
            replicas,
            selector: { matchLabels: labels },
            template: {
              metadata: { labels },
              spec: { containers: [{ name: 'nginx', image: 'nginx:latest' }] },
            },
          },
        },
      ],
      status: { availableReplicas: available, nodeNames },
      ready: readyFromDeployment(available, replicas),
    };
  },
});
