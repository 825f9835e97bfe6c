/**
 * The Tenant API (`platform.levelset.dev/v1alpha1`, cluster-scoped): the zod schemas of its spec and
 * status, from which `levelset build` generates `crd.yaml`'s openAPIV3Schema. Other controllers may
 * import this module; the rest of the folder is this controller's own.
 */
import { customResource } from 'levelset/kit';
import * as z from 'zod';

/** The primary resource: `tenants.platform.levelset.dev`, cluster-scoped (its keys are names alone). */
export const tenantResource = customResource({
  group: 'platform.levelset.dev',
  version: 'v1alpha1',
  kind: 'Tenant',
  plural: 'tenants',
  scope: 'Cluster',
});

/** `spec`: the namespaces the tenant gets, and the quota each of them has. */
export const tenantSpecSchema = z.object({
  namespaces: z.array(
    z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      .max(63),
  ),
  quota: z.object({ cpu: z.string(), memory: z.string(), pods: z.number().int().min(0) }),
});
export type TenantSpec = z.infer<typeof tenantSpecSchema>;

/** `status`, as the reconcile returns it (the kit adds `observedGeneration` and `conditions`). */
export const tenantStatusSchema = z.object({
  namespaces: z.number().int().optional(),
});
