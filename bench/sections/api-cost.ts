/** Section `api-cost`: requests per no-op reconcile, counted at the client. */

import type { Controller } from '../../core/contract/controller.ts';
import { rejectedWrites } from '../../core/metrics.ts';
import { controllers as registry } from '../../examples/registry.ts';
import { REPLICATE_TO_ANNOTATION } from '../../functions/controllers/secret-replicator/plan.ts';
import { reconcilerForTest } from '../../functions/kit/testing.ts';
import type { ApiServer, Section, SectionEnv } from '../environment.ts';
import type { Figure } from '../report.ts';
import { pool, quiet } from '../support.ts';

/** Each custom-resource controller's object: its spec from the tutorials. */
const SPECS: Record<string, Record<string, unknown>> = {
  foo: { deploymentName: 'cost', replicas: 1 },
  customcluster: { message: 'hi', count: 2 },
  icecream: { deploymentName: 'cost-icecream', replicas: 1 },
};

export const apiCost: Section = {
  name: 'api-cost',
  async run(env) {
    const api = await env.apiServer();
    const rejectedBefore = await rejectedByCode();
    const byName = new Map(registry.map((c) => [c.name, c]));
    /** Requests of the third reconcile of `key` (the first two converge it). */
    const requests = async (name: string, key: { namespace: string; name: string }) => {
      const reconciler = reconcilerForTest(byName.get(name) as Controller, api.kubeconfigPath, {
        log: quiet,
      });
      await reconciler.reconcile(key).catch(() => undefined); // converge
      await reconciler.reconcile(key).catch(() => undefined);
      return (await reconciler.reconcile(key)).requests.length;
    };
    const figures: Figure[] = byName.has('secret-replicator') ? await replicatorCost(env, api, requests) : [];
    // The custom-resource controllers: one converged object each.
    await api.createNs('bench-cost-crs');
    for (const [name, spec] of Object.entries(SPECS)) {
      const primary = byName.get(name)?.primary;
      if (!primary) continue;
      const apiVersion = `${primary.group}/${primary.version}`;
      await api.custom.createNamespacedCustomObject({
        ...primary,
        namespace: 'bench-cost-crs',
        body: { apiVersion, kind: primary.kind, metadata: { name: 'cost' }, spec },
      });
      figures.push({
        section: 'api-cost',
        name: `${name}, no-op reconcile`,
        value: await requests(name, { namespace: 'bench-cost-crs', name: 'cost' }),
        unit: 'requests',
      });
    }
    // The writes the API server refused during this section's reconciles (this process's
    // levelset_rejected_writes_total), per code: wasted work, expected 0 here.
    const rejected = await rejectedByCode();
    for (const code of ['409', '403', '422'])
      figures.push({
        section: 'api-cost',
        name: `writes rejected with ${code}${code === '403' ? ' (namespace terminating)' : ''} during this section's reconciles`,
        value: (rejected.get(code) ?? 0) - (rejectedBefore.get(code) ?? 0),
        unit: 'writes',
      });
    return { figures };
  },
};

/** levelset_rejected_writes_total so far in this process, by code. */
async function rejectedByCode(): Promise<Map<string, number>> {
  const byCode = new Map<string, number>();
  for (const v of (await rejectedWrites.get()).values) {
    const code = String(v.labels.code);
    byCode.set(code, (byCode.get(code) ?? 0) + v.value);
  }
  return byCode;
}

/** The replicator's no-op reconcile at growing namespace counts (its source namespace comes from the environment). */
async function replicatorCost(
  env: SectionEnv,
  api: ApiServer,
  requests: (name: string, key: { namespace: string; name: string }) => Promise<number>,
): Promise<Figure[]> {
  const { sizes } = env;
  process.env.LEVELSET_SOURCE_NAMESPACE = 'bench-source';
  await api.createNs('bench-source');
  let made = 0;
  const perNs: number[] = [];
  for (const n of sizes.namespaces) {
    await pool(
      Array.from({ length: n - made }, (_, i) => `bench-cost-${made + i}`),
      20,
      (ns) => api.createNs(ns),
    );
    made = n;
    await api.core.createNamespacedSecret({
      namespace: 'bench-source',
      body: {
        metadata: { name: `cost-${n}`, annotations: { [REPLICATE_TO_ANNOTATION]: 'bench-cost-.*' } },
        data: { v: 'eA==' },
      },
    });
    perNs.push(await requests('secret-replicator', { namespace: 'bench-source', name: `cost-${n}` }));
  }
  return sizes.namespaces.map((n, i) => ({
    section: 'api-cost',
    name: `secret-replicator, no-op reconcile, ${n} namespaces`,
    value: perNs[i] as number,
    unit: 'requests',
    baseline: { name: `${sizes.namespaces[0]} namespaces`, value: perNs[0] as number },
    target: { text: 'constant', met: perNs[i] === perNs[0] },
  }));
}
