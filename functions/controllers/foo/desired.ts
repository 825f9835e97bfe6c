/**
 * What a Foo wants, as pure functions: the Deployment (sample-controller's `newDeployment`) and
 * the status Levelset writes back. No I/O here, so it is unit-tested without a cluster.
 */
import type { V1Deployment } from '@kubernetes/client-node';
import { type ConditionInput, parseConditions, setCondition } from '../../runtime/conditions.ts';
import { newControllerRef } from '../../runtime/owner.ts';
import { API_VERSION, type Foo, type FooStatus, KIND, READY } from './api.ts';

/** The image sample-controller runs. */
export const NGINX_IMAGE = 'nginx:latest';

/** `app: nginx, controller: <foo name>`: the Deployment's selector and pod labels, as upstream. */
export function deploymentLabels(foo: Pick<Foo, 'metadata'>): Record<string, string> {
  return { app: 'nginx', controller: foo.metadata.name };
}

/**
 * The Deployment a Foo asks for (sample-controller's `newDeployment`): named `deploymentName` in
 * the Foo's namespace, controlled by the Foo, one `nginx` container, `replicas` when the Foo sets
 * them (omitted, the API server defaults to 1).
 */
export function newDeployment(
  foo: Foo,
  spec: { deploymentName: string; replicas?: number | undefined },
): V1Deployment {
  const labels = deploymentLabels(foo);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: spec.deploymentName,
      namespace: foo.metadata.namespace,
      labels: { ...labels },
      ownerReferences: [newControllerRef(foo, { apiVersion: API_VERSION, kind: KIND })],
    },
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

/**
 * The `Ready` condition for a Deployment with `available` of `desired` replicas available:
 * `True`/`DeploymentAvailable` once `available >= desired`, else `False`/`DeploymentProgressing`.
 */
export function readyFromDeployment(foo: Foo, available: number, desired: number): ConditionInput {
  const message = `${available} of ${desired} replicas available`;
  return available >= desired
    ? {
        type: READY,
        status: 'True',
        reason: 'DeploymentAvailable',
        message,
        observedGeneration: foo.metadata.generation,
      }
    : {
        type: READY,
        status: 'False',
        reason: 'DeploymentProgressing',
        message,
        observedGeneration: foo.metadata.generation,
      };
}

/** A `Ready=False` condition saying why the Foo cannot be acted on (invalid spec, `ErrResourceExists`). */
export function notReady(foo: Foo, reason: string, message: string): ConditionInput {
  return { type: READY, status: 'False', reason, message, observedGeneration: foo.metadata.generation };
}

/**
 * The status to merge-patch onto the Foo: `ready` set among its current conditions (keeping
 * `lastTransitionTime` when the status is unchanged), `observedGeneration`, and
 * `availableReplicas` when known (left alone otherwise, e.g. when the Deployment is not ours).
 */
export function desiredStatus(
  foo: Foo,
  ready: ConditionInput,
  availableReplicas?: number,
  now = new Date(),
): Partial<FooStatus> {
  const conditions = setCondition(parseConditions(foo.status?.conditions), ready, now);
  return {
    ...(availableReplicas !== undefined ? { availableReplicas } : {}),
    ...(foo.metadata.generation !== undefined ? { observedGeneration: foo.metadata.generation } : {}),
    conditions,
  };
}
