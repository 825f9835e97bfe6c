/**
 * The Customcluster API of the Customcluster tutorial (`sde.dev/v1alpha1`), as the CRD in
 * `crd.yaml` serves it, and the zod schemas a reconcile validates it with (defence in depth: the
 * CRD's openAPIV3Schema already rejects invalid specs with 422).
 */

import { customResource, type PrimaryObject } from 'levelset/kit';
import * as z from 'zod';

export const GROUP = 'sde.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'Customcluster';

/** The primary resource: `customclusters.sde.dev` (short name `cc`), namespaced. */
export const customclusterResource = customResource({ group: GROUP, version: VERSION, kind: KIND });

/** The most pods one Customcluster may ask for (the CRD's `spec.count` maximum). */
export const MAX_COUNT = 1000;

/** `spec`, as the CRD requires it: a message and a pod count. */
export const customclusterSpecSchema = z
  .object({
    message: z
      .string()
      .max(32768)
      .describe('What every pod prints (its MESSAGE environment variable). Changing it replaces the pods.'),
    count: z.int32().min(0).max(MAX_COUNT).describe('How many pods to keep running.'),
  })
  .describe('The desired state.');
export type CustomclusterSpec = z.infer<typeof customclusterSpecSchema>;

/** `status` as the reconcile returns it (desired.ts `observedStatus`). */
export const customclusterStatusSchema = z.object({
  message: z.string().describe('The message the running pods print ("" while none runs).').optional(),
  count: z.int32().min(0).describe('How many pods run spec.message (phase Running).').optional(),
});

/** A Customcluster as the reconcile reads it. */
export type Customcluster = PrimaryObject;
