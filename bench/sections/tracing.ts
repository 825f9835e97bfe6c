/**
 * Section `tracing`: what tracing costs a converged Foo's delivery and the relay's event ingestion,
 * off then on, in one process. It registers the OpenTelemetry SDK for the rest of the process, so
 * the driver runs it last.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { ATTR } from '../../core/k8s/tracing.ts';
import { startTracing } from '../../core/tracing.ts';
import { DEFAULT_TRACE_SAMPLE_RATIO } from '../../core/tracing-config.ts';
import { controllers as registry } from '../../examples/registry.ts';
import { inDeliverySpan, reconcileKey } from '../../functions/runtime/reconcile.ts';
import { repoRoot } from '../../local/service.ts';
import type { Section } from '../environment.ts';
import { comparing, figuresOf, quantiles } from '../report.ts';
import { jsonChild, quiet } from '../support.ts';

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
    // As many events as the relay section's, 20 per key (each key published twice: its leading
    // edge, then its trailing edge with the rest collapsed).
    const events = sizes.pipelineEvents;
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
    // Ingestion: off, on at the default sample ratio, on at ratio 1, each run in a process of its own
    // (bench/ingest-child.ts: one setting per process life, as a relay has), interleaved round by
    // round (the load of a shared machine drifts), each figure the median of its rounds.
    const child = join(repoRoot, 'bench', 'ingest-child.ts');
    const ingest = async (ratio: string, file: string) =>
      (
        await jsonChild<{ eventsPerCpuS: number }>([
          child,
          '--events',
          String(events),
          '--ratio',
          ratio,
          '--file',
          join(dir, file),
        ])
      ).eventsPerCpuS;
    const rounds = { off: [] as number[], sampled: [] as number[], all: [] as number[] };
    for (let r = 0; r < INGEST_ROUNDS; r++) {
      rounds.off.push(await ingest('off', 'off.jsonl'));
      rounds.sampled.push(await ingest(String(DEFAULT_TRACE_SAMPLE_RATIO), 'sampled.jsonl'));
      rounds.all.push(await ingest('1', 'all.jsonl'));
    }
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
