/**
 * The Tenant API (`platform.levelset.dev/v1alpha1`, cluster-scoped): the zod schemas of its spec and
 * status, from which `levelset build` generates `crd.yaml`'s openAPIV3Schema, with its admission
 * rules: `namespaces` is a set (`x-kubernetes-list-type: set`: a namespace listed twice is refused),
 * `team` may not change once set, a LimitRange's default may not exceed its max (CEL rules,
 * `x-kubernetes-validations`). The API server refuses a write breaking one with 422 and the rule's
 * message; the reconcile checks them again, so a Tenant stored before a rule existed is
 * `Ready=False/InvalidSpec` with the same message. Other controllers may import this module; the rest
 * of the folder is this controller's own.
 */
import { celRule, customResource, listType } from 'levelset/kit';
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
  /** The tenant's namespaces, each once. */
  namespaces: listType(
    z.array(
      z
        .string()
        .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
        .max(63),
    ),
    'set',
  ),
  /** The team owning the tenant, the `team` label of its namespaces: fixed once set. */
  team: celRule(
    z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      .max(63),
    { rule: 'self == oldSelf', message: 'team is immutable' },
  ).optional(),
  quota: z.object({ cpu: z.string(), memory: z.string(), pods: z.number().int().min(0) }),
  /** Each namespace's LimitRange for containers' memory, in MiB: the limit one gets by default, the most one may set. */
  containerMemoryMiB: celRule(
    z.object({ defaultLimit: z.number().int().min(1), max: z.number().int().min(1) }),
    { rule: 'self.defaultLimit <= self.max', message: 'defaultLimit must not exceed max' },
  ).optional(),
});
export type TenantSpec = z.infer<typeof tenantSpecSchema>;

/** `status`, as the reconcile returns it (the kit adds `observedGeneration` and `conditions`). */
export const tenantStatusSchema = z.object({
  namespaces: z.number().int().optional(),
});
