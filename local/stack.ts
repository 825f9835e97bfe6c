/**
 * The whole Levelset pipeline on one machine: the Pub/Sub emulator with the keys topology, the
 * `reconcile` and `resync` functions under functions-framework, the relay, and a resync timer
 * standing in for Cloud Scheduler. `npm start` and the end-to-end tests both run it.
 *
 * With `mode: 'in-process'` it runs the same controllers the classic way instead: one process
 * (`relay/in-process-main.ts`: informers → workqueue → workers), no emulator, no functions.
 */
import { join } from 'node:path';
import type { ResyncReport } from '../functions/resync.ts';
import { ensureKeysTopology, freePort, type PubSubEmulator, startPubSubEmulator } from './pubsub-emulator.ts';
import { type LogLine, repoRoot, type Service, startService } from './service.ts';

/** How the controllers run: relay → Pub/Sub → functions, or one in-process controller manager. */
export type StackMode = 'serverless' | 'in-process';
export const STACK_MODES: readonly StackMode[] = ['serverless', 'in-process'];

export interface LocalStackOptions {
  /** Default `serverless`. */
  mode?: StackMode;
  /** The cluster every process talks to. */
  kubeconfigPath: string;
  /** Controller configuration for the functions and the relay (e.g. `LEVELSET_SOURCE_NAMESPACE`). */
  env?: Record<string, string>;
  /** Keys topic id; default `levelset-keys`. */
  topic?: string;
  /** The relay's collapse window in ms; default the relay's own (250). */
  collapseMs?: number;
  /** Period of the resync timer in ms; 0 (default) runs no timer. */
  resyncIntervalMs?: number;
  /** Start the relay (in-process: the in-process process) with the stack; default true. */
  relay?: boolean;
  /** Every log line of every process, as it arrives. */
  onLog?: (service: string, line: LogLine) => void;
  /** Called after each timer-driven resync. */
  onResync?: (report: ResyncReport | Error) => void;
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
  emulator: PubSubEmulator;
  /** Full names of the topics and subscriptions. */
  topology: Awaited<ReturnType<typeof ensureKeysTopology>>;
  reconcile: Service;
  resync: Service;
  /** The running relay, if any. */
  relay(): Service | undefined;
  startRelay(): Promise<Service>;
  /** Stops the relay (it flushes pending keys on SIGTERM). */
  stopRelay(): Promise<void>;
  /** Calls the `resync` function once, as Cloud Scheduler does. @throws on a non-2xx answer. */
  runResync(): Promise<ResyncReport>;
  /** The environment every process of the stack gets. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

const functionsCli = join(
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
    KUBECONFIG: options.kubeconfigPath,
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
  return { mode: 'in-process', relay: () => relay, startRelay, stopRelay, env, stop: stopRelay };
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
    const emulator = await startPubSubEmulator();
    started.push(emulator);
    const topic = options.topic ?? 'levelset-keys';
    const env: Record<string, string> = {
      ...options.env,
      KUBECONFIG: options.kubeconfigPath,
      PUBSUB_EMULATOR_HOST: emulator.host,
      GOOGLE_CLOUD_PROJECT: emulator.projectId,
      LEVELSET_TOPIC: topic,
      ...(options.collapseMs !== undefined ? { RELAY_COLLAPSE_MS: String(options.collapseMs) } : {}),
    };
    const log = (name: string) => (line: LogLine) => options.onLog?.(name, line);
    const startFunction = async (target: string) => {
      const port = await freePort();
      const service = await startService({
        name: target,
        args: [functionsCli, `--target=${target}`, `--port=${port}`, `--source=${repoRoot}`],
        port,
        env,
        onLog: log(target),
      });
      started.push(service);
      return service;
    };
    const [reconcile, resync] = await Promise.all([startFunction('reconcile'), startFunction('resync')]);
    const topology = await ensureKeysTopology({
      projectId: emulator.projectId,
      emulatorHost: emulator.host,
      topic,
      pushEndpoint: reconcile.url,
    });

    let relay: Service | undefined;
    const startRelay = async () => {
      if (relay) return relay;
      const port = await freePort();
      relay = await startService({
        name: 'relay',
        args: [join(repoRoot, 'relay', 'main.ts')],
        port,
        env: { ...env, RELAY_PORT: String(port) },
        readyPath: '/readyz',
        onLog: log('relay'),
      });
      return relay;
    };
    const stopRelay = async () => {
      const r = relay;
      relay = undefined;
      await r?.stop();
    };
    if (options.relay ?? true) await startRelay();

    const runResync = async (): Promise<ResyncReport> => {
      const res = await fetch(resync.url, { method: 'POST' });
      const body = (await res.json()) as ResyncReport;
      if (!res.ok) throw new Error(`resync answered ${res.status}: ${JSON.stringify(body)}`);
      return body;
    };
    let timer: NodeJS.Timeout | undefined;
    if (options.resyncIntervalMs) {
      timer = setInterval(() => {
        runResync().then(
          (report) => options.onResync?.(report),
          (err: Error) => options.onResync?.(err),
        );
      }, options.resyncIntervalMs);
      timer.unref();
    }
    return {
      mode: 'serverless',
      emulator,
      topology,
      reconcile,
      resync,
      relay: () => relay,
      startRelay,
      stopRelay,
      runResync,
      env,
      async stop() {
        if (timer) clearInterval(timer);
        await stopRelay();
        await stopAll();
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
