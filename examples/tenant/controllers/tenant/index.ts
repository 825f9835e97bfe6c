/**
 * The Tenant controller: a platform team's tenant, a cluster-scoped object that keeps, for each
 * namespace it lists, the Namespace, a ResourceQuota and a default-deny NetworkPolicy in it. A
 * Namespace that exists already without a controller is adopted; one the tenant no longer lists is
 * let go (orphaned), not deleted, with what is in it; its quota and policy are pruned. With `team`,
 * its namespaces are labelled `team: <team>`; with `containerMemoryMiB`, each gets a LimitRange.
 */
import { defineController, resources } from 'levelset/kit';
import { tenantResource, tenantSpecSchema, tenantStatusSchema } from './api.ts';

export const tenantController = defineController({
  name: 'tenant',
  primary: tenantResource,
  spec: tenantSpecSchema,
  status: tenantStatusSchema,
  owns: [
    { resource: resources.namespaces, adopt: true, prune: 'orphan' },
    resources.resourcequotas,
    resources.networkpolicies,
    resources.limitranges,
  ],
  reconcile({ object, spec }) {
    const tenant = object.metadata.name;
    const labels = { tenant, ...(spec.team ? { team: spec.team } : {}) };
    const memory = spec.containerMemoryMiB;
    return {
      children: spec.namespaces.flatMap((namespace) => [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels } },
        {
          apiVersion: 'v1',
          kind: 'ResourceQuota',
          metadata: { name: 'tenant', namespace },
          spec: { hard: { cpu: spec.quota.cpu, memory: spec.quota.memory, pods: String(spec.quota.pods) } },
        },
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'NetworkPolicy',
          metadata: { name: 'default-deny-ingress', namespace },
          spec: { podSelector: {}, policyTypes: ['Ingress'] },
        },
        ...(memory
          ? [
              {
                apiVersion: 'v1',
                kind: 'LimitRange',
                metadata: { name: 'tenant', namespace },
                spec: {
                  limits: [
                    {
                      type: 'Container',
                      default: { memory: `${memory.defaultLimit}Mi` },
                      max: { memory: `${memory.max}Mi` },
                    },
                  ],
                },
              },
            ]
          : []),
      ]),
      status: { namespaces: spec.namespaces.length },
    };
  },
});
