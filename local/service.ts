/**
 * Runs a Levelset process of the local stack — a function under the functions-framework CLI, the
 * relay — as a child process with this process's Node binary, capturing its JSON log lines.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import { constants as osConstants } from 'node:os';
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
 * glibc's malloc settings for every Node process of the local stack (unless the environment sets
 * one: each set there wins), the soak's own process ({@link relaunchWithAllocatorEnv}), the relay's
 * image (relay/Dockerfile) and the functions on Cloud Run (terraform/functions.tf `function_env`).
 * glibc reads them at a process's start only.
 * - `MALLOC_ARENA_MAX` 2: at most 2 arenas instead of glibc's default of 8 per core. Node's threads
 *   (libuv's pool, V8's workers, the TLS and zlib work of the Kubernetes and Pub/Sub clients) each
 *   get an arena, and memory freed in one is seldom returned: `reconcile`'s RSS grew outside its
 *   flat V8 heap and external memory. Side by side in one run (two 14-minute soaks at once, issue
 *   45): `reconcile`'s RSS 235 → 236 MiB (peak 244) with glibc's default, 205 → 208 MiB (peak 228)
 *   with 2 arenas.
 * - `MALLOC_MMAP_THRESHOLD_` and `MALLOC_TRIM_THRESHOLD_` 128 KiB (glibc's own starting values,
 *   fixed): a block of at least 128 KiB is its own `mmap`, unmapped at its `free`, and the arena's
 *   free top is returned beyond 128 KiB. Without them glibc raises both thresholds to the largest
 *   block freed so far (the mmap threshold up to 32 MiB, the trim threshold to twice it), so after
 *   the first large Buffer or string write is freed, every later one up to that size is carved from
 *   the main arena, whose top is then kept: the soak's process's main arena (`[heap]` of
 *   `/proc/<pid>/smaps`) rose 140 → 168 MiB in 8 minutes with glibc's default thresholds, and
 *   stayed at 101 MiB with these, side by side (decision 74).
 */
export const ALLOCATOR_ENV = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
} as const;

/**
 * {@link ALLOCATOR_ENV} under `env` (default this process's environment): each variable `env` sets
 * wins. The environment a child process of the stack starts with.
 */
export function allocatorEnv(
  env: NodeJS.ProcessEnv = process.env,
): Record<keyof typeof ALLOCATOR_ENV, string> {
  return {
    MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? ALLOCATOR_ENV.MALLOC_ARENA_MAX,
    MALLOC_MMAP_THRESHOLD_: env.MALLOC_MMAP_THRESHOLD_ ?? ALLOCATOR_ENV.MALLOC_MMAP_THRESHOLD_,
    MALLOC_TRIM_THRESHOLD_: env.MALLOC_TRIM_THRESHOLD_ ?? ALLOCATOR_ENV.MALLOC_TRIM_THRESHOLD_,
  };
}

/**
 * Runs this script again, as a child with this process's Node flags, arguments and standard streams,
 * when this process started without one of {@link ALLOCATOR_ENV}'s variables (glibc reads them at
 * start-up only, so a process cannot give them to itself) or without one of `nodeFlags` (V8 sizes
 * its heap at start-up too): for a long-lived Node entry point, such as the soak (soak/run.ts), that
 * must run with the allocator its stack's services run with. A flag counts as given when
 * `process.execArgv` holds one of its name (`--max-semi-space-size=16` stands for
 * `--max-semi-space-size=8`: the one given wins, as the environment's variables do). Call it before
 * the script starts anything or handles a signal. SIGTERM and SIGHUP sent to this process are
 * passed on to the child; SIGINT is ignored here, as a terminal's Ctrl-C reaches both (one process
 * group).
 * @param nodeFlags Node or V8 flags of the form `--name=value`.
 * @returns `undefined` when the environment and the flags are already there (go on: this process is
 *   the one to run); otherwise the child's exit code once it has exited (128 + the signal's number
 *   when a signal ended it), for this process to exit with.
 */
export async function relaunchWithAllocatorEnv(
  nodeFlags: readonly string[] = [],
): Promise<number | undefined> {
  const flagName = (flag: string) => flag.split('=')[0];
  const given = new Set(process.execArgv.map(flagName));
  const missingFlags = nodeFlags.filter((flag) => !given.has(flagName(flag)));
  if (!missingFlags.length && Object.keys(ALLOCATOR_ENV).every((name) => process.env[name] !== undefined))
    return undefined;
  const child = spawn(process.execPath, [...missingFlags, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, ...allocatorEnv() },
  });
  const pass = (signal: NodeJS.Signals) => child.kill(signal);
  const ignore = () => {};
  process.on('SIGTERM', pass).on('SIGHUP', pass).on('SIGINT', ignore);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  process.off('SIGTERM', pass).off('SIGHUP', pass).off('SIGINT', ignore);
  return code ?? 128 + (signal ? osConstants.signals[signal] : 0);
}

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
        // glibc's malloc settings: see ALLOCATOR_ENV's docstring; each one set in the environment wins.
        ...allocatorEnv(),
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
