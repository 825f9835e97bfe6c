/**
 * The ConfigMapBundle API (`examples.levelset.dev/v1alpha1`): the zod schemas of its spec and status, from which
 * `levelset build` generates `crd.yaml`'s openAPIV3Schema (so the API server refuses an
 * invalid spec with 422; the rules a CRD cannot express are checked by the reconcile, and listed in
 * `crd.yaml`). Other controllers may import this module; the rest of the folder is this controller's own.
 */

import { customResource } from 'levelset/kit';
import * as z from 'zod';

/** The primary resource: `configmapbundles.examples.levelset.dev`, namespaced. */
export const configmapBundleResource = customResource({
  group: 'examples.levelset.dev',
  version: 'v1alpha1',
  kind: 'ConfigMapBundle',
  plural: 'configmapbundles',
});

/** `spec`, as the CRD allows it. */
export const configmapBundleSpecSchema = z.object({
  sources: z.array(z.object({ namespace: z.string(), name: z.string() })),
});
export type ConfigMapBundleSpec = z.infer<typeof configmapBundleSpecSchema>;

/** `status`, as the reconcile returns it (the kit adds `observedGeneration` and `conditions`). */
export const configmapBundleStatusSchema = z.object({
  sourcesFound: z.number().int().optional(),
  missing: z.array(z.string()).optional(),
});
export type ConfigMapBundleStatus = z.infer<typeof configmapBundleStatusSchema>;
