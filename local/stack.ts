/**
 * The whole Levelset pipeline on one machine: the Pub/Sub emulator with the keys topology, the
 * `reconcile` and `resync` functions under functions-framework, the relay, and a resync timer
 * standing in for Cloud Scheduler. `levelset dev` and the end-to-end tests both run it; the relay
 * runs as `levelset relay`, as in its container.
 *
 * With `mode: 'in-process'` it runs the same controllers the classic way instead: one process
 * (`relay/in-process-main.ts`: informers → workqueue → workers), no emulator, no functions.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import pLimit from 'p-limit';
import { resyncTopicOf } from '../functions/config.ts';
import { DEFAULT_CLUSTER } from '../functions/contract/key.ts';
import { emulatorClientOptions } from '../functions/publish.ts';
import type { ResyncReport } from '../functions/resync.ts';
import {
  ensureKeysTopology,
  freePort,
  type KeysTopology,
  keysTopologyNames,
  type PubSubEmulator,
  startPubSubEmulator,
} from './pubsub-emulator.ts';
import { type PushProxy, startPushProxy } from './push-proxy.ts';
import { type LogLine, repoRoot, type Service, startService } from './service.ts';
import { createLogFile, removeStackState, traceFilePath, writeStackState } from './state.ts';
import { type DeliveryWatchdog, type StallReport, startDeliveryWatchdog } from './watchdog.ts';

/** How the controllers run: relay → Pub/Sub → functions, or one in-process controller manager. */
export type StackMode = 'serverless' | 'in-process';
export const STACK_MODES: readonly StackMode[] = ['serverless', 'in-process'];

/** One cluster of a multi-cluster local stack: its id (a DNS-1123 label) and its kubeconfig. */
export interface LocalCluster {
  id: string;
  kubeconfigPath: string;
}

export interface LocalStackOptions {
  /** Default `serverless`. */
  mode?: StackMode;
  /** The cluster every process talks to (with {@link clusters}: the first cluster's, for the tools). */
  kubeconfigPath: string;
  /**
   * Serverless mode only: several clusters, one relay each (`RELAY_CLUSTER` = its id), all
   * publishing to the one topic; the functions serve all of them (`LEVELSET_CLUSTERS`,
   * functions/clusters.ts). Omitted: the one `default` cluster of `kubeconfigPath`.
   */
  clusters?: LocalCluster[];
  /** The relay's identity, when not `kubeconfigPath`'s (e.g. a least-privileged ServiceAccount). */
  relayKubeconfigPath?: string;
  /** The functions' identity, when not `kubeconfigPath`'s. */
  functionsKubeconfigPath?: string;
  /** The in-process mode's identity, when not `kubeconfigPath`'s. */
  inProcessKubeconfigPath?: string;
  /** Controller configuration for the functions and the relay (e.g. `LEVELSET_SOURCE_NAMESPACE`). */
  env?: Record<string, string>;
  /** Keys topic id; default `levelset-keys`. */
  topic?: string;
  /** The relay's collapse window in ms; default the relay's own (250). */
  collapseMs?: number;
  /** Period of the resync timer in ms; 0 (default) runs no timer. */
  resyncIntervalMs?: number;
  /**
   * Resync keys pushed to `reconcile` at once (the resync subscription's push rate, enforced by its
   * push proxy); default {@link RESYNC_PUSH_CONCURRENCY}. Live keys have their own subscription
   * and no such limit.
   */
  resyncPushConcurrency?: number;
  /** Requests `reconcile` serves at once (one Cloud Run instance's); default {@link FUNCTION_CONCURRENCY}. */
  reconcileConcurrency?: number;
  /**
   * Failed deliveries before a key message is dead-lettered (5–100); default 5. Counted by the local
   * push proxy (local/push-proxy.ts), which dead-letters in the emulator's stead.
   */
  maxDeliveryAttempts?: number;
  /**
   * The delivery watchdog's stall limit (local/watchdog.ts): keys published and not pushed for this
   * long while `reconcile` answers make it re-create the push subscription and re-publish them; ms,
   * default 30 000.
   */
  deliveryStallMs?: number;
  /** Called after each recovery of the watchdog. */
  onDeliveryStall?: (report: StallReport) => void;
  /** Start the relay (in-process: the in-process process) with the stack; default true. */
  relay?: boolean;
  /** Every log line of every process, as it arrives. */
  onLog?: (service: string, line: LogLine) => void;
  /**
   * Called after each timer-driven resync: its report, or why it failed. Not called for a resync
   * the stack's stop (or a signal to the resync function) interrupted: that is no failure.
   */
  onResync?: (report: ResyncReport | Error) => void;
  /**
   * Where to write `stack.json` and `logs/<service>.jsonl` so that `levelset` commands find this
   * stack (local/state.ts); omitted: nothing is written.
   */
  stateDir?: string;
  /**
   * Every process traces into `<stateDir>/traces/<service>.jsonl` (functions/tracing.ts `file`, every
   * trace exported), what `levelset trace` reads; default: true when `stateDir` is set.
   */
  tracing?: boolean;
}

