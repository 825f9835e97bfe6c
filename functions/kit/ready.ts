/**
 * `Ready` conditions read from what a controller's children report, and read on another object.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { findCondition, parseConditions } from '../../core/k8s/conditions.ts';
import { READY } from './steps.ts';
import type { ReadyInput } from './types.ts';

/**
 * `Ready` from a Deployment's available replicas: `True`/`DeploymentAvailable` once `available`
 * reaches `desired`, else `False`/`DeploymentProgressing`; the message says `N of M replicas
 * available`.
 */
export function readyFromDeployment(available: number, desired: number): ReadyInput {
  const status = available >= desired;
  return {
    status,
    reason: status ? 'DeploymentAvailable' : 'DeploymentProgressing',
    message: `${available} of ${desired} replicas available`,
  };
}

/**
 * Whether another object (a dependency: a Topic that a Subscription names) is Ready now: its `Ready`
 * condition `True` and observed at its current `metadata.generation` (the condition's
 * `observedGeneration`, else `status.observedGeneration`; Kubernetes API conventions), so a spec
 * just changed and not yet reconciled does not count. `undefined` (absent): `false`.
 */
export function isReady(object: KubernetesObject | undefined): boolean {
  const status = (object as { status?: { conditions?: unknown; observedGeneration?: unknown } } | undefined)
    ?.status;
  const ready = findCondition(parseConditions(status?.conditions), READY);
  const observed = ready?.observedGeneration ?? status?.observedGeneration;
  return ready?.status === 'True' && observed === object?.metadata?.generation;
}
