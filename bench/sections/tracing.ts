/**
 * Section `tracing`: what tracing costs a converged Foo's delivery and the relay's event ingestion,
 * off then on, in one process. It registers the OpenTelemetry SDK for the rest of the process, so
 * the driver runs it last.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import type { Controller } from '../../core/contract/controller.ts';
import { ATTR } from '../../core/k8s/tracing.ts';
import { startTracing } from '../../core/tracing.ts';
import { controllers as registry } from '../../examples/registry.ts';
import { inDeliverySpan, reconcileKey } from '../../functions/runtime/reconcile.ts';
import { KeyPipeline, planInformers } from '../../relay/pipeline.ts';
import type { Section } from '../environment.ts';
import { comparing, figuresOf, quantiles } from '../report.ts';
import { quiet } from '../support.ts';

export const tracingCost: Section = {
  name: 'tracing',
  async run({ sizes, apiServer }) {
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
    const offRun = { reconcile: await msPerReconcile(), events: await eventsPerS() };
    const dir = mkdtempSync(join(tmpdir(), 'levelset-bench-traces-'));
    const tracing = await startTracing('bench', {
      exporter: 'file',
      file: join(dir, 'bench.jsonl'),
      sampleRatio: 1,
    });
    await deliver();
    const onRun = { reconcile: await msPerReconcile(), events: await eventsPerS() };
    await tracing.shutdown();
    rmSync(dir, { recursive: true, force: true });
    const n = sizes.tracedReconciles;
    const figure = comparing('tracing', onRun, offRun, 'tracing off');
    return {
      figures: [
        figuresOf('tracing')(
          `converged foo delivery, tracing off (the API's no-op spans), median of ${n}`,
          offRun.reconcile,
          'ms',
          { name: 'the same reconcile without its reconcile span', value: withoutSpan },
        ),
        figure(
          `converged foo delivery, tracing on (every span exported to a file), median of ${n}`,
          'ms',
          (r) => r.reconcile,
        ),
        figure(
          `relay events/s ingested (${sizes.pipelineEvents / 10} Foo events), tracing on`,
          'events/s',
          (r) => r.events,
        ),
      ],
    };
  },
};