/** The stack in `in-process` mode: `relay()` is the in-process process (its log lines with an `outcome` are tagged `reconcile`). */
export interface InProcessStack {
  mode: 'in-process';
  relay(): Service | undefined;
  /** Starts the in-process process. */
  startRelay(): Promise<Service>;
  /** Fault injection: kills the in-process process with SIGKILL (its queued keys are lost with it). */
  killRelay(): Promise<void>;
  /** Stops the in-process process (SIGTERM: it finishes the queued keys). */
  stopRelay(): Promise<void>;
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** Either mode's stack; narrow on `mode` for the serverless parts (functions, emulator). */
export type AnyLocalStack = LocalStack | InProcessStack;

export interface LocalStack {
  mode: 'serverless';
  /** The running emulator (a new one after {@link LocalStack.startEmulator}). */
  readonly emulator: PubSubEmulator;
  /** Full names of the topics and subscriptions. */
  topology: KeysTopology;
  /** The push endpoint of the keys subscription, in front of `reconcile`: attempts, dead letters, delivery figures. */
  pushProxy: PushProxy;
  /** The resync's topic and subscription (`<topic>-resync`), pushing to the same `reconcile`. */
  resyncTopology: KeysTopology;
  /** The resync subscription's push endpoint, which forwards at most `resyncPushConcurrency` at once. */
  resyncPushProxy: PushProxy;
  /** Backlog, last delivery, recoveries from stalls. */
  watchdog: DeliveryWatchdog;
  /** The running `reconcile` function (a new process after {@link LocalStack.restartFunction}). */
  readonly reconcile: Service;
  readonly resync: Service;
  /** The ids of the clusters the stack serves (`[default]` without {@link LocalStackOptions.clusters}). */
  clusters: readonly string[];
  /** The running relay of `cluster` (default: the first cluster), if any. */
  relay(cluster?: string): Service | undefined;
  /**
   * Starts the relay of `cluster` (default: the first) unless it runs; `env` is added to the stack's
   * environment for this process.
   */
  startRelay(env?: Record<string, string>, cluster?: string): Promise<Service>;
  /** Stops the relay of `cluster` (default: every relay; it flushes pending keys on SIGTERM). */
  stopRelay(cluster?: string): Promise<void>;
  /** Fault injection: kills the relay of `cluster` (default: the first) with SIGKILL (keys in its collapse window are lost with it). */
  killRelay(cluster?: string): Promise<void>;
  /**
   * Fault injection: kills a function's process with SIGKILL (mid-request, if one runs) and starts a
   * new one on the same port (the push endpoint stays valid). `signal: 'SIGTERM'` stops it gracefully
   * instead (SIGKILL after its grace). `killOnly` leaves it down until
   * {@link LocalStack.restartFunction} is called again.
   */
  restartFunction(
    name: 'reconcile' | 'resync',
    options?: { killOnly?: boolean; signal?: 'SIGKILL' | 'SIGTERM' },
  ): Promise<void>;
  /** Fault injection: kills the Pub/Sub emulator (its topics, subscriptions and messages are lost). */
  stopEmulator(): Promise<void>;
  /** Starts the emulator again on the same port and re-creates the topology, as Pub/Sub itself never loses it. */
  startEmulator(): Promise<void>;
  /** Calls the `resync` function once, as Cloud Scheduler does. @throws on a non-2xx answer. */
  runResync(): Promise<ResyncReport>;
  /** The environment every process of the stack gets. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * V8 heap limit (MiB) of the local function processes: what Terraform gives a function at its
 * default 512Mi (`--max-old-space-size`, half the instance's memory; terraform/functions.tf), so a
 * function that would not fit on Cloud Run does not pass locally either.
 */
export const FUNCTION_HEAP_MIB = 256;

/**
 * The functions' V8 flags, as Terraform sets them in NODE_OPTIONS at the default 512Mi
 * (terraform/functions.tf, which adds `--enable-source-maps` for the bundle): the heap limit
 * {@link FUNCTION_HEAP_MIB}, and a young generation of at most 8 MiB per semi-space. Without the
 * second V8 grows the young generation while a resync lists and publishes, and keeps its pages:
 * a 100k-key resync peaked at 301 MiB RSS with the heap limit alone, 207 MiB with both
 * (`npm run bench`, resync). The relay's are capped lower still (RELAY_NODE_OPTIONS).
 */
export const FUNCTION_NODE_OPTIONS = [
  `--max-old-space-size=${FUNCTION_HEAP_MIB}`,
  '--max-semi-space-size=8',
] as const;

/**
 * The relay's V8 flags, as Terraform sets them in its container's NODE_OPTIONS at the default
 * 512Mi memory limit (terraform/kubernetes.tf `relay_node_env`): a heap limit of half the limit,
 * and a young generation of at most 4 MiB per semi-space (V8 otherwise grows it to 64 MiB per
 * semi-space during a LIST of 100k objects and keeps the pages; with 8 MiB the relay kept ≈ 15 MiB
 * of young generation after syncing 100k objects, with 4 MiB ≈ 8, at the same events/s:
 * `npm run bench`, relay; docs/architecture.md decision 1). The functions keep 8 MiB
 * ({@link FUNCTION_NODE_OPTIONS}).
 */
export const RELAY_NODE_OPTIONS = ['--max-old-space-size=256', '--max-semi-space-size=4'] as const;

/**
 * Requests the local `reconcile` serves at once, live and resync pushes together: Terraform's
 * `reconcile_concurrency` default (`max_instance_request_concurrency` of each instance,
 * terraform/variables.tf). Locally one process stands for one instance, so its memory and CPU are
 * an instance's at the deployed concurrency; in the cloud more instances serve the rest.
 */
export const FUNCTION_CONCURRENCY = 8;

/**
 * The environment the relay's image sets (relay/Dockerfile `ENV`): at most 2 glibc malloc arenas
 * (glibc's default is 8 per core, one per thread that allocates: Node's libuv and V8 worker
 * threads each keep the pages of a 100k-object LIST's buffers in an arena of their own; ≈ 15 MiB of
 * the relay's RSS at 100k watched objects, `npm run bench`, relay memory). The local relay and
 * the bench's informer children run with it too.
 */
export const RELAY_ENV = { MALLOC_ARENA_MAX: '2' } as const;

/** Resync keys the local stack pushes to `reconcile` at once (its resync subscription's push rate). */
export const RESYNC_PUSH_CONCURRENCY = 4;

/** The functions-framework CLI (`functions-framework --target=… --port=…`). */
export const functionsCli = join(
  repoRoot,
  'node_modules',
  '@google-cloud',
  'functions-framework',
  'build',
  'src',
  'main.js',
);

/** Starts the in-process mode's process, tagging its outcome lines `reconcile` and the others `relay`. */
async function startInProcessStack(options: LocalStackOptions): Promise<InProcessStack> {
  const env: Record<string, string> = {
    ...options.env,
    KUBECONFIG: options.inProcessKubeconfigPath ?? options.kubeconfigPath,
    LEVELSET_RESYNC_INTERVAL_MS: String(options.resyncIntervalMs ?? 0),
    ...(options.collapseMs !== undefined ? { RELAY_COLLAPSE_MS: String(options.collapseMs) } : {}),
  };
  let relay: Service | undefined;
  const startRelay = async () => {
    if (relay) return relay;
    const port = await freePort();
    relay = await startService({
      name: 'in-process',
      args: [join(repoRoot, 'relay', 'in-process-main.ts')],
      port,
      env: { ...env, RELAY_PORT: String(port) },
      readyPath: '/readyz',
      onLog: (line) => {
        const service = (line.serviceContext as { service?: string } | undefined)?.service;
        options.onLog?.(service === 'levelset-functions' ? 'reconcile' : 'relay', line);
      },
    });
    return relay;
  };
  const stopRelay = async () => {
    const r = relay;
    relay = undefined;
    await r?.stop();
  };
  if (options.relay ?? true) await startRelay();
  const killRelay = async () => {
    const r = relay;
    relay = undefined;
    await r?.kill();
  };
  return { mode: 'in-process', relay: () => relay, startRelay, stopRelay, killRelay, env, stop: stopRelay };
}

/**
 * The header functions-framework sets on the answer it gives a request in flight when its process
 * crashes or receives a signal (`X-Google-Status: crash`, body `Received SIGINT` for a signal).
 */
const FUNCTION_STATUS_HEADER = 'x-google-status';

/**
 * A resync whose function process was stopped by a signal while it ran (functions-framework then
 * answers `500 Received SIGINT`): Ctrl-C in a terminal signals every process of the group at once,
 * so the resync function may stop before `levelset dev` does. Not a failure of the resync.
 */
export class ResyncInterruptedError extends Error {
  override readonly name = 'ResyncInterruptedError';
}

/**
 * Starts the pipeline. On failure, whatever was started is stopped again.
 * @throws {Error} from the part that failed to start (emulator missing, port taken, …).
 */
export async function startLocalStack(
  options: LocalStackOptions & { mode?: 'serverless' },
): Promise<LocalStack>;
export async function startLocalStack(options: LocalStackOptions): Promise<AnyLocalStack>;
export async function startLocalStack(options: LocalStackOptions): Promise<AnyLocalStack> {
  if (options.mode === 'in-process') return startInProcessStack(options);
  const started: { stop(): Promise<void> }[] = [];
  const stopAll = async () => {
    for (const s of started.reverse()) await s.stop().catch(() => {});
    started.length = 0;
  };
  try {
    let emulator = await startPubSubEmulator();
    const emulatorRef = { stop: () => emulator.stop() };
    started.push(emulatorRef);
    const topic = options.topic ?? 'levelset-keys';
    const clusters: LocalCluster[] = options.clusters?.length
      ? options.clusters
      : [{ id: DEFAULT_CLUSTER, kubeconfigPath: options.kubeconfigPath }];
    const multiCluster = options.clusters !== undefined && options.clusters.length > 0;
    const env: Record<string, string> = {
      ...options.env,
      KUBECONFIG: options.kubeconfigPath,
      PUBSUB_EMULATOR_HOST: emulator.host,
      GOOGLE_CLOUD_PROJECT: emulator.projectId,
      LEVELSET_TOPIC: topic,
      ...(options.collapseMs !== undefined ? { RELAY_COLLAPSE_MS: String(options.collapseMs) } : {}),
    };
    const tracing = options.stateDir !== undefined && (options.tracing ?? true);
    const traceFiles = new Map<string, string>();
    /** The tracing environment of one service: its own file, every trace exported. */
    const traceEnv = (service: string): Record<string, string> => {
      if (!tracing || !options.stateDir) return {};
      const file = traceFilePath(options.stateDir, service);
      if (!traceFiles.has(service)) {
        rmSync(file, { force: true }); // a previous stack's spans
        traceFiles.set(service, file);
      }
      return { LEVELSET_TRACING: 'file', LEVELSET_TRACE_FILE: file, LEVELSET_TRACE_SAMPLE_RATIO: '1' };
    };
    const logFiles = new Map<string, ReturnType<typeof createLogFile>>();
    started.push({
      stop: async () => {
        for (const file of logFiles.values()) file.close();
      },
    });
    const log = (name: string) => {
      const file = options.stateDir ? createLogFile(options.stateDir, name) : undefined;
      if (file) logFiles.set(name, file);
      return (line: LogLine) => {
        file?.append(line);
        options.onLog?.(name, line);
      };
    };
    // Requeues (functions/requeue.ts) come back through a timer in reconcile's process, POSTing to itself.
    const reconcilePort = await freePort();
    // The reconcile's Prometheus metrics (functions/metrics.ts) on a port of their own, kept across
    // restarts of the function, which `levelset status --watch` reads.
    const reconcileMetricsPort = await freePort();
    const functionsEnv = {
      LEVELSET_REQUEUE: 'local',
      LEVELSET_REQUEUE_URL: `http://127.0.0.1:${reconcilePort}/`,
      ...env,
      KUBECONFIG: options.functionsKubeconfigPath ?? options.kubeconfigPath,
      ...(multiCluster
        ? {
            LEVELSET_CLUSTERS: JSON.stringify(
              clusters.map((c) => ({ id: c.id, kubeconfig: c.kubeconfigPath })),
            ),
          }
        : {}),
    };
    const functions = new Map<string, Service>();
    const functionLogs = { reconcile: log('reconcile'), resync: log('resync') };
    const startFunction = async (target: 'reconcile' | 'resync', port?: number) => {
      port ??= target === 'reconcile' ? reconcilePort : await freePort();
      const service = await startService({
        name: target,
        args: [
          ...FUNCTION_NODE_OPTIONS,
          functionsCli,
          `--target=${target}`,
          `--port=${port}`,
          `--source=${repoRoot}`,
        ],
        port,
        env: {
          ...functionsEnv,
          ...traceEnv(target),
          ...(target === 'reconcile' ? { LEVELSET_METRICS_PORT: String(reconcileMetricsPort) } : {}),
        },
        onLog: functionLogs[target],
      });
      functions.set(target, service);
      return service;
    };
    started.push({
      stop: async () => void (await Promise.all([...functions.values()].map((f) => f.stop()))),
    });
    const [reconcile, resync] = await Promise.all([startFunction('reconcile'), startFunction('resync')]);
    const names = keysTopologyNames(emulator.projectId, topic);
    // One instance's request slots, shared by the live and the resync subscriptions' pushes.
    const instanceSlots = pLimit(options.reconcileConcurrency ?? FUNCTION_CONCURRENCY);
    const pushProxy = await startPushProxy({
      target: reconcile.url,
      emulatorHost: emulator.host,
      projectId: emulator.projectId,
      deadLetterTopic: names.deadLetterTopic,
      subscription: names.subscription,
      maxDeliveryAttempts: options.maxDeliveryAttempts,
      instanceSlots,
    });
    started.push(pushProxy);
    const ensureTopology = () =>
      ensureKeysTopology({
        projectId: emulator.projectId,
        emulatorHost: emulator.host,
        topic,
        pushEndpoint: pushProxy.url,
      });
    const topology = await ensureTopology();
    // The resync's own topic and subscription (functions/config.ts, resyncTopicOf), to the same
    // function through a proxy of its own that bounds its push rate.
    const resyncTopic = resyncTopicOf(topic);
    const resyncNames = keysTopologyNames(emulator.projectId, resyncTopic);
    const resyncPushProxy = await startPushProxy({
      target: reconcile.url,
      emulatorHost: emulator.host,
      projectId: emulator.projectId,
      deadLetterTopic: resyncNames.deadLetterTopic,
      subscription: resyncNames.subscription,
      maxDeliveryAttempts: options.maxDeliveryAttempts,
      maxConcurrentPushes: options.resyncPushConcurrency ?? RESYNC_PUSH_CONCURRENCY,
      instanceSlots,
    });
    started.push(resyncPushProxy);
    const ensureResyncTopology = () =>
      ensureKeysTopology({
        projectId: emulator.projectId,
        emulatorHost: emulator.host,
        topic: resyncTopic,
        pushEndpoint: resyncPushProxy.url,
        // Its keys carry no ordering key (functions/resync.ts RESYNC_PUBLISHING), as in terraform/pubsub.tf.
        messageOrdering: false,
      });
    const resyncTopology = await ensureResyncTopology();
    const watchdog = await startDeliveryWatchdog({
      emulatorHost: emulator.host,
      projectId: emulator.projectId,
      topic,
      pushProxy,
      functionUrl: () => functions.get('reconcile')?.url ?? reconcile.url,
      recreateSubscription: async () => {
        const pubsub = new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.host) });
        try {
          await pubsub
            .subscription(topology.subscription)
            .delete()
            .catch((err: { code?: number }) => {
              if (err.code !== 5) throw err; // NOT_FOUND: already gone
            });
        } finally {
          await pubsub.close();
        }
        await ensureTopology();
      },
      stallMs: options.deliveryStallMs,
      onStall: options.onDeliveryStall,
    });
    started.push(watchdog);
    pushProxy.serveStatus(() => watchdog.status());

