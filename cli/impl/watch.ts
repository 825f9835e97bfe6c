/**
 * `levelset status --watch`: the dashboard's figures for the local stack, refreshed in place, per
 * controller — reconciles per second by outcome, p50/p95 reconcile duration, backlog, dead letters,
 * drift, keys published — the panels terraform/dashboard.json.tftpl draws in the Cloud console.
 *
 * Nothing is recomputed from logs: every figure is read, at each refresh, from the processes' own
 * endpoints that `.levelset/stack.json` names —
 * - the `reconcile` function's `/metrics` (`reconcileMetricsUrl`, core/metrics.ts):
 *   `levelset_reconcile_total` and `levelset_reconcile_duration_seconds` by controller and outcome,
 *   `levelset_drift_corrected_total` by controller;
 * - the relay's `/metrics`: `levelset_relay_keys_published_total` by controller;
 * - the push proxy's `/deliveries` (local/watchdog.ts `DeliveryStatus`): backlog and dead letters
 *   by controller, the oldest unacknowledged key.
 * Rates and quantiles are over the last `window` seconds, from the counters' and histogram buckets'
 * differences between two scrapes (Prometheus's `rate` and `histogram_quantile`, linear within a
 * bucket); a counter that went down (a restarted function) counts from zero again.
 */
import { setTimeout as delay } from 'node:timers/promises';
import * as z from 'zod';
import { CliError, EXIT_USAGE, firstLine } from '../errors.ts';
import { formatDuration, say, table } from '../output.ts';
import type { Target } from '../target.ts';

/** One sample of the Prometheus text format: metric name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;

/** A number of the Prometheus text format: a float, or `+Inf`, `-Inf`, `NaN`. */
export function promNumber(text: string): number {
  if (text === '+Inf' || text === 'Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  return Number(text);
}

/**
 * The samples of a Prometheus text exposition (format 0.0.4, what prom-client writes): comments
 * skipped, label values unescaped (`\\`, `\"`, `\n`), values as numbers (`+Inf`, `NaN` included).
 */
export function parsePrometheusText(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE_LINE.exec(line.trim());
    if (!m?.[1] || m[3] === undefined) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL))
      if (l[1]) labels[l[1]] = (l[2] ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1], labels, value: promNumber(m[3]) });
  }
  return out;
}

/** What one refresh read; counters are cumulative (since each process started). */
export interface Scrape {
  /** Epoch ms. */
  at: number;
  /** `controller` → `outcome` → reconciles. */
  reconciles: Map<string, Map<string, number>>;
  /** `controller` → bucket upper bound (s) → cumulative observations, all outcomes but `malformed`. */
  durationBuckets: Map<string, Map<number, number>>;
  /** `controller` → keys the resync found drifted. */
  drift: Map<string, number>;
  /** `controller` → keys the relay published. */
  published: Map<string, number>;
  deliveries?: Deliveries;
  /** Why a source could not be read. */
  notes: string[];
}

const add = <K>(map: Map<K, number>, key: K, value: number) => map.set(key, (map.get(key) ?? 0) + value);

/** Fills `scrape` from the reconcile function's `/metrics` text. */
export function readReconcileMetrics(scrape: Scrape, text: string): void {
  for (const s of parsePrometheusText(text)) {
    const controller = s.labels.controller;
    if (controller === undefined) continue;
    if (s.name === 'levelset_reconcile_total') {
      const byOutcome = scrape.reconciles.get(controller) ?? new Map<string, number>();
      add(byOutcome, s.labels.outcome ?? '?', s.value);
      scrape.reconciles.set(controller, byOutcome);
    } else if (s.name === 'levelset_reconcile_duration_seconds_bucket' && s.labels.le !== undefined) {
      const buckets = scrape.durationBuckets.get(controller) ?? new Map<number, number>();
      add(buckets, promNumber(s.labels.le), s.value);
      scrape.durationBuckets.set(controller, buckets);
    } else if (s.name === 'levelset_drift_corrected_total') add(scrape.drift, controller, s.value);
  }
}

/** Fills `scrape` from the relay's `/metrics` text. */
export function readRelayMetrics(scrape: Scrape, text: string): void {
  for (const s of parsePrometheusText(text))
    if (s.name === 'levelset_relay_keys_published_total' && s.labels.controller !== undefined)
      add(scrape.published, s.labels.controller, s.value);
}

/** The push proxy's `/deliveries` answer (local/watchdog.ts `DeliveryStatus`), as far as this view reads it. */
const deliveriesSchema = z.looseObject({
  backlog: z.number(),
  backlogByController: z.record(z.string(), z.number()).default({}),
  oldestPublishedAt: z.number().optional(),
  deadLettered: z.number(),
  deadLetteredByController: z.record(z.string(), z.number()).default({}),
});

