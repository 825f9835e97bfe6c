/**
 * Section `admission`: what admission rules cost. On the local API server: a Deployment create that
 * a bound ValidatingAdmissionPolicy judges (the Tenant example's team-limits: a namespace labelled
 * `team`), interleaved with the same create in a namespace its selector excludes (baseline: the
 * policy matched but not evaluated). In process: the kit's check of a spec's CEL rules and list
 * types on every reconcile (the Tenant's), beside the zod parse of the same spec (baseline).
 */
import { performance } from 'node:perf_hooks';
import { AppsV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { teamLimitsPolicy } from '../../examples/tenant/controllers/team-limits/policy.ts';
import { tenantSpecSchema } from '../../examples/tenant/controllers/tenant/api.ts';
import { specRuleViolations } from '../../functions/kit/cel.ts';
import { resourceClient } from '../../functions/kit/client.ts';
import { resources } from '../../functions/kit/resources.ts';
import type { Section } from '../environment.ts';
import { figuresOf, quantiles } from '../report.ts';

const figure = figuresOf('admission');

function deployment(name: string) {
  return {
    metadata: { name },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'web', image: 'nginx', resources: { limits: { memory: '64Mi' } } }] },
      },
    },
  };
}

export const admission: Section = {
  name: 'admission',
  async run(env) {
    const api = await env.apiServer();
    const apps = api.kc.makeApiClient(AppsV1Api);
    const client = resourceClient(api.kc);
    await api.core.createNamespace({
      body: { metadata: { name: 'bench-admission-team', labels: { team: 'a' } } },
    });
    await api.createNs('bench-admission-plain');
    await client.apply(resources.validatingadmissionpolicies, teamLimitsPolicy.policy as KubernetesObject);
    await client.apply(
      resources.validatingadmissionpolicybindings,
      teamLimitsPolicy.binding as KubernetesObject,
    );
    const n = env.tiny ? 20 : 400;
    const judged: number[] = [];
    const excluded: number[] = [];
    const create = async (namespace: string, name: string, into: number[]) => {
      const t0 = performance.now();
      await apps.createNamespacedDeployment({ namespace, body: deployment(name) });
      into.push(performance.now() - t0);
    };
    // Warm-up, then interleaved: both series see the same store size and the same machine load.
    for (let i = 0; i < 10; i++) await create('bench-admission-plain', `warm-${i}`, []);
    for (let i = 0; i < n; i++) {
      await create('bench-admission-team', `d-${i}`, judged);
      await create('bench-admission-plain', `d-${i}`, excluded);
    }
    const run = quantiles(judged);
    const base = quantiles(excluded);
    const baseline = 'the same create in a namespace the policy excludes';

    // The kit's check of the Tenant's rules, as validatePrimary runs it on every reconcile.
    const spec = {
      namespaces: ['a', 'b', 'c'],
      team: 'blue',
      quota: { cpu: '2', memory: '4Gi', pods: 20 },
      containerMemoryMiB: { defaultLimit: 256, max: 512 },
    };
    const calls = env.tiny ? 2_000 : 50_000;
    const per = (f: () => unknown) => {
      for (let i = 0; i < 1_000; i++) f();
      const t0 = performance.now();
      for (let i = 0; i < calls; i++) f();
      return ((performance.now() - t0) * 1000) / calls;
    };
    const rules = per(() => specRuleViolations(tenantSpecSchema, spec));
    const zod = per(() => tenantSpecSchema.safeParse(spec));
    return {
      figures: [
        figure(`Deployment create judged by a policy, p50 (n=${run.n})`, run.p50, 'ms', {
          name: baseline,
          value: base.p50,
        }),
        figure(`Deployment create judged by a policy, p95 (n=${run.n})`, run.p95, 'ms', {
          name: baseline,
          value: base.p95,
        }),
        figure("the Tenant's CEL rules and list type, per reconcile", rules, 'µs', {
          name: 'the zod parse of the same spec',
          value: zod,
        }),
      ],
    };
  },
};
