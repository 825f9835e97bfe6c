/**
 * Section `tracing`: what tracing costs: a converged Foo's delivery (`reconcile` span, its GET and
 * LIST; the function's code path without HTTP) and the relay's event ingestion (an `enqueue` span per
 * published key), each with `LEVELSET_TRACING=off` (the API's no-ops: the baseline; itself beside
 * the reconcile without its `reconcile` span) and then on (the SDK, every span recorded and exported
 * to an OTLP/JSON file: ratio 1, the worst case), in one process, off first. It registers the
 * OpenTelemetry SDK for the rest of the process, so the driver runs it last.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import type { Controller } from '../../functions/contract/controller.ts';
import { controllers as registry } from '../../functions/controllers/index.ts';
import { ATTR } from '../../functions/k8s/tracing.ts';
import { inDeliverySpan, reconcileKey } from '../../functions/reconcile.ts';
import { startTracing } from '../../functions/tracing.ts';
import { KeyPipeline, planInformers } from '../../relay/pipeline.ts';
import type { Section } from '../environment.ts';
import { quantiles } from '../report.ts';
import { quiet } from '../support.ts';

export const tracingCost: Section = {
  name: 'tracing',
  async run({ sizes, log, apiServer }) {
    log('tracing cost');
    const api = await apiServer();
    await api.createNs('bench-tracing');
    await api.createFoo('bench-tracing', 'traced');
    const byName = new Map(registry.map((c) => [c.name, c]));
    const key = { namespace: 'bench-tracing', name: 'traced' };
    const bare = () =>
      reconcileKey(byName, 'foo', key, { kubeConfig: () => api.kc, log: quiet, retriedBy: 'bench' });
    const deliver = () =>
      inDeliverySpan(ROOT_CONTEXT, { [ATTR.controller]: 'foo', [ATTR.key]: 'bench-tracing/traced' }, bare);
    /** The median ms of one delivery (robust to the load of a shared machine, unlike a mean). */
    const msPerReconcile = async (run = deliver) => {
      const each: number[] = [];
      for (let i = 0; i < sizes.tracedReconciles; i++) {
        const t0 = performance.now();
        await run();
        each.push(performance.now() - t0);
      }
      return quantiles(each).p50;
    };
    const foo = byName.get('foo') as Controller;
    const routes = planInformers([foo]).flatMap((p) => p.routes.filter((r) => r.primary));
    const eventsPerS = async () => {
      const pipeline = new KeyPipeline({
        collapseMs: 250,
        publish: async () => 'm',
        primaryKeys: () => [],
        logger: quiet,
      });
      const n = sizes.pipelineEvents / 10;
      const t0 = performance.now();
      for (let i = 0; i < n; i++)
        pipeline.handle(routes, {
          type: 'ADDED',
          object: {
            apiVersion: 'samplecontroller.k8s.io/v1alpha1',
            kind: 'Foo',
            metadata: { namespace: 'ns', name: `f${i % 1000}`, resourceVersion: String(i), generation: 1 },
          },
        });
      await pipeline.flush();
      pipeline.discard();
      return n / ((performance.now() - t0) / 1000);
    };
    await deliver(); // converge, warm up
    await msPerReconcile();
    const withoutSpan = await msPerReconcile(bare);
    const off = { reconcile: await msPerReconcile(), events: await eventsPerS() };
    const dir = mkdtempSync(join(tmpdir(), 'levelset-bench-traces-'));
    const tracing = await startTracing('bench', {
      exporter: 'file',
      file: join(dir, 'bench.jsonl'),
      sampleRatio: 1,
    });
    await deliver();
    const on = { reconcile: await msPerReconcile(), events: await eventsPerS() };
    await tracing.shutdown();
    rmSync(dir, { recursive: true, force: true });
    return {
      figures: [
        {
          section: 'tracing',
          name: `converged foo delivery, tracing off (the API's no-op spans), median of ${sizes.tracedReconciles}`,
          value: off.reconcile,
          unit: 'ms',
          baseline: { name: 'the same reconcile without its reconcile span', value: withoutSpan },
        },
        {
          section: 'tracing',
          name: `converged foo delivery, tracing on (every span exported to a file), median of ${sizes.tracedReconciles}`,
          value: on.reconcile,
          unit: 'ms',
          baseline: { name: 'tracing off', value: off.reconcile },
        },
        {
          section: 'tracing',
          name: `relay events/s ingested (${sizes.pipelineEvents / 10} Foo events), tracing on`,
          value: on.events,
          unit: 'events/s',
          baseline: { name: 'tracing off', value: off.events },
        },
      ],
    };
  },
};