type Deliveries = z.infer<typeof deliveriesSchema>;

async function fetchText(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  return res.text();
}

/** Reads every source of the local stack once; a source that does not answer becomes a note. */
export async function scrapeLocalStack(target: Target, relayUrl: string | undefined): Promise<Scrape> {
  const scrape: Scrape = {
    at: Date.now(),
    reconciles: new Map(),
    durationBuckets: new Map(),
    drift: new Map(),
    published: new Map(),
    notes: [],
  };
  const stack = target.stack;
  await Promise.all([
    stack?.reconcileMetricsUrl
      ? fetchText(stack.reconcileMetricsUrl).then(
          (text) => readReconcileMetrics(scrape, text),
          (err) => void scrape.notes.push(`reconcile /metrics: ${firstLine(err)}`),
        )
      : scrape.notes.push(
          'the local stack publishes no reconcile metrics (a stack older than this levelset)',
        ),
    relayUrl
      ? fetchText(new URL('/metrics', relayUrl).href).then(
          (text) => readRelayMetrics(scrape, text),
          (err) => void scrape.notes.push(`relay /metrics: ${firstLine(err)}`),
        )
      : scrape.notes.push('relay: not running'),
    stack?.deliveriesUrl
      ? fetchText(stack.deliveriesUrl).then(
          (text) => {
            scrape.deliveries = deliveriesSchema.parse(JSON.parse(text));
          },
          (err) => void scrape.notes.push(`push proxy /deliveries: ${firstLine(err)}`),
        )
      : scrape.notes.push('the local stack publishes no delivery figures'),
  ]);
  return scrape;
}

/**
 * The `q` quantile (0–1) of the observations between two readings of cumulative histogram buckets
 * (upper bound → count, `+Inf` included), interpolated linearly within its bucket as Prometheus's
 * `histogram_quantile` does; `undefined` when nothing was observed in between.
 */
export function quantile(
  q: number,
  now: Map<number, number>,
  then: Map<number, number> = new Map(),
): number | undefined {
  const bounds = [...now.keys()].sort((a, b) => a - b);
  const counts = bounds.map((b) => {
    const d = (now.get(b) ?? 0) - (then.get(b) ?? 0);
    return d < 0 ? (now.get(b) ?? 0) : d; // reset: counted from zero again
  });
  const total = counts.at(-1) ?? 0;
  if (total <= 0) return undefined;
  const rank = q * total;
  for (let i = 0; i < bounds.length; i++) {
    const count = counts[i] ?? 0;
    if (count < rank) continue;
    const upper = bounds[i] ?? 0;
    const lower = i === 0 ? 0 : (bounds[i - 1] ?? 0);
    if (upper === Number.POSITIVE_INFINITY) return lower; // above the last bound: its lower edge
    const below = i === 0 ? 0 : (counts[i - 1] ?? 0);
    return count === below ? upper : lower + ((upper - lower) * (rank - below)) / (count - below);
  }
  return undefined;
}

/** One controller's row of a frame. */
export interface ControllerFigures {
  controller: string;
  /** Outcome → reconciles per second over the window. */
  perSecond: Record<string, number>;
  /** Outcome → reconciles since the function started. */
  total: Record<string, number>;
  /** Reconcile duration quantiles over the window, ms; absent when none finished in it. */
  p50Ms?: number;
  p95Ms?: number;
  backlog: number;
  deadLettered: number;
  drift: number;
  published: number;
}

/** What one refresh shows (`-o json`: one such object per line). */
export interface Frame {
  at: string;
  /** Seconds the rates and quantiles cover (less at first: since the first scrape). */
  windowSeconds: number;
  controllers: ControllerFigures[];
  backlog?: number;
  oldestUnackedSeconds?: number;
  deadLettered?: number;
  notes: string[];
}

const counterDelta = (now: number, then: number | undefined) =>
  then === undefined || now < then ? now : now - then;