    const relays = new Map<string, Service>();
    const first = clusters[0]?.id ?? DEFAULT_CLUSTER;
    const relayName = (cluster: string) => (multiCluster ? `relay-${cluster}` : 'relay');
    const relayLogs = new Map(clusters.map((c) => [c.id, log(relayName(c.id))]));
    const writeState = () => {
      if (!options.stateDir) return;
      writeStackState(options.stateDir, {
        pid: process.pid,
        startedAt: new Date().toISOString(),
        kubeconfigPath: options.kubeconfigPath,
        emulatorHost: emulator.host,
        projectId: emulator.projectId,
        topology,
        reconcileUrl: functions.get('reconcile')?.url ?? reconcile.url,
        resyncUrl: functions.get('resync')?.url ?? resync.url,
        deliveriesUrl: new URL('/deliveries', pushProxy.url).href,
        reconcileMetricsUrl: `http://127.0.0.1:${reconcileMetricsPort}/metrics`,
        relayUrl: relays.get(first)?.url,
        ...(multiCluster
          ? {
              clusters: Object.fromEntries(
                clusters.map((c) => [
                  c.id,
                  { kubeconfigPath: c.kubeconfigPath, relayUrl: relays.get(c.id)?.url },
                ]),
              ),
            }
          : {}),
        logs: Object.fromEntries([...logFiles].map(([name, file]) => [name, file.path])),
        ...(tracing ? { traces: Object.fromEntries(traceFiles) } : {}),
      });
    };
    const clusterOf = (id: string | undefined): LocalCluster => {
      const found = clusters.find((c) => c.id === (id ?? first));
      if (!found) throw new Error(`unknown cluster "${id}": one of ${clusters.map((c) => c.id).join(', ')}`);
      return found;
    };
    const startRelay = async (extraEnv: Record<string, string> = {}, id?: string) => {
      const cluster = clusterOf(id);
      const running = relays.get(cluster.id);
      if (running) return running;
      const port = await freePort();
      const relay = await startService({
        name: relayName(cluster.id),
        args: [...RELAY_NODE_OPTIONS, join(repoRoot, 'cli', 'levelset.ts'), 'relay'],
        port,
        env: {
          ...RELAY_ENV,
          ...env,
          ...traceEnv('relay'),
          ...extraEnv,
          KUBECONFIG: multiCluster
            ? cluster.kubeconfigPath
            : (options.relayKubeconfigPath ?? options.kubeconfigPath),
          ...(multiCluster ? { RELAY_CLUSTER: cluster.id } : {}),
          RELAY_PORT: String(port),
        },
        readyPath: '/readyz',
        onLog: relayLogs.get(cluster.id),
      });
      relays.set(cluster.id, relay);
      writeState();
      return relay;
    };
    const stopRelay = async (id?: string) => {
      const ids = id === undefined ? [...relays.keys()] : [clusterOf(id).id];
      const stopping = ids.map((i) => relays.get(i));
      for (const i of ids) relays.delete(i);
      await Promise.all(stopping.map((r) => r?.stop()));
      writeState();
    };
    // A relay that started is stopped again when another part fails to start.
    started.push({
      stop: async () => {
        const running = [...relays.values()];
        relays.clear();
        await Promise.all(running.map((r) => r.stop()));
      },
    });
    // The relays start side by side: one cluster's slow start does not hold the others back.
    if (options.relay ?? true) {
      const starts = await Promise.allSettled(clusters.map((c) => startRelay({}, c.id)));
      const failed = starts.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
    } else writeState();

