/**
 * Runs a Levelset process of the local stack — a function under the functions-framework CLI, the
 * relay — as a child process with this process's Node binary, capturing its JSON log lines.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { isListenReport, LISTEN_REPORT_PORT_ENV, LISTEN_REPORT_PRELOAD } from './listen-report.ts';
import { packageRoot } from './module-path.ts';
import { PRELOAD } from './parent-watch.ts';
import { freePort } from './pubsub-emulator.ts';

/** The repository root (installed: the package's root, local/module-path.ts); the children's working directory. */
export const repoRoot = packageRoot;

/** A parsed log line (Cloud Logging shape); `raw` holds a line that is not JSON. */
export type LogLine = Record<string, unknown> & { severity?: string; message?: string; raw?: string };

export interface Service {
  name: string;
  port: number;
  /** `http://127.0.0.1:PORT/` */
  url: string;
  pid: number;
  /**
   * Its latest log lines, oldest first: at most {@link LOG_LINES_KEPT} × 2, the oldest dropped (every
   * line also goes to `onLog`, and the local stack writes them all to `logs/<service>.jsonl`).
   */
  logs: LogLine[];
  /** Stops the process: SIGTERM, then SIGKILL after 10 s. Idempotent. */
  stop(): Promise<void>;
  /** Kills the process at once (SIGKILL: no shutdown hook runs), and waits until it is gone. Fault injection. */
  kill(): Promise<void>;
}

/** The URL of a service listening on `port` of 127.0.0.1: `http://127.0.0.1:PORT/`. */
export const serviceUrl = (port: number): string => `http://127.0.0.1:${port}/`;

export interface ServiceOptions {
  /** A label for messages, e.g. `reconcile`. */
  name: string;
  /** Node arguments: a script and its flags. */
  args: string[];
  port: number;
  /** Environment on top of this process's. */
  env?: Record<string, string | undefined>;
  /** Path that answers 200 once the service is ready; omitted: ready when the port accepts connections. */
  readyPath?: string;
  onLog?: (line: LogLine) => void;
}

/**
 * Start deadline in ms. Only a start that fails waits it out; a Node process on a busy machine
 * (load 20 on 2 cores: the tests of several people) takes over 30 s to import its modules.
 */
const START_TIMEOUT_MS = 120_000;
/** How long {@link Service.stop} waits after SIGTERM before SIGKILL, ms. */
const GRACE_MS = 10_000;

/**
 * Log lines a {@link Service} keeps in memory (its `logs`): between this many and twice as many, the
 * newest. Every line kept for the process's life grew the parent without bound: the 30-minute soak
 * against a real kube-apiserver kept 5 114 warnings of `reconcile`'s, each with its error's stack,
 * and the soak's own heap floor rose 57 MiB/hour (issue 45).
 */
export const LOG_LINES_KEPT = 1_000;

/**
 * glibc's `MALLOC_ARENA_MAX` for every service the local stack starts (unless the environment sets
 * one): 2 arenas instead of glibc's default of 8 per core. Node's threads (libuv's pool, V8's
 * workers, the TLS and zlib work of the Kubernetes and Pub/Sub clients) each get an arena, and
 * memory freed in one is seldom returned: `reconcile`'s RSS grew outside its flat V8 heap and
 * external memory. Side by side in one run (two 14-minute soaks at once, issue 45): `reconcile`'s RSS
 * 235 → 236 MiB (peak 244) with glibc's default, 205 → 208 MiB (peak 228) with 2 arenas.
 */
export const MALLOC_ARENA_MAX = '2';

async function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Whether an HTTP server answers at `url` (any status; with `ok`, a 2xx), within `timeoutMs` when
 * given: the local stack's readiness probes, the watchdog's and the CLI's.
 */
export async function answers(
  url: string,
  options: { timeoutMs?: number; ok?: boolean } = {},
): Promise<boolean> {
  try {
    const res = await fetch(url, options.timeoutMs ? { signal: AbortSignal.timeout(options.timeoutMs) } : {});
    await res.body?.cancel();
    return !options.ok || res.ok;
  } catch {
    return false;
  }
}

/**
 * The port a service was to listen on was taken by another process between its choice
 * ({@link freePort}) and the service's listen (`EADDRINUSE`); the service was stopped.
 */
