/**
 * The Icecream API (`controller.nicoleh.io/v1alpha1`): the zod schemas of its spec and status, from which
 * `levelset build` generates `crd.yaml`'s openAPIV3Schema (so the API server refuses an
 * invalid spec with 422; the rules a CRD cannot express are checked by the reconcile, and listed in
 * `crd.yaml`). Other controllers may import this module; the rest of the folder is this controller's own.
 */

import { customResource } from 'levelset/kit';
import * as z from 'zod';

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

/** `status`, as the reconcile returns it (the kit adds `observedGeneration` and `conditions`). */
export const icecreamStatusSchema = z.object({
  availableReplicas: z.number().int().optional(),
  nodeNames: z.array(z.string()).optional(),
});
export type IcecreamStatus = z.infer<typeof icecreamStatusSchema>;
