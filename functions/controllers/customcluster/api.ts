/**
 * The Customcluster API of the Customcluster tutorial (`sde.dev/v1alpha1`), as the CRD in
 * `crd.yaml` serves it, and the zod schemas a reconcile validates it with (defence in depth: the
 * CRD's openAPIV3Schema already rejects invalid specs with 422).
 */
import { z } from 'zod';
import type { Condition } from '../../runtime/conditions.ts';
import { namespacedCustomObjectSchema } from '../../runtime/custom-resource.ts';
import type { ResourceType } from '../types.ts';

export const GROUP = 'sde.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'Customcluster';

/** The primary resource: `customclusters.sde.dev` (short name `cc`), namespaced. */
export const customclusterResource: ResourceType = {
  group: GROUP,
  version: VERSION,
  plural: 'customclusters',
  kind: KIND,
  namespaced: true,
};

/** Core `v1` Pods: what a Customcluster controls. */
export const podResource: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'pods',
  kind: 'Pod',
  namespaced: true,
};

/** The condition type Levelset maintains on a Customcluster (Kubernetes API conventions: conditions). */
export const READY = 'Ready';
/** Reason of the Warning Event and condition for a spec no reconcile can act on. */
export const INVALID_SPEC = 'InvalidSpec';

/** The most pods one Customcluster may ask for (the CRD's `spec.count` maximum). */
export const MAX_COUNT = 1000;

/** `spec`, as the CRD requires it: a message and a pod count. */
export const customclusterSpecSchema = z.object({
  message: z.string().max(32768),
  count: z.number().int().min(0).max(MAX_COUNT),
});
export type CustomclusterSpec = z.infer<typeof customclusterSpecSchema>;

/** The parts of a Customcluster a reconcile reads; the rest of the object passes through. */
export const customclusterSchema = namespacedCustomObjectSchema;
export type Customcluster = z.infer<typeof customclusterSchema>;

/** The status Levelset writes (a merge patch through the `status` subresource). */
export interface CustomclusterStatus {
  /** Pods in phase `Running` that run `spec.message`. */
  count: number;
  /** The message those pods print; `""` while none runs. */
  message: string;
  observedGeneration?: number;
  conditions: Condition[];
}
