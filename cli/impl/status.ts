/**
 * `levelset status`: is Levelset healthy? The relay (`/readyz`, informers synced, informer
 * restarts), the reconcile subscription's backlog and oldest unacknowledged message age, the last
 * delivery (local stack), and the number of dead letters. Exit code 1 when the relay is not ready or keys are dead-lettered.
 *
 * Where each figure comes from: the relay from its HTTP endpoints (the local stack's relay, or
 * `--relay-url` e.g. through `kubectl port-forward`); backlog and age from Cloud Monitoring
 * (`pubsub.googleapis.com/subscription/num_undelivered_messages` and `oldest_unacked_message_age`;
 * the Pub/Sub API has no such call and the emulator no metrics, so locally they come from the
 * stack's delivery watchdog, local/watchdog.ts, with the last delivery); dead letters by pulling the
 * dead-letter subscription without acknowledging (emulator and Google Cloud alike); drift the
 * resync corrected (functions/runtime/drift.ts) from the drift lines: counted in the stack's reconcile log
 * locally, from Terraform's log-based metric `levelset/drift_corrected` on Google Cloud.
 */
import { readFileSync } from 'node:fs';
import { GoogleAuth } from 'google-auth-library';
import { LABELS } from '../../core/log.ts';
import type { DeliveryStatus } from '../../local/watchdog.ts';
import { CliError, EXIT_USAGE, firstLine } from '../errors.ts';
import { formatDuration, say } from '../output.ts';
import { createSubscriber } from '../pubsub.ts';
import { resolveTarget, resourceId, type Target } from '../target.ts';

/** What the relay's endpoints say; `error` when it did not answer. */
export interface RelayStatus {
  url: string;
  ready: boolean;
  readyz: string;
  /** Informer id → synced. */
  informers: Record<string, boolean>;
  /** Informer restarts (list+watch restarted after an error), summed. */
  restarts: number;
  published: number;
  error?: string;
}

/** Sums by first label value the samples of one metric in Prometheus text format. */
export function metricSamples(text: string, metric: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(
    new RegExp(`^${metric}(?:\\{[a-z_]+="([^"]*)"[^}]*\\})? ([0-9.eE+-]+)$`, 'gm'),
  )) {
    const label = m[1] ?? '';
    out.set(label, (out.get(label) ?? 0) + Number(m[2]));
  }
  return out;
}

async function relayStatus(url: string): Promise<RelayStatus> {
  const status: RelayStatus = { url, ready: false, readyz: '', informers: {}, restarts: 0, published: 0 };
  try {
    const readyz = await fetch(new URL('/readyz', url), { signal: AbortSignal.timeout(5000) });
    status.ready = readyz.ok;
    status.readyz = (await readyz.text()).trim();
    const text = await (await fetch(new URL('/metrics', url), { signal: AbortSignal.timeout(5000) })).text();
    for (const [id, v] of metricSamples(text, 'levelset_relay_informer_synced'))
      status.informers[id] = v === 1;
    for (const v of metricSamples(text, 'levelset_relay_informer_restarts_total').values())
      status.restarts += v;
    for (const v of metricSamples(text, 'levelset_relay_keys_published_total').values())
      status.published += v;
  } catch (err) {
    status.error = `not answering: ${firstLine(err)}`;
  }
  return status;
}

/** Drift the resync corrected (functions/runtime/drift.ts), by controller. */
export interface Drift {
  byController: Record<string, number>;
  /** Over what: `since the stack started`, `in the last 24 h`. */
  window: string;
  note?: string;
}

/**
 * Counts the drift lines (`drift: true`, functions/runtime/drift.ts) by controller in a reconcile log of
 * JSON lines: what Terraform's log-based metric `drift_corrected` counts in Cloud Logging.
 */
export function countDriftLines(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.includes('"drift":true')) continue;
    try {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (parsed.drift !== true) continue;
      const controller = (parsed[LABELS] as { controller?: string } | undefined)?.controller ?? '?';
      out[controller] = (out[controller] ?? 0) + 1;
    } catch {
      // a line cut by a write in progress
    }
  }
  return out;
}

