/**
 * What a Foo wants, as pure functions: the Deployment (sample-controller's `newDeployment`) and its
 * `Ready` condition. No I/O here, so it is unit-tested without a cluster.
 */
import type { V1Deployment } from '@kubernetes/client-node';
import type { Foo } from './api.ts';

/** The `Ready` condition of a Foo (from the kit; kept here, where sample-controller's pieces are). */
export { readyFromDeployment } from 'levelset/kit';

/** The image sample-controller runs. */
export const NGINX_IMAGE = 'nginx:latest';

/** `app: nginx, controller: <foo name>`: the Deployment's selector and pod labels, as upstream. */
export function deploymentLabels(foo: Pick<Foo, 'metadata'>): Record<string, string> {
  return { app: 'nginx', controller: foo.metadata.name };
}

/**
 * The Deployment a Foo asks for (sample-controller's `newDeployment`): named `deploymentName`, one
 * `nginx` container, `replicas` when the Foo sets them (omitted, the API server defaults to 1). The
 * kit adds the namespace, its labels and the controller reference.
 */
export function newDeployment(
  foo: Foo,
  spec: { deploymentName: string; replicas?: number | undefined },
): V1Deployment & { metadata: { name: string } } {
  const labels = deploymentLabels(foo);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: spec.deploymentName, labels: { ...labels } },
    spec: {
      ...(spec.replicas !== undefined ? { replicas: spec.replicas } : {}),
      selector: { matchLabels: { ...labels } },
      template: {
        metadata: { labels: { ...labels } },
        spec: { containers: [{ name: 'nginx', image: NGINX_IMAGE }] },
      },
    },
  };
}
