/**
 * Section `tracing`: what tracing costs a converged Foo's delivery and the relay's event ingestion,
 * off then on, in one process. It registers the OpenTelemetry SDK for the rest of the process, so
 * the driver runs it last.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { context, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { Controller } from '../../core/contract/controller.ts';
import { ATTR } from '../../core/k8s/tracing.ts';
import { startTracing } from '../../core/tracing.ts';
import { DEFAULT_TRACE_SAMPLE_RATIO } from '../../core/tracing-config.ts';
import { tracerProviderOf } from '../../core/tracing-sdk.ts';
import { controllers as registry } from '../../examples/registry.ts';
import { inDeliverySpan, reconcileKey } from '../../functions/runtime/reconcile.ts';
import { KeyPipeline, planInformers } from '../../relay/pipeline.ts';
import type { Section } from '../environment.ts';
import { comparing, figuresOf, quantiles } from '../report.ts';
import { quiet } from '../support.ts';

/**
 * A full garbage collection, so that each ingestion run starts on a settled heap and does not pay
 * for the garbage of the run before it (a run with every span recorded leaves plenty). V8's `gc`,
 * exposed for this process at run time.
 */
const collectGarbage = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

/** Rounds of the ingestion figures (off, sampled, every span: one run each per round). */
const INGEST_ROUNDS = 5;

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
    // As many events as the relay section's, 20 per key (each key published twice: its leading
    // edge, then its trailing edge with the rest collapsed).
    const events = sizes.pipelineEvents;
    const keys = events / 20;
    /**
     * Events per CPU-second (this process's user + system time, every thread: the span exporter's
     * and the garbage collector's work included) through a fresh pipeline, until every key is
     * published and `exported` (its spans) resolved. CPU time, not wall time: on a shared machine the
     * wall time of a 20 000-event run varies by 2× with the other processes' load.
     */
    const eventsPerS = async (exported?: () => Promise<void>) => {
      const pipeline = new KeyPipeline({
        collapseMs: 250,
        publish: async () => 'm',
        primaryKeys: () => [],
        logger: quiet,
      });
      const n = events;
      collectGarbage();
      const t0 = process.cpuUsage();
      for (let i = 0; i < n; i++)
        pipeline.handle(routes, {
          type: 'ADDED',
          object: {
            apiVersion: 'samplecontroller.k8s.io/v1alpha1',
            kind: 'Foo',
            metadata: { namespace: 'ns', name: `f${i % keys}`, resourceVersion: String(i), generation: 1 },
          },
        });
      await pipeline.flush();
      await exported?.();
      pipeline.discard();
      const cpu = process.cpuUsage(t0);
      return n / ((cpu.user + cpu.system) / 1e6);
    };
    await deliver(); // converge, warm up
    await msPerReconcile();
    const withoutSpan = await msPerReconcile(bare);
    const offReconcile = await msPerReconcile();
    const dir = mkdtempSync(join(tmpdir(), 'levelset-bench-traces-'));
    const tracing = await startTracing('bench', {
      exporter: 'file',
      file: join(dir, 'bench.jsonl'),
      sampleRatio: 1,
    });
    await deliver();
    const onReconcile = await msPerReconcile();
    await tracing.shutdown();
    // Ingestion: off, on at the default sample ratio, on at ratio 1, interleaved round by round (the
    // load of a shared machine drifts), each figure the median of its rounds. A provider is swapped
    // in by registering it and out by disabling the API's globals (the tracer, the context manager,
    // the propagator): what a process with LEVELSET_TRACING=off runs.
    const providers = {
      sampled: await tracerProviderOf('bench', {
        exporter: 'file',
        file: join(dir, 'sampled.jsonl'),
        sampleRatio: DEFAULT_TRACE_SAMPLE_RATIO,
      }),
      all: await tracerProviderOf('bench', {
        exporter: 'file',
        file: join(dir, 'all.jsonl'),
        sampleRatio: 1,
      }),
    };
    const off = () => {
      trace.disable();
      context.disable();
      propagation.disable();
    };
    off();
    for (let i = 0; i < 2; i++) await eventsPerS(); // warm up
    const rounds = { off: [] as number[], sampled: [] as number[], all: [] as number[] };
    for (let r = 0; r < INGEST_ROUNDS; r++) {
      rounds.off.push(await eventsPerS());
      for (const on of ['sampled', 'all'] as const) {
        providers[on].register();
        rounds[on].push(await eventsPerS(() => providers[on].forceFlush()));
        off();
      }
    }
    await Promise.all(Object.values(providers).map((p) => p.shutdown()));
    rmSync(dir, { recursive: true, force: true });
    const median = (xs: number[]) => quantiles(xs).p50;
    /**
     * The spread of one setting's ratio to off, each round on against the off run just before it:
     * `min–max×` (the load of a shared machine moves single rounds; the figure is the medians' ratio).
     */
    const roundRatios = (on: number[]) => {
      const ratios = on.map((x, i) => x / (rounds.off[i] ?? Number.NaN));
      return `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`;
    };
    const offRun = { reconcile: offReconcile, events: median(rounds.off) };
    const onRun = { reconcile: onReconcile, events: median(rounds.all) };
    const sampledEvents = median(rounds.sampled);
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
        figuresOf('tracing')(
          `relay events/s ingested (${events} Foo events, median of ${INGEST_ROUNDS} rounds), tracing on at the default sample ratio (${DEFAULT_TRACE_SAMPLE_RATIO})`,
          sampledEvents,
          'events/s',
          { name: `tracing off; round by round ${roundRatios(rounds.sampled)}`, value: offRun.events },
          { text: '≥ 0.8×', met: sampledEvents >= 0.8 * offRun.events },
        ),
        figuresOf('tracing')(
          `relay events/s ingested (${events} Foo events, median of ${INGEST_ROUNDS} rounds), tracing on at ratio 1 (every enqueue span exported)`,
          onRun.events,
          'events/s',
          { name: `tracing off; round by round ${roundRatios(rounds.all)}`, value: offRun.events },
        ),
      ],
    };
  },
};