/** The frame of `now` against `then` (the scrape at the start of the window; none: since the start). */
export function frameOf(now: Scrape, then: Scrape | undefined): Frame {
  const seconds = then ? (now.at - then.at) / 1000 : 0;
  const names = new Set<string>([
    ...now.reconciles.keys(),
    ...now.drift.keys(),
    ...now.published.keys(),
    ...Object.keys(now.deliveries?.backlogByController ?? {}),
    ...Object.keys(now.deliveries?.deadLetteredByController ?? {}),
  ]);
  const controllers = [...names].sort().map((controller): ControllerFigures => {
    const outcomes = now.reconciles.get(controller) ?? new Map<string, number>();
    const before = then?.reconciles.get(controller);
    const perSecond: Record<string, number> = {};
    const total: Record<string, number> = {};
    for (const [outcome, n] of outcomes) {
      total[outcome] = n;
      perSecond[outcome] = seconds > 0 ? counterDelta(n, before?.get(outcome)) / seconds : 0;
    }
    const buckets = now.durationBuckets.get(controller) ?? new Map<number, number>();
    const previous = then?.durationBuckets.get(controller);
    const ms = (q: number) => {
      const s = quantile(q, buckets, previous);
      return s === undefined ? undefined : Math.round(s * 1000);
    };
    const p50Ms = ms(0.5);
    const p95Ms = ms(0.95);
    return {
      controller,
      perSecond,
      total,
      ...(p50Ms !== undefined ? { p50Ms } : {}),
      ...(p95Ms !== undefined ? { p95Ms } : {}),
      backlog: now.deliveries?.backlogByController[controller] ?? 0,
      deadLettered: now.deliveries?.deadLetteredByController[controller] ?? 0,
      drift: now.drift.get(controller) ?? 0,
      published: now.published.get(controller) ?? 0,
    };
  });
  const d = now.deliveries;
  return {
    at: new Date(now.at).toISOString(),
    windowSeconds: Math.round(seconds * 10) / 10,
    controllers,
    ...(d ? { backlog: d.backlog, deadLettered: d.deadLettered } : {}),
    ...(d?.oldestPublishedAt !== undefined
      ? { oldestUnackedSeconds: Math.max(0, (now.at - d.oldestPublishedAt) / 1000) }
      : {}),
    notes: now.notes,
  };
}

/** The frame as text: one row per controller, then the stack's totals. */
export function renderFrame(frame: Frame, target: string): string {
  /** `success 2.00/s, error 0.20/s` over the outcomes seen, `0/s` when none. */
  const rates = (c: ControllerFigures) =>
    Object.entries(c.perSecond)
      .filter(([, n]) => n > 0)
      .map(([o, n]) => `${o} ${n.toFixed(2)}/s`)
      .join(', ') || '0/s';
  const totals = (c: ControllerFigures) =>
    Object.entries(c.total)
      .map(([o, n]) => `${o} ${n}`)
      .join(', ') || '0';
  const rows = frame.controllers.map((c) => [
    c.controller,
    rates(c),
    totals(c),
    c.p50Ms === undefined ? '-' : c.p50Ms,
    c.p95Ms === undefined ? '-' : c.p95Ms,
    c.backlog,
    c.deadLettered,
    c.drift,
    c.published,
  ]);
  const oldest = frame.oldestUnackedSeconds;
  return [
    `${target} at ${frame.at}; rates and durations over the last ${frame.windowSeconds} s (Ctrl-C stops)`,
    table(
      [
        'controller',
        'reconciles by outcome',
        'since start',
        'p50 ms',
        'p95 ms',
        'backlog',
        'dead letters',
        'drift',
        'published',
      ],
      rows,
    ),
    `backlog ${frame.backlog ?? '-'} keys; oldest unacknowledged ${
      oldest === undefined ? '-' : formatDuration(oldest * 1000)
    }; ${frame.deadLettered ?? '-'} dead letters since the stack started`,
    ...frame.notes.map((n) => `note: ${n}`),
  ].join('\n');
}

export interface WatchOptions {
  /** Seconds between refreshes. */
  interval: number;
  /** Seconds the rates and quantiles cover. */
  window: number;
  output: string;
  relayUrl: string | undefined;
  /** Stops the loop (SIGINT, SIGTERM). */
  signal: AbortSignal;
}

/**
 * Refreshes the figures of the local stack every `interval` s until `signal` aborts: in place on a
 * terminal (the screen is cleared), one frame after another on a pipe, one JSON object per line
 * with `-o json`.
 * @throws {CliError} (usage) for a Google Cloud target: its view is the Cloud console's dashboard.
 */
export async function watchStatus(target: Target, options: WatchOptions): Promise<void> {
  if (target.kind !== 'local')
    throw new CliError(
      'status --watch reads the local stack; on Google Cloud the same panels are the dashboard Terraform creates (terraform output console_links: dashboard)',
      EXIT_USAGE,
    );
  const history: Scrape[] = [];
  const inPlace = options.output !== 'json' && process.stdout.isTTY;
  while (!options.signal.aborted) {
    const now = await scrapeLocalStack(target, options.relayUrl);
    history.push(now);
    // The oldest scrape still inside the window is where the rates start.
    while (history.length > 2 && (history[1]?.at ?? 0) <= now.at - options.window * 1000) history.shift();
    const then = history.length > 1 ? history[0] : undefined;
    const frame = frameOf(now, then);
    if (options.output === 'json') say(JSON.stringify(frame));
    else {
      if (inPlace) process.stdout.write('\x1b[H\x1b[2J');
      say(renderFrame(frame, target.describe));
      if (!inPlace) say();
    }
    await delay(options.interval * 1000, undefined, { signal: options.signal }).catch(() => undefined);
  }
}
