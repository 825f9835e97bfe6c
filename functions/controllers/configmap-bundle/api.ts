/**
 * The ConfigMapBundle API (`examples.levelset.dev/v1alpha1`), as `crd.yaml` serves it, and the zod schema of its
 * spec (defence in depth: the CRD's schema already rejects most invalid specs with 422).
 */
import * as z from 'zod';
import { customResource } from '../../kit/index.ts';

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

/** `status`, as the reconcile returns it. */
export const configmapBundleStatusSchema = z.object({
  sourcesFound: z.number().int().optional(),
  missing: z.array(z.string()).optional(),
});