async function drift(target: Target): Promise<Drift> {
  if (target.kind === 'local') {
    const file = target.stack?.logs.reconcile;
    if (!file) return { byController: {}, window: 'since the stack started', note: 'no reconcile log' };
    try {
      return { byController: countDriftLines(readFileSync(file, 'utf8')), window: 'since the stack started' };
    } catch (err) {
      return { byController: {}, window: 'since the stack started', note: firstLine(err) };
    }
  }
  const window = 'in the last 24 h';
  try {
    // terraform/monitoring.tf: the log-based metric `<name>/drift_corrected` (name default `levelset`).
    const auth = new GoogleAuth({ scopes: ['https://www.googleapis.com/auth/monitoring.read'] });
    const end = new Date();
    const params = new URLSearchParams({
      filter: 'metric.type="logging.googleapis.com/user/levelset/drift_corrected"',
      'interval.startTime': new Date(end.getTime() - 86_400_000).toISOString(),
      'interval.endTime': end.toISOString(),
      'aggregation.alignmentPeriod': '86400s',
      'aggregation.perSeriesAligner': 'ALIGN_SUM',
      'aggregation.crossSeriesReducer': 'REDUCE_SUM',
      'aggregation.groupByFields': 'metric.label.controller',
    });
    const res = await auth.request<{
      timeSeries?: {
        metric?: { labels?: { controller?: string } };
        points?: { value: { int64Value?: string } }[];
      }[];
    }>({ url: `https://monitoring.googleapis.com/v3/projects/${target.projectId}/timeSeries?${params}` });
    const byController: Record<string, number> = {};
    for (const series of res.data.timeSeries ?? []) {
      const controller = series.metric?.labels?.controller ?? '?';
      byController[controller] =
        (byController[controller] ?? 0) + Number(series.points?.[0]?.value.int64Value ?? 0);
    }
    return { byController, window };
  } catch (err) {
    return {
      byController: {},
      window,
      note: `Cloud Monitoring: ${firstLine(err)} (needs roles/monitoring.viewer)`,
    };
  }
}

/** The latest value of a Pub/Sub subscription metric from Cloud Monitoring (last 10 min). */
async function monitoringValue(
  projectId: string,
  subscription: string,
  metric: string,
): Promise<number | undefined> {
  const auth = new GoogleAuth({ scopes: ['https://www.googleapis.com/auth/monitoring.read'] });
  const end = new Date();
  const start = new Date(end.getTime() - 10 * 60_000);
  const params = new URLSearchParams({
    filter: `metric.type="pubsub.googleapis.com/subscription/${metric}" AND resource.labels.subscription_id="${subscription}"`,
    'interval.startTime': start.toISOString(),
    'interval.endTime': end.toISOString(),
  });
  const res = await auth.request<{
    timeSeries?: { points?: { value: { int64Value?: string; doubleValue?: number } }[] }[];
  }>({
    url: `https://monitoring.googleapis.com/v3/projects/${projectId}/timeSeries?${params}`,
  });
  const point = res.data.timeSeries?.[0]?.points?.[0]?.value;
  if (!point) return undefined;
  return Number(point.int64Value ?? point.doubleValue);
}

interface Backlog {
  undelivered?: number;
  oldestUnackedSeconds?: number;
  /** Local stack only: the last push `reconcile` acknowledged, and the last push at all (RFC 3339). */
  lastDelivery?: string;
  lastPush?: string;
  /** Local stack only: stalls the watchdog recovered from. */
  recoveries?: number;
  note?: string;
}

/** The local stack's figures from its delivery watchdog (`deliveriesUrl`). */
async function localBacklog(target: Target): Promise<Backlog> {
  const url = target.stack?.deliveriesUrl;
  if (!url) return { note: 'not available from the Pub/Sub emulator (no metrics)' };
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    const s = (await res.json()) as DeliveryStatus;
    const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());
    return {
      undelivered: s.backlog,
      oldestUnackedSeconds:
        s.oldestPublishedAt === undefined ? undefined : (Date.now() - s.oldestPublishedAt) / 1000,
      lastDelivery: iso(s.lastDeliveredAt),
      lastPush: iso(s.lastPushAt),
      recoveries: s.recoveries,
    };
  } catch (err) {
    return { note: `the local stack's delivery figures (${url}): ${firstLine(err)}` };
  }
}

async function backlog(target: Target): Promise<Backlog> {
  if (target.kind === 'local') return localBacklog(target);
  const sub = resourceId(target.subscription);
  try {
    const [undelivered, oldestUnackedSeconds] = await Promise.all([
      monitoringValue(target.projectId, sub, 'num_undelivered_messages'),
      monitoringValue(target.projectId, sub, 'oldest_unacked_message_age'),
    ]);
    return {
      undelivered,
      oldestUnackedSeconds,
      note: undelivered === undefined ? 'no data in Cloud Monitoring for the last 10 min' : undefined,
    };
  } catch (err) {
    return { note: `Cloud Monitoring: ${firstLine(err)} (needs roles/monitoring.viewer)` };
  }
}

/** Dead letters counted by pulling without acknowledging, up to `limit`. */
async function deadLetterCount(target: Target, limit: number): Promise<number> {
  const subscriber = createSubscriber(target);
  try {
    const pulled = await subscriber.pull(target.deadLetterSubscription, limit);
    await subscriber.release(
      target.deadLetterSubscription,
      pulled.map((m) => m.ackId),
    );
    return pulled.length;
  } finally {
    await subscriber.close().catch(() => {});
  }
}

