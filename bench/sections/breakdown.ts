/**
 * Section `breakdown`: where the serverless time and reconciles go, from the traces of a local stack
 * (every span exported to files, what `levelset trace` reads): isolated Secret changes split into
 * segments, each Foo reconcile's trigger, then the push path alone (bench/sections/breakdown-push.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readSpans, type TracedSpan } from '../../cli/impl/trace.ts';
import { ATTR, SPAN } from '../../functions/k8s/tracing.ts';
import { startSimulatedNode } from '../../local/simulated-node.ts';
import type { ApiServer, Section, SectionEnv } from '../environment.ts';
import { type Figure, quantiles } from '../report.ts';
import { quiet, sleep, watchObjects } from '../support.ts';
import { pushFigures } from './breakdown-push.ts';
import { foosReady, replicatedSecrets, type TimedChange } from './changes.ts';

/** A traced Secret change: its patched resourceVersion names its `enqueue` span. */
type TracedChange = TimedChange & { rv: string };

/** Targets of issue 34 for the segments other engineers work on (p50, ms). */
const SEGMENT_TARGETS: Record<string, number> = {
  'relay saw → Pub/Sub accepted the key (publish)': 2,
  'reconcile: reads (start → first write sent)': 5,
};

export const breakdown: Section = {
  name: 'breakdown',
  async run(env) {
    const api = await env.apiServer();
    const stateDir = mkdtempSync(join(tmpdir(), 'levelset-bench-breakdown-'));
    try {
      const changes = await tracedWorkload(env, api, stateDir);
      const spans = readSpans(join(stateDir, 'traces'));
      const notes: string[] = [];
      const figures = [
        ...secretSegments(spans, changes, notes),
        ...(await pushFigures(env)),
        ...fooTriggers(env, spans),
      ];
      return { figures, notes };
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  },
};

const NS = 'bench-breakdown';
const SOURCE = 'bench-source';

/** Isolated Secret changes, then Foos created at once, through a serverless stack tracing to `stateDir`. */
async function tracedWorkload(env: SectionEnv, api: ApiServer, stateDir: string): Promise<TracedChange[]> {
  const { sizes } = env;
  const simulated = await startSimulatedNode(api.kc, quiet);
  const targets = Array.from({ length: sizes.targets }, (_, i) => `bench-target-${i}`);
  for (const name of [SOURCE, ...targets, NS]) await api.createNs(name);
  const secrets = watchObjects(api.kc, '/api/v1/secrets');
  const foos = watchObjects(api.kc, `/apis/samplecontroller.k8s.io/v1alpha1/namespaces/${NS}/foos`);
  await Promise.all([secrets.ready, foos.ready]);
  const changes: TracedChange[] = [];
  const stack = await env.startLocalStack({
    mode: 'serverless',
    kubeconfigPath: api.kubeconfigPath,
    env: { LEVELSET_SOURCE_NAMESPACE: SOURCE, LOG_LEVEL: 'warn' },
    stateDir,
    resyncOnDemand: true, // never resyncs: no idle resync function beside what is measured
  });
  try {
    const names = Array.from({ length: sizes.rotation }, (_, k) => `traced-${k}`);
    const change = await replicatedSecrets(api, secrets, SOURCE, targets, names);
    for (let i = 1; i <= sizes.tracedChanges; i++) {
      const { at, rv = '', ...c } = await change(i);
      if (at !== undefined) changes.push({ ...c, at, rv });
    }
    const fooNames = Array.from({ length: sizes.tracedFoos }, (_, i) => `bd-${i}`);
    await foosReady(api, foos, NS, fooNames, 50);
    await sleep(1000); // the last reconciles end their spans
  } finally {
    await stack.stop();
    await simulated.stop();
    secrets.stop();
    foos.stop();
  }
  return changes;
}

const byTraceOf = (spans: readonly TracedSpan[]) => {
  const byTrace = new Map<string, TracedSpan[]>();
  for (const s of spans) {
    const list = byTrace.get(s.traceId) ?? [];
    list.push(s);
    byTrace.set(s.traceId, list);
  }
  return byTrace;
};
const end = (s: TracedSpan) => s.startMs + s.durationMs;
const isWrite = (s: TracedSpan) =>
  ['PUT', 'POST', 'PATCH', 'DELETE'].includes(String(s.attributes['http.request.method'] ?? ''));

/** Each Secret change's trace, from the enqueue of the patched resourceVersion, split into segments. */
function secretSegments(
  spans: readonly TracedSpan[],
  changes: readonly TracedChange[],
  notes: string[],
): Figure[] {
  const byTrace = byTraceOf(spans);
  const segments: Record<string, number[]> = {
    'API write → relay saw the watch event': [],
    'relay saw → Pub/Sub accepted the key (publish)': [],
    'published → the function received the push (emulator push loop, local push proxy, functions-framework)':
      [],
    'reconcile: reads (start → first write sent)': [],
    'reconcile: writes (first write sent → last write sent)': [],
    "last write sent → the bench's watch saw every copy (API server, watch)": [],
    'reconcile span, whole (reads, writes, Event, 204)': [],
  };
  const totals: number[] = [];
  for (const c of changes) {
    const enqueue = spans.find(
      (s) =>
        s.name === SPAN.enqueue &&
        s.attributes[ATTR.controller] === 'secret-replicator' &&
        s.attributes[ATTR.resourceVersion] === c.rv,
    );
    if (!enqueue) continue;
    const trace = byTrace.get(enqueue.traceId) ?? [];
    const publish = trace.find((s) => s.name.endsWith(' create') && s.service === enqueue.service);
    const reconcile = trace.find((s) => s.name === SPAN.reconcile);
    if (!publish || !reconcile) continue;
    const writes = trace.filter(
      (s) =>
        isWrite(s) &&
        s.startMs >= reconcile.startMs &&
        s.startMs <= end(reconcile) &&
        !String(s.attributes['url.path'] ?? '').endsWith('/events'),
    );
    if (!writes.length) continue;
    const firstWrite = Math.min(...writes.map((s) => s.startMs));
    const lastWrite = Math.max(...writes.map((s) => s.startMs));
    const v = [
      enqueue.startMs - c.t0,
      end(publish) - enqueue.startMs,
      reconcile.startMs - end(publish),
      firstWrite - reconcile.startMs,
      lastWrite - firstWrite,
      c.at - lastWrite,
      reconcile.durationMs,
    ];
    Object.values(segments).forEach((list, i) => void list.push(v[i] as number));
    totals.push(c.at - c.t0);
  }
  const total = quantiles(totals).p50;
  // A change that collapsed into a waiting publish (its object changed again inside the window, as
  // at tiny sizes) has no enqueue span of its own: left out.
  if (totals.length < changes.length)
    notes.push(
      `breakdown: ${changes.length - totals.length} of ${changes.length} Secret changes had no trace of their own (collapsed into a waiting publish) and are left out`,
    );
  const figures: Figure[] = [];
  for (const [name, values] of Object.entries(segments)) {
    if (values.length === 0) continue;
    const p50 = quantiles(values).p50;
    const target = SEGMENT_TARGETS[name];
    figures.push({
      section: 'breakdown',
      name: `Secret change, serverless: ${name}, median (n=${values.length})`,
      value: p50,
      unit: 'ms',
      baseline: { name: 'the traced end-to-end median', value: total },
      ...(target !== undefined ? { target: { text: `≤ ${target} ms`, met: p50 <= target } } : {}),
    });
  }
  return figures;
}

/** Foo: each reconcile's trigger, per Foo created at once. */
function fooTriggers(env: SectionEnv, spans: readonly TracedSpan[]): Figure[] {
  const { sizes } = env;
  const byTrace = byTraceOf(spans);
  const triggers = new Map<string, number>();
  let reconciles = 0;
  for (const r of spans) {
    if (r.name !== SPAN.reconcile || r.attributes[ATTR.controller] !== 'foo') continue;
    if (!String(r.attributes[ATTR.key] ?? '').startsWith(`${NS}/`)) continue;
    reconciles++;
    const trace = byTrace.get(r.traceId) ?? [];
    const enqueue = trace.find((s) => s.name === SPAN.enqueue);
    const publish = trace.find((s) => s.name.endsWith(' create') && s.service === enqueue?.service);
    let label = `no enqueue span (${r.attributes[ATTR.reason] ?? 'unknown reason'})`;
    if (enqueue) {
      const a = enqueue.attributes;
      // The relay's own word (levelset.collapse.edge); without it, a key that waited was trailing.
      const waited = publish && publish.startMs - enqueue.startMs > sizes.collapseMs / 2;
      const edge = `${a[ATTR.edge] ?? (waited ? 'trailing' : 'leading')} edge`;
      const collapsed = Number(a[ATTR.collapsed] ?? 0);
      label =
        a[ATTR.cause] === 'watch'
          ? `${a[ATTR.eventType]} ${a[ATTR.resource]}, ${edge}${collapsed ? ' (+ collapsed events)' : ''}`
          : `${a[ATTR.cause]}`;
    }
    triggers.set(label, (triggers.get(label) ?? 0) + 1);
  }
  return [...triggers]
    .sort((a, b) => b[1] - a[1])
    .map(([label, count]) => ({
      section: 'breakdown',
      name: `Foo reconciles triggered by ${label}, per Foo (${sizes.tracedFoos} Foos created at once)`,
      value: count / sizes.tracedFoos,
      unit: 'reconciles',
      baseline: { name: 'every Foo reconcile, per Foo', value: reconciles / sizes.tracedFoos },
    }));
}
