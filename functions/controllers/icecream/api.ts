/**
 * The Icecream API (`controller.nicoleh.io/v1alpha1`), as `crd.yaml` serves it, and the zod schema of its
 * spec (defence in depth: the CRD's schema already rejects most invalid specs with 422).
 */
import * as z from 'zod';
import { customResource } from '../../kit/index.ts';

/** The primary resource: `icecreams.controller.nicoleh.io`, namespaced. */
export const icecreamResource = customResource({
  group: 'controller.nicoleh.io',
  version: 'v1alpha1',
  kind: 'Icecream',
  plural: 'icecreams',
});

/** `spec`, as the CRD allows it. */
export const icecreamSpecSchema = z.object({
  deploymentName: z.string(),
  replicas: z.number().int().optional(),
});
export type IcecreamSpec = z.infer<typeof icecreamSpecSchema>;

/** `status`, as the reconcile returns it. */
export const icecreamStatusSchema = z.object({
  availableReplicas: z.number().int().optional(),
  nodeNames: z.array(z.string()).optional(),
});