    const runResync = async (): Promise<ResyncReport> => {
      const res = await fetch(service('resync').url, { method: 'POST' });
      const text = await res.text();
      if (res.headers.get(FUNCTION_STATUS_HEADER) === 'crash' && /^Received SIG[A-Z]+$/.test(text))
        throw new ResyncInterruptedError(text);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new Error(`resync answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
      }
      if (!res.ok) throw new Error(`resync answered ${res.status}: ${JSON.stringify(body)}`);
      return body as ResyncReport;
    };
    let timer: NodeJS.Timeout | undefined;
    let stopping = false;
    if (options.resyncIntervalMs) {
      timer = setInterval(() => {
        runResync().then(
          (report) => {
            if (!stopping) options.onResync?.(report);
          },
          (err: Error) => {
            if (!stopping && !(err instanceof ResyncInterruptedError)) options.onResync?.(err);
          },
        );
      }, options.resyncIntervalMs);
      timer.unref();
    }
    const service = (name: 'reconcile' | 'resync') => {
      const f = functions.get(name);
      if (!f) throw new Error(`${name} is not running`);
      return f;
    };
    const ports = { reconcile: reconcile.port, resync: resync.port };
    return {
      mode: 'serverless',
      get emulator() {
        return emulator;
      },
      topology,
      pushProxy,
      resyncTopology,
      resyncPushProxy,
      watchdog,
      get reconcile() {
        return service('reconcile');
      },
      get resync() {
        return service('resync');
      },
      clusters: clusters.map((c) => c.id),
      relay: (id) => relays.get(clusterOf(id).id),
      startRelay,
      stopRelay,
      async killRelay(id) {
        const cluster = clusterOf(id).id;
        const r = relays.get(cluster);
        relays.delete(cluster);
        await r?.kill();
      },
      async restartFunction(name, restartOptions = {}) {
        const running = functions.get(name);
        await (restartOptions.signal === 'SIGTERM' ? running?.stop() : running?.kill());
        functions.delete(name);
        if (!restartOptions.killOnly) await startFunction(name, ports[name]);
      },
      async stopEmulator() {
        await emulator.stop();
      },
      async startEmulator() {
        emulator = await startPubSubEmulator({ port: Number(emulator.host.split(':')[1]) });
        await ensureTopology();
        await ensureResyncTopology();
      },
      runResync,
      env,
      async stop() {
        stopping = true;
        if (timer) clearInterval(timer);
        await stopRelay();
        if (options.stateDir) removeStackState(options.stateDir);
        await stopAll();
      },
    };
  } catch (err) {
    if (options.stateDir) removeStackState(options.stateDir);
    await stopAll();
    throw err;
  }
}
