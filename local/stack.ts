/**
 * The whole Levelset pipeline on one machine: the Pub/Sub emulator with the keys topology, the
 * `reconcile` and `resync` functions under functions-framework, the relay, and a resync timer
 * standing in for Cloud Scheduler. `levelset dev` and the end-to-end tests both run it; the relay
 * runs as `levelset relay`, as in its container. Its services are local/stack-services.ts's, its
 * timer local/scheduler.ts's; the fault tests break them through local/stack-faults.ts.
 *
 * With `mode: 'in-process'` it runs the same controllers the classic way instead: one process
 * (`functions/runtime/in-process-main.ts`: informers → workqueue → workers), no emulator, no functions (with
 * `auditLog`, it reads the audit log topic of the emulator its `env` names).
 */
import { PubSub } from '@google-cloud/pubsub';
import pLimit from 'p-limit';
import { resyncTopicOf } from '../core/config.ts';
import { REGISTRY_ENV, registryPath } from '../core/project.ts';
import { emulatorClientOptions } from '../core/publish.ts';
import type { ResyncReport } from '../functions/runtime/resync.ts';
import { AUDIT_LOG_TOPIC, LOCAL_FUNCTIONS_SERVICE_ACCOUNT } from './audit-log.ts';
import { Composition, Launcher } from './composition.ts';
import { levelsetModule } from './module-path.ts';
import {
  EMULATOR_PROJECT_ID,
  emulatorHostOf,
  freePort,
  type KeysTopology,
  type PubSubEmulator,
  startPubSubEmulator,
} from './pubsub-emulator.ts';
import type { PushProxy, PushProxyOptions } from './push-proxy.ts';
import { callResync, resyncTimer } from './scheduler.ts';
import type { LogLine, Service } from './service.ts';
import {
  FUNCTION_CONCURRENCY,
  functionServices,
  pushSubscription,
  relayProcess,
  relayServices,
} from './stack-services.ts';
import { createStackFiles } from './state.ts';
import { startTcpProxy } from './tcp-proxy.ts';
import { type DeliveryWatchdog, type StallReport, startDeliveryWatchdog } from './watchdog.ts';

/** How the controllers run: relay → Pub/Sub → functions, or one in-process controller manager. */
export type StackMode = 'serverless' | 'in-process';
export const STACK_MODES: readonly StackMode[] = ['serverless', 'in-process'];

/**
 * Who pushes the serverless stack's keys to `reconcile`: `emulator`, the Pub/Sub emulator's push
 * subscriptions (two pushes at a time each, whatever the function answers); `cloud`, a model of
 * Cloud Pub/Sub's push (local/push-window.ts): the push proxies pull the keys' and the resync's
 * subscriptions and push with a slow-start window, and apply Pub/Sub's push backoff. Figures
 * measured with `cloud` are modelled.
 */
export type PushModel = 'emulator' | 'cloud';
export const PUSH_MODELS: readonly PushModel[] = ['emulator', 'cloud'];
/** The environment variable that picks the push model when the stack's options do not. */
export const PUSH_MODEL_ENV = 'LEVELSET_PUSH_MODEL';

/**
 * The push model of `option`, else of {@link PUSH_MODEL_ENV}, else `emulator`.
 * @throws {Error} for a value that is not one of {@link PUSH_MODELS}
 */
