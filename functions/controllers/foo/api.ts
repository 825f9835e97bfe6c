/**
 * The Foo API of kubernetes/sample-controller (`samplecontroller.k8s.io/v1alpha1`), as the CRD in
 * `crd.yaml` serves it, and the zod schemas a reconcile validates it with (defence in depth: the
 * CRD's openAPIV3Schema already rejects most invalid specs with 422).
 */
import { z } from 'zod';
import type { Condition } from '../../runtime/conditions.ts';
import { namespacedCustomObjectSchema } from '../../runtime/custom-resource.ts';
import type { ResourceType } from '../types.ts';

export const GROUP = 'samplecontroller.k8s.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'Foo';

/** The primary resource: `foos.samplecontroller.k8s.io`, namespaced. */
export const fooResource: ResourceType = {
  group: GROUP,
  version: VERSION,
  plural: 'foos',
  kind: KIND,
  namespaced: true,
};

/** `apps/v1` Deployments: what a Foo controls. */
export const deploymentResource: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'deployments',
  kind: 'Deployment',
  namespaced: true,
};

/** Event reasons and messages, as sample-controller's `controller.go` spells them. */
export const SUCCESS_SYNCED = 'Synced';
export const MESSAGE_RESOURCE_SYNCED = 'Foo synced successfully';
export const ERR_RESOURCE_EXISTS = 'ErrResourceExists';
/** `Resource %q already exists and is not managed by Foo`, with Go's `%q` quoting. */
export function messageResourceExists(deploymentName: string): string {
  return `Resource ${JSON.stringify(deploymentName)} already exists and is not managed by Foo`;
}
/** Reason of the Warning Event and condition for a spec no reconcile can act on. */
export const INVALID_SPEC = 'InvalidSpec';

/** The condition type Levelset maintains on a Foo (Kubernetes API conventions: conditions). */
export const READY = 'Ready';

/** A DNS-1123 subdomain (apimachinery `validation.IsDNS1123Subdomain`): what a Deployment name must be. */
export const dns1123Subdomain = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be a DNS-1123 subdomain');

/**
 * `spec` as the CRD allows it: both fields optional, as upstream's `FooSpec` (`Replicas *int32`).
 * A missing `deploymentName` is valid here and handled by the reconcile as upstream does (absorbed).
 */
export const fooSpecSchema = z.object({
  deploymentName: dns1123Subdomain.optional(),
  replicas: z.number().int().min(1).max(10).optional(),
});
export type FooSpec = z.infer<typeof fooSpecSchema>;

/** The parts of a Foo a reconcile reads; the rest of the object passes through. */
export const fooSchema = namespacedCustomObjectSchema;
export type Foo = z.infer<typeof fooSchema>;

/** The status Levelset writes (a merge patch through the `status` subresource). */
export interface FooStatus {
  availableReplicas: number;
  observedGeneration?: number;
  conditions: Condition[];
}