export class PortInUseError extends Error {
  override readonly name = 'PortInUseError';
  /** The port taken. */
  readonly port: number;
  constructor(service: string, port: number) {
    super(`${service} could not listen on port ${port}: another process took it (EADDRINUSE)`);
    this.port = port;
  }
}

/**
 * Starts a Node process and waits until it is ready: it reported its own listen on `port`
 * (local/listen-report.ts) and `readyPath` answers 200 (without one: the port accepts connections).
 * Another process answering on the port is never taken for the service.
 * @throws {PortInUseError} when another process holds `port`
 * @throws {Error} when it exits during start-up or is not ready by the deadline (it is then stopped).
 */
export async function startService(options: ServiceOptions): Promise<Service> {
  // Every child stops itself when this process dies, however it dies (local/parent-watch.ts), and
  // reports its listen on the port over its IPC channel (local/listen-report.ts).
  const child: ChildProcess = spawn(
    process.execPath,
    [`--import=${PRELOAD}`, `--import=${LISTEN_REPORT_PRELOAD}`, ...options.args],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        METADATA_SERVER_DETECTION: 'none',
        // glibc's malloc arenas: see MALLOC_ARENA_MAX's docstring; one set in the environment wins.
        MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? MALLOC_ARENA_MAX,
        ...options.env,
        [LISTEN_REPORT_PORT_ENV]: String(options.port),
      },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    },
  );
  let listening = false;
  let listenFailed: string | undefined;
  child.on('message', (message) => {
    if (!isListenReport(message)) return;
    if ('listening' in message) listening = true;
    else listenFailed = message.code;
  });
  const logs: LogLine[] = [];
  const take = (text: string) => {
    if (!text.trim()) return;
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      line = { raw: text };
    }
    logs.push(line);
    if (logs.length > 2 * LOG_LINES_KEPT) logs.splice(0, logs.length - LOG_LINES_KEPT);
    options.onLog?.(line);
  };
  if (child.stdout) createInterface({ input: child.stdout }).on('line', take);
  if (child.stderr) createInterface({ input: child.stderr }).on('line', take);
  let exited = false;
  const gone = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  // After the exit, once its stdio and IPC channel are drained (a report sent just before it died).
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const stop = async () => {
    if (exited) return;
    child.kill('SIGTERM');
    if (!(await Promise.race([gone.then(() => true), delay(GRACE_MS).then(() => false)]))) {
      child.kill('SIGKILL');
      await gone;
    }
  };
  const url = serviceUrl(options.port);
  const ready = options.readyPath
    ? () => answers(new URL(options.readyPath ?? '/', url).href, { ok: true })
    : () => portOpen(options.port);
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(listening && (await ready()))) {
    if (listenFailed === 'EADDRINUSE') {
      await stop();
      throw new PortInUseError(options.name, options.port);
    }
    if (exited) {
      await Promise.race([closed, delay(1_000)]);
      // The report, or failing it the error as the child logged it (a report can be lost when the
      // child exits in the same turn; functions-framework logs the listen error, then exits).
      if (listenFailed === 'EADDRINUSE' || logs.some((l) => /\bEADDRINUSE\b/.test(l.raw ?? l.message ?? '')))
        throw new PortInUseError(options.name, options.port);
      const tail = logs.slice(-5).map((l) => l.raw ?? l.message);
      throw new Error(`${options.name} exited during start-up: ${tail.join(' | ')}`);
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${options.name} was not ready on port ${options.port} in time`);
    }
    await delay(50);
  }
  // Its report came: the channel has done its part.
  if (child.connected) child.disconnect();
  const kill = async () => {
    if (exited) return;
    child.kill('SIGKILL');
    await gone;
  };
  return { name: options.name, port: options.port, url, pid: child.pid ?? 0, logs, stop, kill };
}

/** Starts on a port taken by another process (a {@link PortInUseError}) are tried again this often, each on a fresh port. */
const PORT_ATTEMPTS = 3;

/**
 * Runs `start` on `port` (default: a {@link freePort}) and, when another process took the port
 * meanwhile ({@link PortInUseError}), again on a fresh free port, {@link PORT_ATTEMPTS} times in all.
 * @returns what `start` returned
 * @throws the last {@link PortInUseError}, or any other error of `start` at once
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>, port?: number): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(attempt === 1 && port !== undefined ? port : await freePort());
    } catch (err) {
      if (!(err instanceof PortInUseError) || attempt >= PORT_ATTEMPTS) throw err;
    }
  }
}
