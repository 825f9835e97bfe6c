/**
 * The end-to-end fixture: a cluster (local API server, or `TEST_KUBECONFIG`) plus the whole local
 * stack pointed at it, in either mode: `serverless` (Pub/Sub emulator, both functions under
 * functions-framework, the relay) or `in-process` (one process: informers → workqueue → workers).
 *
 * Every end-to-end file runs its assertions in each of {@link PIPELINE_MODES}:
 *
 *   for (const mode of PIPELINE_MODES) describe(`foo end to end (${mode})`, () => { … startPipeline(setup, { mode }) … });
 */

import { afterEach, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { type KubeConfig, type KubernetesObject, Watch } from '@kubernetes/client-node';
import type { LocalApiServerOptions } from '@levelset/apiserver';
import { LABELS } from '../../core/log.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import type { LogLine } from '../../local/service.ts';
import {
  type AnyLocalStack,
  type LocalStack,
  type LocalStackOptions,
  STACK_MODES,
  type StackMode,
  startLocalStack,
} from '../../local/stack.ts';
import { primaryEventPasses } from '../../relay/predicate.ts';
import { createLeastPrivilegedIdentities, type Identities } from './identities.ts';
import { scrapeSum } from './metrics.ts';
import { waitFor } from './wait.ts';

/**
 * The modes the end-to-end files run in: `LEVELSET_TEST_MODES` (comma-separated, e.g.
 * `in-process`), default both.
 * @throws {Error} on an unknown mode.
 */
export const PIPELINE_MODES: readonly StackMode[] = (() => {
  const wanted = process.env.LEVELSET_TEST_MODES?.split(',').filter(Boolean) ?? [...STACK_MODES];
  for (const m of wanted) if (!STACK_MODES.includes(m as StackMode)) throw new Error(`unknown mode ${m}`);
  return wanted as StackMode[];
})();

export interface Pipeline {
  cluster: TestCluster;
  stack: AnyLocalStack;
  mode: StackMode;
  /** Every log line of every process, tagged with the process name. */
  logs: { service: string; line: LogLine }[];
  /** The relay's and the functions' least-privileged identities; `undefined` with `admin: true`. */
  identities?: Identities;
  stop(): Promise<void>;
}

/** The pipelines started and not stopped yet in this file (a test file runs in a process of its own). */
const running = new Set<Pipeline>();

/** How many of the stack's last warnings and errors a failed test's report shows. */
export const FAILURE_LOG_LINES = 20;

/** Severities shown for a failed test: Cloud Logging's WARNING and above (core/log.ts). */
const SHOWN_SEVERITIES = new Set(['WARNING', 'ERROR', 'CRITICAL', 'ALERT', 'EMERGENCY']);

/**
 * The last `max` WARNING-or-worse log lines of `p`'s processes, and lines of theirs that are not JSON
 * and name an error (a crash's output, e.g. `Error: listen EADDRINUSE`), as `[service] SEVERITY
 * <key> message: err` (a raw line as it is), each at most 400 characters. The services' own log
 * lines: they never carry Secret data.
 */
export function warningLines(p: Pipeline, max = FAILURE_LOG_LINES): string[] {
  return p.logs
    .filter(
      ({ line }) =>
        SHOWN_SEVERITIES.has(line.severity ?? '') ||
        (typeof line.raw === 'string' && /error/i.test(line.raw)),
    )
    .slice(-max)
    .map(({ service, line }) => `[${service}] ${(line.raw ?? summaryOf(line)).slice(0, 400)}`);
}

/** `SEVERITY <key> message: err` of a JSON log line (core/log.ts's shape). */
function summaryOf(line: LogLine): string {
  const key = (line[LABELS] as { key?: string } | undefined)?.key;
  const err = line.err as string | { message?: string } | undefined;
  const why = typeof err === 'string' ? err : err?.message;
  return [line.severity, key, line.message].filter(Boolean).join(' ') + (why ? `: ${why}` : '');
}

// A failed test's report ends with the warnings and errors of the stacks it ran on: a wait's
// timeout alone says what did not happen, these say why (a reconcile failing, a relay's watch).
afterEach((context) => {
  // Each test's own context, whose `passed` (Node 21.7+) @types/node does not declare yet.
  const t = context as TestContext & { passed?: boolean };
  if (t.passed !== false) return;
  for (const p of running) {
    const lines = warningLines(p);
    t.diagnostic(`the stack's last ${lines.length} warnings and errors (${p.mode}):`);
    for (const line of lines) t.diagnostic(line);
  }
});

/**
 * Starts cluster and stack. The relay and the functions (or the in-process mode) run least-privileged:
 * each with a ServiceAccount token bound to its ClusterRole from the generated RBAC (see
 * `identities.ts`); `setup` and the test itself use the cluster admin. `admin: true` runs the
 * processes as the admin instead. `LEVELSET_TEST_VERBOSE=1` echoes every log line to stderr.
 * @param setup arranges the cluster and returns controller configuration for the stack (e.g. the source namespace).
 * @param clusterOptions options of the local API server (e.g. a short bookmark interval).
 */
export async function startPipeline(
  setup: (cluster: TestCluster) => Promise<Record<string, string>>,
  options: Partial<LocalStackOptions> & { admin?: boolean } = {},
  clusterOptions: LocalApiServerOptions = {},
): Promise<Pipeline> {
  const cluster = await startTestCluster(clusterOptions);
  const logs: Pipeline['logs'] = [];
  let identities: Identities | undefined;
  try {
    // The identities do not depend on what `setup` arranges: both are made side by side.
    const [arranged, made] = await Promise.allSettled([
      setup(cluster),
      options.admin ? undefined : createLeastPrivilegedIdentities(cluster.kubeConfig),
    ]);
    if (made.status === 'fulfilled') identities = made.value;
    if (arranged.status === 'rejected') throw arranged.reason;
    if (made.status === 'rejected') throw made.reason;
    const env = arranged.value;
    const stack = await startLocalStack({
      kubeconfigPath: cluster.kubeconfigPath,
      relayKubeconfigPath: identities?.relay.kubeconfigPath,
      functionsKubeconfigPath: identities?.functions.kubeconfigPath,
      inProcessKubeconfigPath: identities?.inProcess.kubeconfigPath,
      env,
      collapseMs: 50,
      // Most pipeline tests never resync: the `resync` function starts at the first runResync.
      resyncOnDemand: true,
      ...options,
      onLog: (service, line) => {
        logs.push({ service, line });
        if (process.env.LEVELSET_TEST_VERBOSE) process.stderr.write(`[${service}] ${JSON.stringify(line)}\n`);
      },
    });
    const pipeline: Pipeline = {
      cluster,
      stack,
      mode: stack.mode,
      logs,
      identities,
      async stop() {
        running.delete(pipeline);
        // Objects with finalizers (a Topic's) go only while their controller runs.
        await cluster.deleteNamespaces();
        await stack.stop();
        await identities?.remove();
        await cluster.stop();
      },
    };
    running.add(pipeline);
    return pipeline;
  } catch (err) {
    await identities?.remove();
    await cluster.stop();
    throw err;
  }
}

/** Pub/Sub push envelope for a key message, as the subscription POSTs it to `reconcile`. */
export function pushEnvelope(message: object, messageId = String(Date.now())): object {
  return {
    message: {
      data: Buffer.from(JSON.stringify(message)).toString('base64'),
      attributes: {},
      messageId,
      publishTime: new Date().toISOString(),
    },
    subscription: 'projects/local-project/subscriptions/test',
  };
}

/**
 * Sums the series of one of the running relay's Prometheus counters or gauges (its `/metrics`) whose
 * label set contains `labels` (e.g. `controller="foo"`; `''` matches every series, unlabelled ones too).
 * @throws {Error} when the relay is not running
 */
export async function relayCounter(p: Pipeline, metric: string, labels: string): Promise<number> {
  const relay = p.stack.relay();
  if (!relay) throw new Error('the relay is not running');
  return scrapeSum(new URL('/metrics', relay.url), metric, labels);
}

/**
 * The Secret values that occur in any of `haystacks`, plainly or base64-encoded (standard and URL
 * alphabets, as a whole value). Used to check that no log line, Event or answer carries Secret data.
 */
export function leakedSecretValues(haystacks: readonly string[], values: readonly string[]): string[] {
  const forms = values.flatMap((v) => {
    const b = Buffer.from(v);
    return [
      [v, v],
      [v, b.toString('base64')],
      [v, b.toString('base64url')],
      [v, JSON.stringify(v).slice(1, -1)],
    ] as const;
  });
  const leaked = new Set<string>();
  for (const text of haystacks)
    for (const [value, form] of forms)
      if (text.includes(form)) leaked.add(`${value} (as ${form === value ? 'plain' : form})`);
  return [...leaked];
}

/**
 * The serverless stack of `p` (emulator, functions), for the checks only that mode has.
 * @throws {Error} in `in-process` mode (callers skip such tests there: `{ skip: p.mode !== 'serverless' }`).
 */
export function serverlessStack(p: Pipeline): LocalStack {
  if (p.stack.mode !== 'serverless') throw new Error('this check needs the serverless stack');
  return p.stack;
}

/**
 * How many reconciles the keys handed on so far are owed, in either mode: keys published to Pub/Sub
 * by the relay (serverless: each delivery ends in one outcome line at least), or keys added to the
 * controller's workqueue (in-process: client-go's `workqueue_adds_total` counts an add only when the
 * key was not already waiting, and each such add is handed to a worker exactly once).
 */
export async function reconcilesOwed(p: Pipeline, controller: string): Promise<number> {
  return p.mode === 'serverless'
    ? relayCounter(p, 'levelset_relay_keys_published_total', `controller="${controller}"`)
    : relayCounter(p, 'workqueue_adds_total', `name="${controller}"`);
}

/**
 * Outcome lines (`outcome` set: one per finished delivery) written for `controller`'s keys so far, in
 * either mode; only those of `key` (`<namespace>/<name>`) when given.
 */
export function outcomeLines(p: Pipeline, controller: string, key?: string): LogLine[] {
  return p.logs
    .filter(({ service, line }) => {
      const labels = line[LABELS] as { controller?: string; key?: string } | undefined;
      return (
        service === 'reconcile' &&
        labels?.controller === controller &&
        (key === undefined || labels.key === key) &&
        typeof line.outcome === 'string'
      );
    })
    .map(({ line }) => line);
}

/** A resource the relay watches for a controller, which the test watches too. */
export interface WatchedResource {
  /** Cluster-wide watch path, as the relay's informers watch, e.g. `/apis/apps/v1/deployments`. */
  path: string;
  /** The watch's query (e.g. `{ labelSelector: 'controller' }`); default none. */
  query?: Record<string, string>;
  /** The relay's `resource` label for it in `levelset_relay_events_received_total`, e.g. `apps/v1/deployments`. */
  relayResource: string;
}

/**
 * A watch kept open, as an informer keeps its own. It starts at resourceVersion 0 (the objects of
 * kube-apiserver's watch cache as ADDED, then every event): a watch without one waits for the cache
 * to reach etcd's current revision, which a resource nobody writes reaches only with etcd's
 * progress notifications, and is ended after 3 s with an ERROR event (504 "Too large resource
 * version") before it delivered anything. No bookmarks: kube-apiserver refuses a watch at
 * resourceVersion 0 with bookmarks when its etcd cannot request progress notifications ("the
 * required storage feature RequestWatchProgress is disabled"). kube-apiserver also ends watches (its request timeout);
 * each restart resumes from the last resourceVersion seen, so no event is delivered twice or missed. A watch that cannot resume (410 Gone) lost
 * events: `onLost` says so and the watch stops. Resolves once the first watch is open.
 */
export async function keepWatching(
  kubeConfig: KubeConfig,
  path: string,
  query: Record<string, string>,
  onEvent: (type: string, object: KubernetesObject) => void,
  onLost: (why: string) => void = () => {},
): Promise<{ stop(): void }> {
  let resourceVersion: string | undefined;
  let current: { abort(): void } | undefined;
  let stopped = false;
  let lost = false;
  let ended!: () => void;
  let end = new Promise<void>((resolve) => {
    ended = resolve;
  });
  const open = async () => {
    current = await new Watch(kubeConfig).watch(
      path,
      { ...query, resourceVersion: resourceVersion ?? '0' },
      (type: string, object: KubernetesObject) => {
        if (type === 'ERROR') {
          const status = object as { code?: number; message?: string };
          if (status.code === 410) {
            lost = true;
            onLost(`${path}: ${status.message}`);
          }
          return;
        }
        resourceVersion = object.metadata?.resourceVersion ?? resourceVersion;
        if (type !== 'BOOKMARK') onEvent(type, object);
      },
      () => ended(),
    );
  };
  await open();
  void (async () => {
    for (;;) {
      await end;
      if (stopped || lost) return;
      end = new Promise<void>((resolve) => {
        ended = resolve;
      });
      await delay(250);
      if (stopped) return;
      await open().catch(() => ended());
    }
  })();
  return {
    stop() {
      stopped = true;
      current?.abort();
    },
  };
}

/** What the relay must have seen, from the test's own watches; see {@link watchRelayInputs}. */
export interface RelayInputs {
  /** Events seen so far: per `relayResource`, and the primary's events the relay's predicate drops (status-only writes). */
  readonly seen: { events: Record<string, number>; drops: number };
  /**
   * Waits (deadline) until the pipeline is quiet: the relay has received every event these watches
   * saw (and dropped the status-only ones), nothing waits in its collapse window, and every key it
   * handed on has been reconciled to an outcome.
   * @returns the figures compared
   * @throws {Error} on the deadline, with the figures
   */
  settled(p: Pipeline): Promise<object>;
  /** Stops the watches. */
  stop(): void;
}

/**
 * Watches, as the relay does for `controller`, its primary resource and `others` (its children),
 * counting every event and which primary events the relay's predicate (relay/predicate.ts) drops,
 * so that {@link RelayInputs.settled} can compare the relay's counters with them. Start it in the
 * pipeline's setup, before the stack runs.
 */
export async function watchRelayInputs(
  kubeConfig: KubeConfig,
  controller: string,
  primary: WatchedResource,
  others: readonly WatchedResource[] = [],
): Promise<RelayInputs> {
  const seen = { events: {} as Record<string, number>, drops: 0 };
  const aborts: (() => void)[] = [];
  const last = new Map<string, KubernetesObject>();
  /** Why a watch lost events (410 Gone on its restart): settled() cannot compare then. */
  let broken: string | undefined;
  const count = (resource: WatchedResource, type: string, object: KubernetesObject) => {
    seen.events[resource.relayResource] = (seen.events[resource.relayResource] ?? 0) + 1;
    if (resource !== primary) return;
    const uid = object.metadata?.uid ?? '';
    const oldObject = last.get(uid);
    if (type === 'DELETED') last.delete(uid);
    else last.set(uid, object);
    if (type === 'MODIFIED' && !primaryEventPasses({ type, object, oldObject })) seen.drops += 1;
  };
  for (const resource of [primary, ...others]) {
    seen.events[resource.relayResource] = 0;
    const watch = await keepWatching(
      kubeConfig,
      resource.path,
      resource.query ?? {},
      (type, object) => count(resource, type, object),
      (why) => {
        broken = why;
      },
    );
    aborts.push(() => watch.stop());
  }
  const ofController = `controller="${controller}"`;
  return {
    seen,
    settled: (p) =>
      waitFor(
        async () => {
          const received: Record<string, number> = {};
          for (const resource of Object.keys(seen.events))
            received[resource] = await relayCounter(
              p,
              'levelset_relay_events_received_total',
              `resource="${resource}"`,
            );
          const dropped = await relayCounter(p, 'levelset_relay_events_filtered_total', ofController);
          const enqueued = await relayCounter(p, 'levelset_relay_keys_enqueued_total', ofController);
          const published = await relayCounter(p, 'levelset_relay_keys_published_total', ofController);
          const owed = await reconcilesOwed(p, controller);
          const finished = outcomeLines(p, controller).length;
          const state = { owed, received, dropped, enqueued, published, finished, seen };
          if (broken) throw new Error(`a watch of the test lost events, cannot compare: ${broken}`);
          if (
            Object.entries(seen.events).every(([resource, n]) => (received[resource] ?? 0) >= n) &&
            dropped >= seen.drops &&
            enqueued === published &&
            finished >= owed
          )
            return state;
          throw new Error(`not settled: ${JSON.stringify(state)}`);
        },
        { message: 'the pipeline to settle (every event received, every key published and delivered)' },
      ),
    stop: () => {
      for (const abort of aborts) abort();
    },
  };
}