export interface StatusArgs {
  'relay-url'?: string;
  /** Refresh the dashboard's figures of the local stack in place (cli/impl/watch.ts). */
  watch?: boolean;
  /** Seconds between refreshes with `watch`. */
  interval?: number;
  /** Seconds the rates and quantiles of `watch` cover. */
  window?: number;
  /** Whose relay to check in a multi-cluster local stack; default the first cluster's. */
  cluster?: string;
  output: string;
  project?: string;
  topic?: string;
}

const COUNT_LIMIT = 1000;

/**
 * Runs `levelset status`; sets exit code 1 when the relay is not ready or keys are dead-lettered.
 * With `watch`, refreshes the local stack's figures until SIGINT or SIGTERM, then exits 0.
 */
export async function runStatus(argv: StatusArgs): Promise<void> {
  const target = await resolveTarget(argv);
  const clusters = target.stack?.clusters;
  if (argv.cluster !== undefined && clusters && !clusters[argv.cluster])
    throw new CliError(
      `unknown cluster "${argv.cluster}": the local stack serves ${Object.keys(clusters).join(', ')}`,
      EXIT_USAGE,
    );
  const relayUrl =
    argv['relay-url'] ??
    (argv.cluster !== undefined && clusters ? clusters[argv.cluster]?.relayUrl : target.stack?.relayUrl);
  if (argv.watch) {
    const { watchStatus } = await import('./watch.ts');
    const stop = new AbortController();
    const abort = () => stop.abort();
    process.once('SIGINT', abort);
    process.once('SIGTERM', abort);
    await watchStatus(target, {
      interval: argv.interval ?? 2,
      window: argv.window ?? 60,
      output: argv.output,
      relayUrl,
      signal: stop.signal,
    });
    return;
  }
  const [relay, keys, deadLetters, drifted] = await Promise.all([
    relayUrl ? relayStatus(relayUrl) : Promise.resolve(undefined),
    backlog(target),
    deadLetterCount(target, COUNT_LIMIT),
    drift(target),
  ]);
  const healthy = (relay ? relay.ready : target.kind === 'cloud') && deadLetters === 0;
  if (!healthy) process.exitCode = 1;
  if (argv.output === 'json') {
    say(
      JSON.stringify(
        { target: target.describe, relay, backlog: keys, deadLetters, drift: drifted, healthy },
        null,
        2,
      ),
    );
    return;
  }
  say(`target        ${target.describe}`);
  if (clusters)
    say(
      `clusters      ${Object.keys(clusters).join(', ')}; relay of ${argv.cluster ?? Object.keys(clusters)[0]} (--cluster for another's)`,
    );
  if (!relay)
    say(
      target.kind === 'local'
        ? 'relay         not running in the local stack'
        : 'relay         not checked: pass --relay-url (kubectl -n levelset-system port-forward deploy/levelset-relay 8080)',
    );
  else if (relay.error) say(`relay         ${relay.url} ${relay.error}`);
  else {
    const informers = Object.entries(relay.informers);
    const synced = informers.filter(([, s]) => s).length;
    say(`relay         ${relay.ready ? 'ready' : `NOT READY (${relay.readyz})`} at ${relay.url}`);
    say(
      `  informers   ${synced}/${informers.length} synced${
        synced < informers.length
          ? `: waiting for ${informers
              .filter(([, s]) => !s)
              .map(([id]) => id)
              .join(', ')}`
          : ''
      }`,
    );
    say(`  restarts    ${relay.restarts} informer restarts`);
    say(`  published   ${relay.published} keys`);
  }
  say(`subscription  ${target.subscription}`);
  if (keys.undelivered !== undefined) say(`  backlog     ${keys.undelivered} undelivered keys`);
  if (keys.oldestUnackedSeconds !== undefined)
    say(`  oldest      ${formatDuration(keys.oldestUnackedSeconds * 1000)} unacknowledged`);
  if (keys.note) say(`  backlog     ${keys.note}`);
  if (target.kind === 'local' && !keys.note) {
    const ago = (iso: string | undefined) =>
      iso ? `${iso} (${formatDuration(Date.now() - Date.parse(iso))} ago)` : 'none yet';
    say(`  delivered   last ${ago(keys.lastDelivery)}`);
    say(`  pushed      last ${ago(keys.lastPush)}`);
    if (keys.recoveries)
      say(`  watchdog    recovered from ${keys.recoveries} stalls (levelset dev's output)`);
  }
  const driftTotal = Object.values(drifted.byController).reduce((a, b) => a + b, 0);
  const driftDetail = Object.entries(drifted.byController)
    .map(([c, n]) => `${c} ${n}`)
    .join(', ');
  say(
    drifted.note
      ? `drift         ${drifted.note}`
      : `drift         ${driftTotal} keys corrected by the resync ${drifted.window}${driftTotal ? ` (${driftDetail}): watch events were missed (jsonPayload.drift=true in the logs)` : ''}`,
  );
  say(
    `dead letters  ${deadLetters}${deadLetters === COUNT_LIMIT ? '+' : ''} in ${target.deadLetterSubscription}${deadLetters ? ' (levelset dead-letters list)' : ''}`,
  );
}