export function pushModelOf(option: PushModel | undefined, env = process.env): PushModel {
  const model = option ?? env[PUSH_MODEL_ENV] ?? 'emulator';
  if (!PUSH_MODELS.includes(model as PushModel))
    throw new Error(`push model "${model}": one of ${PUSH_MODELS.join(', ')}`);
  return model as PushModel;
}

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
   * functions/runtime/clusters.ts). Omitted: the one `default` cluster of `kubeconfigPath`.
   */
  clusters?: LocalCluster[];
  /** The relay's identity, when not `kubeconfigPath`'s (e.g. a least-privileged ServiceAccount). */
  relayKubeconfigPath?: string;
  /** The functions' identity, when not `kubeconfigPath`'s. */
  functionsKubeconfigPath?: string;
  /** The in-process mode's identity, when not `kubeconfigPath`'s. */
  inProcessKubeconfigPath?: string;
  /**
   * The registry module whose controllers the functions and the relays run (absolute path; given to
   * them as `LEVELSET_REGISTRY`, core/project.ts). Default: `LEVELSET_REGISTRY`, else the
   * registry of the current directory's project.
   */
  registry?: string;
  /** Controller configuration for the functions and the relay (e.g. `LEVELSET_SOURCE_NAMESPACE`). */
  env?: Record<string, string>;
  /** Keys topic id; default `levelset-keys`. */
  topic?: string;
  /** The relay's collapse window in ms; default the relay's own (250). */
  collapseMs?: number;
  /** Period of the resync timer in ms; 0 (default) runs no timer. */
  resyncIntervalMs?: number;
  /**
   * Serverless mode only: start the `resync` function at the stack's first resync
   * ({@link LocalStack.runResync}, the timer) instead of with the stack; default false. A stack
   * that never resyncs (most tests) then never starts it: a Node process that loads every
   * controller, ≈ 2-3 s of CPU. Until then {@link LocalStack.resync} throws.
   */
  resyncOnDemand?: boolean;
  /**
   * Attempts before a failing key is dead-lettered (5–100 in the cloud; fewer allowed here); default
   * 5. `reconcile` counts a key's attempts in its message and dead-letters it itself
   * (`LEVELSET_MAX_DELIVERY_ATTEMPTS`, functions/runtime/retry.ts); the local push proxy (local/push-proxy.ts)
   * counts the deliveries it answers non-2xx (a crash, `LEVELSET_RETRY=pubsub`) and dead-letters in
   * the emulator's stead.
   */
  maxDeliveryAttempts?: number;
  /**
   * Model Cloud Pub/Sub's push backoff in the keys subscription's push proxy
   * ({@link PushProxyOptions.pushBackoff}); default off, on with the `cloud` {@link pushModel}.
   */
  pushBackoff?: PushProxyOptions['pushBackoff'];
  /** Serverless mode only: who pushes keys to `reconcile` ({@link PushModel}); default {@link pushModelOf}'s. */
  pushModel?: PushModel;
  /**
   * The delivery watchdog's stall limit (local/watchdog.ts): keys published and not pushed for this
   * long while `reconcile` answers make it re-create the push subscription and re-publish them; ms,
   * default 30 000.
   */
  deliveryStallMs?: number;
  /** Called after each recovery of the watchdog. */
  onDeliveryStall?: (report: StallReport) => void;
  /**
   * Serverless mode only: run the delivery watchdog (local/watchdog.ts); default true. It reads every
   * key of the keys topic through a subscription of its own, so the emulator delivers each key twice
   * and the stack's process pulls each one: a guard of the local stand-in that Google Cloud does
   * not run. A benchmark of the serverless path turns it off (then {@link LocalStack.watchdog} is
   * `undefined`, and a stall of the emulator is not recovered from).
   */
  deliveryWatchdog?: boolean;
  /** Start the relay (in-process: the in-process process) with the stack; default true. */
  relay?: boolean;
  /**
   * Drift from Cloud Audit Logs: the audit log topic ({@link AUDIT_LOG_TOPIC}), where
   * local/audit-log.ts publishes the entries Cloud Audit Logs would, and what reads it. Serverless:
   * the `auditLog` function and a push subscription to it (functions/runtime/audit-log.ts). In-process: a
   * pull subscription ({@link AUDIT_LOG_PULL_SUBSCRIPTION}) the in-process process reads
   * (functions/runtime/audit-log-subscription.ts), in the emulator of `env.PUBSUB_EMULATOR_HOST` (required then: the
   * in-process mode runs no emulator of its own). Default false.
   */
  auditLog?: boolean;
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
   * Every process traces into `<stateDir>/traces/<service>.jsonl` (core/tracing.ts `file`, every
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
  /** Stops the in-process process (SIGTERM: it finishes the queued keys). */
  stopRelay(): Promise<void>;
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** Either mode's stack; narrow on `mode` for the serverless parts (functions, emulator). */
export type AnyLocalStack = LocalStack | InProcessStack;

export interface LocalStack {
  mode: 'serverless';
  /** The running emulator (a new one after its restart, local/stack-faults.ts). */
  readonly emulator: PubSubEmulator;
  /** Full names of the topics and subscriptions. */
  topology: KeysTopology;
  /** The push endpoint of the keys subscription, in front of `reconcile`: attempts, dead letters, delivery figures. */
  pushProxy: PushProxy;
  /** The resync's topic and subscription (`<topic>-resync`), pushing to the same `reconcile`. */
  resyncTopology: KeysTopology;
  /** The resync subscription's push endpoint, which forwards at most {@link RESYNC_PUSH_CONCURRENCY} at once. */
  resyncPushProxy: PushProxy;
  /** Backlog, last delivery, recoveries from stalls; `undefined` with `deliveryWatchdog: false`. */
  watchdog: DeliveryWatchdog | undefined;
  /** The running `reconcile` function (a new process after its restart, local/stack-faults.ts). */
  readonly reconcile: Service;
  /** The running `resync` function; with {@link LocalStackOptions.resyncOnDemand}, only after the first resync. */
  readonly resync: Service;
  /** The running `auditLog` function, with {@link LocalStackOptions.auditLog}. */
  readonly auditLog: Service | undefined;
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
  /**
   * Calls the `resync` function once, as Cloud Scheduler does (starting it first, with
   * {@link LocalStackOptions.resyncOnDemand}). @throws on a non-2xx answer.
   */
  runResync(): Promise<ResyncReport>;
  /** The environment every process of the stack gets. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * A stack's processes, for local/stack-faults.ts to break (`levelset dev` never does): the relays
 * (in-process: the one process, whatever the cluster), and in serverless mode the functions and
 * the emulator.
 */
export type StackProcesses = {
  relay(cluster?: string): Launcher<Service, [extra?: Record<string, string>]>;
} & (
  | { mode: 'in-process' }
  | {
      mode: 'serverless';
      functions: Record<'reconcile' | 'resync', Launcher<Service>>;
      /** Stops the emulator; its topology and messages are lost with it. */
      stopEmulator(): Promise<void>;
      /** Starts it again at the stack's emulator address, its topology in it first ({@link restartedEmulator}). */
      startEmulator(): Promise<void>;
    }
);

/** Each running stack's processes, kept off the stack itself. */
const processesOf = new WeakMap<AnyLocalStack, StackProcesses>();

/**
 * The processes of `stack`, for local/stack-faults.ts.
 * @throws {Error} for a stack {@link startLocalStack} did not start
 */
export function stackProcesses(stack: AnyLocalStack): StackProcesses {
  const processes = processesOf.get(stack);
  if (!processes) throw new Error('not a stack startLocalStack started');
  return processes;
}

/** Resync keys the local stack pushes to `reconcile` at once (its resync subscription's push rate). */
export const RESYNC_PUSH_CONCURRENCY = 4;

/** The in-process mode's pull subscription of the audit log topic ({@link LocalStackOptions.auditLog}). */
export const AUDIT_LOG_PULL_SUBSCRIPTION = `${AUDIT_LOG_TOPIC}-in-process`;

/**
 * The in-process mode's audit log topic and pull subscription in the emulator of `env`, and the
 * environment that makes the in-process process read it (functions/runtime/in-process-main.ts).
 * @throws {Error} when `env` names no emulator
 */
async function inProcessAuditLog(env: Record<string, string> = {}): Promise<Record<string, string>> {
  const emulatorHost = env.PUBSUB_EMULATOR_HOST;
  if (!emulatorHost)
    throw new Error('auditLog in the in-process mode needs env.PUBSUB_EMULATOR_HOST: it runs no emulator');
  const pubsub = new PubSub({ projectId: EMULATOR_PROJECT_ID, ...emulatorClientOptions(emulatorHost) });
  const ignoreExists = (err: { code?: number }) => {
    if (err.code !== 6) throw err; // gRPC ALREADY_EXISTS
  };
  try {
    await pubsub.createTopic(AUDIT_LOG_TOPIC).catch(ignoreExists);
    await pubsub.topic(AUDIT_LOG_TOPIC).createSubscription(AUDIT_LOG_PULL_SUBSCRIPTION).catch(ignoreExists);
  } finally {
    await pubsub.close();
  }
  return {
    GOOGLE_CLOUD_PROJECT: EMULATOR_PROJECT_ID,
    LEVELSET_AUDIT_LOG_SUBSCRIPTION: AUDIT_LOG_PULL_SUBSCRIPTION,
    LEVELSET_FUNCTIONS_SERVICE_ACCOUNT: LOCAL_FUNCTIONS_SERVICE_ACCOUNT,
  };
}

/** Starts the in-process mode's process, tagging its outcome lines `reconcile` and the others `relay`. */
async function startInProcessStack(options: LocalStackOptions): Promise<InProcessStack> {
  const env: Record<string, string> = {
    ...(options.auditLog ? await inProcessAuditLog(options.env) : {}),
    ...options.env,
    KUBECONFIG: options.inProcessKubeconfigPath ?? options.kubeconfigPath,
    LEVELSET_RESYNC_INTERVAL_MS: String(options.resyncIntervalMs ?? 0),
    ...(options.collapseMs !== undefined ? { RELAY_COLLAPSE_MS: String(options.collapseMs) } : {}),
  };
  const onLog = (line: LogLine) => {
    const service = (line.serviceContext as { service?: string } | undefined)?.service;
    options.onLog?.(service === 'levelset-functions' ? 'reconcile' : 'relay', line);
  };
  const args = [levelsetModule('cli/levelset.ts'), 'run', '--in-process'];
  const relay = relayProcess('in-process', args, () => env, onLog);
  if (options.relay ?? true) await relay.start();
  const [running, startRelay, stop] = [() => relay.running, () => relay.start(), () => relay.stop()];
  const stack = { mode: 'in-process', relay: running, startRelay, stopRelay: stop, env, stop } as const;
  processesOf.set(stack, { mode: 'in-process', relay: () => relay });
  return stack;
}

/**
 * Starts the pipeline. On failure, whatever was started is stopped again.
 * @throws {Error} from the part that failed to start (emulator missing, port taken, …).
 */
export async function startLocalStack(
  options: LocalStackOptions & { mode?: 'serverless' },
): Promise<LocalStack>;
export async function startLocalStack(options: LocalStackOptions): Promise<AnyLocalStack>;
export async function startLocalStack(stackOptions: LocalStackOptions): Promise<AnyLocalStack> {
  // The children run from Levelset's folder: they are told the project's registry.
  const registry = { [REGISTRY_ENV]: stackOptions.registry ?? registryPath() };
  const options = { ...stackOptions, env: { ...registry, ...stackOptions.env } };
  if (options.mode === 'in-process') return startInProcessStack(options);
  const services = new Composition();
  try {
    return await startServerlessStack(options, services);
  } catch (err) {
    await services.stop();
    throw err;
  }
}

/**
 * A Pub/Sub emulator started again (after local/stack-faults.ts stopped it) at `port`, the
 * address every process of the stack was given, with its topology already in it, as Pub/Sub never
 * loses its topics and subscriptions (the emulator keeps them in memory only). The new emulator
 * listens on a port of its own, `topology` creates them there (given its `host:port`), and only then
 * does a TCP proxy (local/tcp-proxy.ts) listen on `port` and forward to it. An emulator started on
 * `port` itself took publishes between the creation of its topic and that of the topic's
 * subscriptions: Pub/Sub accepts such a message and delivers it to no subscription, so a key the
 * relay published again was lost (decision 82). Its `stop` closes the proxy, then the emulator.
 * @throws what the emulator's start or `topology` throws (the new emulator stopped), or
 * `EADDRINUSE` when another process took `port` meanwhile
 */
async function restartedEmulator(
  port: number,
  topology: (emulatorHost: string) => Promise<void>,
): Promise<PubSubEmulator> {
  const ownPort = await freePort();
  const own = await startPubSubEmulator({ port: ownPort });
  try {
    await topology(own.host);
    const proxy = await startTcpProxy('127.0.0.1', ownPort, { listenPort: port });
    return {
      ...own,
      host: emulatorHostOf(port),
      async stop() {
        await proxy.stop();
        await own.stop();
      },
    };
  } catch (err) {
    await own.stop();
    throw err;
  }
}

/**
 * Starts the serverless stack's services into `services`, in these stages (the stop's order is the
 * reverse): the emulator and the functions side by side (neither needs the other to start: the
 * functions learn the emulator's address from their environment, and reach it only when they
 * publish), the keys' and the resync's push subscriptions, the delivery watchdog, a relay per
 * cluster, the resync timer.
 */
async function startServerlessStack(options: LocalStackOptions, services: Composition): Promise<LocalStack> {
  // Its port is chosen first, for the functions' environment; started again (local/stack-faults.ts),
  // it is reached at the same port (restartedEmulator), so that every address of it stays valid.
  const emulatorPort = await freePort();
  let emulator: PubSubEmulator | undefined;
  const emulatorService = new Launcher(async (topology?: (emulatorHost: string) => Promise<void>) => {
    emulator = topology
      ? await restartedEmulator(emulatorPort, topology)
      : await startPubSubEmulator({ port: emulatorPort });
    return emulator;
  });
  const topic = options.topic ?? 'levelset-keys';
  const env: Record<string, string> = {
    ...options.env,
    KUBECONFIG: options.kubeconfigPath,
    PUBSUB_EMULATOR_HOST: emulatorHostOf(emulatorPort),
    GOOGLE_CLOUD_PROJECT: EMULATOR_PROJECT_ID,
    LEVELSET_TOPIC: topic,
    ...(options.collapseMs !== undefined ? { RELAY_COLLAPSE_MS: String(options.collapseMs) } : {}),
  };
  const tracing = options.stateDir !== undefined && (options.tracing ?? true);
  const files = createStackFiles(options.stateDir, tracing, options.onLog);
  services.add(files.logs);
  const functions = await functionServices(options, env, files);
  // Started with the stack, or added (stopped with it) to be started by the first resync.
  if (options.resyncOnDemand) services.add(functions.resync);
  await services.start(
    emulatorService,
    functions.reconcile,
    ...(options.resyncOnDemand ? [] : [functions.resync]),
    ...(functions.auditLog ? [functions.auditLog] : []),
  );
  const started = emulatorService.running;
  if (!started) throw new Error('the Pub/Sub emulator stopped during start-up');
  const cloudPush = pushModelOf(options.pushModel) === 'cloud';
  const proxy = {
    target: functions.urls.reconcile,
    maxDeliveryAttempts: options.maxDeliveryAttempts,
    // One instance's request slots, shared by the live and the resync subscriptions' pushes.
    instanceSlots: pLimit(FUNCTION_CONCURRENCY),
    // The `cloud` push model: each proxy pulls its subscription and pushes with a slow-start window.
    ...(cloudPush ? { pushWindow: true } : {}),
  };
  const pushBackoff = options.pushBackoff ?? (cloudPush ? true : undefined);
  const keys = pushSubscription(started, topic, {
    ...proxy,
    ...(pushBackoff !== undefined ? { pushBackoff } : {}),
  });
  const pushProxy = await services.launch(keys);
  // The resync's own topic and subscription (core/config.ts, resyncTopicOf), to the same
  // function through a proxy of its own that bounds its push rate; its keys carry no ordering key
  // (functions/runtime/resync.ts RESYNC_PUBLISHING), as in terraform/pubsub.tf.
  const resyncProxy = { ...proxy, maxConcurrentPushes: RESYNC_PUSH_CONCURRENCY };
  const resync = pushSubscription(started, resyncTopicOf(topic), resyncProxy, false);
  const resyncPushProxy = await services.launch(resync);
  // The audit log sink's topic and its push subscription to `auditLog` (terraform/audit-log.tf).
  const auditLog = options.auditLog
    ? pushSubscription(
        started,
        AUDIT_LOG_TOPIC,
        { target: functions.urls.auditLog, maxDeliveryAttempts: options.maxDeliveryAttempts },
        false,
        `${AUDIT_LOG_TOPIC}-push`,
      )
    : undefined;
  if (auditLog) await services.launch(auditLog);
  const watchdog =
    options.deliveryWatchdog === false
      ? undefined
      : await services.launch(() =>
          startDeliveryWatchdog({
            emulatorHost: started.host,
            projectId: started.projectId,
            topic,
            pushProxy,
            functionUrl: () => functions.urls.reconcile,
            pushSubscription: keys.topology.subscription,
            createPushSubscription: () => keys.start(),
            stallMs: options.deliveryStallMs,
            onStall: options.onDeliveryStall,
          }),
        );
  if (watchdog) pushProxy.serveStatus(() => watchdog.status());
  services.add(files.state);
  const relays = relayServices(options, env, files);
  // The relays start side by side: one cluster's slow start does not hold the others back.
  if (options.relay ?? true) await services.start(...relays.map((r) => r.service));
  else services.add(...relays.map((r) => r.service));
  const relayOf = (id: string | undefined) => {
    const found = id === undefined ? relays[0] : relays.find((r) => r.id === id);
    if (!found) throw new Error(`unknown cluster "${id}": one of ${relays.map((r) => r.id).join(', ')}`);
    return found;
  };
  const writeState = () => {
    const clusters = relays.map((r) => [
      r.id,
      { kubeconfigPath: r.kubeconfigPath, relayUrl: r.service.running?.url },
    ]);
    files.write({
      kubeconfigPath: options.kubeconfigPath,
      emulatorHost: started.host,
      projectId: started.projectId,
      topology: keys.topology,
      reconcileUrl: functions.urls.reconcile,
      resyncUrl: functions.urls.resync,
      deliveriesUrl: new URL('/deliveries', pushProxy.url).href,
      reconcileMetricsUrl: functions.urls.reconcileMetrics,
      resyncMetricsUrl: functions.urls.resyncMetrics,
      relayUrl: relays[0]?.service.running?.url,
      ...(options.clusters?.length ? { clusters: Object.fromEntries(clusters) } : {}),
    });
  };
  const functionOf = (name: 'reconcile' | 'resync') => {
    const running = functions[name].running;
    if (!running)
      throw new Error(
        `${name} is not running${name === 'resync' && options.resyncOnDemand ? ' (resyncOnDemand: it starts at the first resync)' : ''}`,
      );
    return running;
  };
  // One start of an on-demand resync function, whichever resync asks first.
  let resyncStarting: Promise<Service> | undefined;
  const resyncFunction = async (): Promise<Service> => {
    if (functions.resync.running) return functions.resync.running;
    if (!resyncStarting)
      resyncStarting = functions.resync
        .start()
        .then((started) => {
          writeState(); // its port may have moved at this first start (functionServices)
          return started;
        })
        .finally(() => {
          resyncStarting = undefined;
        });
    return resyncStarting;
  };
  const runResync = async () => callResync((await resyncFunction()).url);
  await services.start(resyncTimer(options.resyncIntervalMs ?? 0, runResync, options.onResync));
  writeState();
  const stack: LocalStack = {
    mode: 'serverless',
    get emulator() {
      return emulator ?? started;
    },
    topology: keys.topology,
    pushProxy,
    resyncTopology: resync.topology,
    resyncPushProxy,
    watchdog,
    get reconcile() {
      return functionOf('reconcile');
    },
    get resync() {
      return functionOf('resync');
    },
    get auditLog() {
      return functions.auditLog?.running;
    },
    clusters: relays.map((r) => r.id),
    relay: (id) => relayOf(id).service.running,
    async startRelay(extraEnv = {}, id) {
      const relay = await relayOf(id).service.start(extraEnv);
      writeState();
      return relay;
    },
    async stopRelay(id) {
      await Promise.all((id === undefined ? relays : [relayOf(id)]).map((r) => r.service.stop()));
      writeState();
    },
    runResync,
    env,
    stop: () => services.stop(),
  };
  processesOf.set(stack, {
    mode: 'serverless',
    relay: (id) => relayOf(id).service,
    functions,
    stopEmulator: () => emulatorService.stop(),
    async startEmulator() {
      await emulatorService.start(async (emulatorHost) => {
        await keys.start(emulatorHost);
        await resync.start(emulatorHost);
        await auditLog?.start(emulatorHost);
      });
    },
  });
  return stack;
}
