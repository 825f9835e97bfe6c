/**
 * The whole Levelset pipeline on one machine: the Pub/Sub emulator with the keys topology, the
 * `reconcile` and `resync` functions under functions-framework, the relay, and a resync timer
 * standing in for Cloud Scheduler. `levelset dev` and the end-to-end tests both run it; the relay
 * runs as `levelset relay`, as in its container.
 */
import { join } from 'node:path';
import type { ResyncReport } from '../functions/resync.ts';
import { ensureKeysTopology, freePort, type PubSubEmulator, startPubSubEmulator } from './pubsub-emulator.ts';
import { type LogLine, repoRoot, type Service, startService } from './service.ts';
import { createLogFile, removeStackState, writeStackState } from './state.ts';

export interface LocalStackOptions {
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
  /** Start the relay with the stack; default true. */
  relay?: boolean;
  /** Every log line of every process, as it arrives. */
  onLog?: (service: string, line: LogLine) => void;
  /** Called after each timer-driven resync. */
  onResync?: (report: ResyncReport | Error) => void;
  /**
   * Where to write `stack.json` and `logs/<service>.jsonl` so that `levelset` commands find this
   * stack (local/state.ts); omitted: nothing is written.
   */
  stateDir?: string;
}

export interface LocalStack {
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

/**
 * Starts the pipeline. On failure, whatever was started is stopped again.
 * @throws {Error} from the part that failed to start (emulator missing, port taken, …).
 */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
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
    const logFiles = new Map<string, ReturnType<typeof createLogFile>>();
    const log = (name: string) => {
      const file = options.stateDir ? createLogFile(options.stateDir, name) : undefined;
      if (file) logFiles.set(name, file);
      return (line: LogLine) => {
        file?.append(line);
        options.onLog?.(name, line);
      };
    };
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
    const relayLog = log('relay');
    const writeState = () => {
      if (!options.stateDir) return;
      writeStackState(options.stateDir, {
        pid: process.pid,
        startedAt: new Date().toISOString(),
        kubeconfigPath: options.kubeconfigPath,
        emulatorHost: emulator.host,
        projectId: emulator.projectId,
        topology,
        reconcileUrl: reconcile.url,
        resyncUrl: resync.url,
        relayUrl: relay?.url,
        logs: Object.fromEntries([...logFiles].map(([name, file]) => [name, file.path])),
      });
    };
    const startRelay = async () => {
      if (relay) return relay;
      const port = await freePort();
      relay = await startService({
        name: 'relay',
        args: [join(repoRoot, 'cli', 'levelset.ts'), 'relay'],
        port,
        env: { ...env, RELAY_PORT: String(port) },
        readyPath: '/readyz',
        onLog: relayLog,
      });
      writeState();
      return relay;
    };
    const stopRelay = async () => {
      const r = relay;
      relay = undefined;
      await r?.stop();
      writeState();
    };
    if (options.relay ?? true) await startRelay();
    else writeState();

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
