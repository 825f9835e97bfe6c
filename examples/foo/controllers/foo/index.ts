/**
 * `foo`: kubernetes/sample-controller's Foo controller, on the kit.
 *
 * A Foo (`samplecontroller.k8s.io/v1alpha1`) asks for a Deployment named `spec.deploymentName`
 * running nginx with `spec.replicas` replicas; its status copies the Deployment's
 * `availableReplicas`, with a `Ready` condition. The kit does the rest: the Deployment is created or
 * applied with a controller reference to the Foo, one of that name that the Foo does not control is
 * never touched (`ErrResourceExists`), one the Foo no longer names is pruned, and a `Synced` Event
 * is recorded when something changed. Deployment events map to their controlling Foo (upstream
 * `handleObject`), except the echoes of its own writes and status updates that leave
 * `availableReplicas` unchanged. A converged Foo costs 2 requests: GET the Foo, LIST its Deployments (none in-process,
 * where both come from the informers: docs/architecture.md decision 56).
 */
import type { V1Deployment } from '@kubernetes/client-node';
import {
  defineController,
  deployments,
  INVALID_SPEC,
  keyString,
  skipOwnWrites,
  TerminalError,
} from 'levelset/kit';
import { fooResource, fooSpecSchema, fooStatusSchema } from './api.ts';
import { newDeployment, readyFromDeployment } from './desired.ts';

/** Label values are at most 63 characters (apimachinery `validation.IsValidLabelValue`). */
const MAX_LABEL_VALUE = 63;

/** The `foo` controller module (registered in `controllers/index.ts`). */
export const fooController = defineController({
  name: 'foo',
  primary: fooResource,
  spec: fooSpecSchema,
  status: fooStatusSchema,
  // Predicates (docs/architecture.md, "Predicates on children's watches"): the echoes of the Foo's
  // own create and applies of its Deployment, and Deployment status updates (its revision
  // annotation among them) that leave `availableReplicas` as it was, enqueue nothing; every other
  // Deployment event (a spec or metadata change, its deletion, another writer's create or change)
  // maps to the Foo.
  owns: [
    {
      resource: deployments,
      predicate: skipOwnWrites,
      readsStatus: (d) => (d as V1Deployment).status?.availableReplicas ?? 0,
    },
  ],
  reconcile({ key, object: foo, spec: { deploymentName, replicas }, owned }) {
    // Upstream absorbs a missing name rather than requeue: the next update of the Foo brings it back.
    if (!deploymentName)
      throw new TerminalError(INVALID_SPEC, `${keyString(key)}: deployment name must be specified`);
    if (foo.metadata.name.length > MAX_LABEL_VALUE) {
      const reason = `the Foo's name is longer than ${MAX_LABEL_VALUE} characters and cannot label its Deployment`;
      throw new TerminalError(INVALID_SPEC, `${keyString(key)}: ${reason}`);
    }
    const live = owned(deployments).find((d) => d.metadata?.name === deploymentName) as
      | V1Deployment
      | undefined;
    const available = live?.status?.availableReplicas ?? 0;
    return {
      children: [newDeployment(foo, { deploymentName, replicas })],
      status: { availableReplicas: available },
      ready: readyFromDeployment(available, replicas ?? live?.spec?.replicas ?? 1),
    };
  },
});
