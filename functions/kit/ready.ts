/**
 * `Ready` conditions read from what a controller's children report.
 */
import type { ReadyInput } from './steps.ts';

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
