/**
 * Small helpers the bench's sections share: timing, a bounded pool, a cluster-wide watch that
 * resolves waiters, CRDs, child processes and /proc reads.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  type KubeConfig,
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';
import { createLogger } from '../core/log.ts';
import type { EnqueueReason, KeyMessage } from '../core/message.ts';
import { PRELOAD } from '../local/parent-watch.ts';
import { repoRoot } from '../local/service.ts';
import { waitFor } from '../test/support/wait.ts';

export const exec = promisify(execFile);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Wall-clock time in ms since the epoch, with performance.now()'s resolution. */
export const now = () => performance.timeOrigin + performance.now();
/** Request options for a JSON merge patch. */
export const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** A logger that writes nothing (the bench's in-process relays and pipelines). */
export const quiet = createLogger('bench', { write: () => {} });

const started = performance.now();
/** A progress line on stderr, with the seconds since the bench started. */
export const log = (s: string) =>
  process.stderr.write(`[bench ${Math.round((performance.now() - started) / 1000)}s] ${s}\n`);

/** Runs `fn` with at most `concurrency` calls at once over `items` (the kit's bounded map). */
export { forEachLimit as pool } from '../functions/kit/concurrency.ts';

/** A cluster-wide watch that resolves waiters when a predicate on the latest objects holds. */
export function watchObjects(kc: KubeConfig, path: string) {
  const objects = new Map<string, KubernetesObject>();
  const waiters = new Set<{ check: () => boolean; resolve: (t: number) => void }>();
  let abort: { abort(): void } | undefined;
  const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace}/${o.metadata?.name}`;
  let stopped = false;
  const onEvent = (type: string, o: KubernetesObject) => {
    if (type === 'BOOKMARK') return;
    if (type === 'DELETED') objects.delete(keyOf(o));
    else objects.set(keyOf(o), o);
    const t = now();
    for (const w of waiters)
      if (w.check()) {
        waiters.delete(w);
        w.resolve(t);
      }
  };
  // Bookmarks keep an idle watch alive (undici ends a response body silent for 300 s); a watch that
  // ends anyway is started again (without resourceVersion: every current object comes as ADDED).
  const start = (): Promise<void> =>
    new Watch(kc)
      .watch(path, { allowWatchBookmarks: true }, onEvent, () => {
        if (!stopped) setTimeout(() => void start(), 100);
      })
      .then((c) => {
        abort = c;
      });
  const ready = start();
  return {
    ready,
    get: (ns: string, name: string) => objects.get(`${ns}/${name}`),
    all: () => objects.values(),
    /** Resolves with the time (ms since the epoch) at which `check` first held. */
    until(check: () => boolean, timeoutMs = 60_000): Promise<number> {
      if (check()) return Promise.resolve(now());
      return new Promise((resolve, reject) => {
        const w = { check, resolve };
        waiters.add(w);
        setTimeout(() => {
          if (waiters.delete(w)) reject(new Error(`timed out watching ${path}`));
        }, timeoutMs).unref();
      });
    },
    stop: () => {
      stopped = true;
      abort?.abort();
    },
  };
}

export type ObjectWatch = ReturnType<typeof watchObjects>;

/** Whether an object's Ready condition is True for its generation (a Foo's, a Topic's): the kit's. */
export { isReady } from '../functions/kit/ready.ts';

/** The Foo group/version/plural, for CustomObjectsApi calls. */
export const FOOS = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos' } as const;

/**
 * `kubectl apply`s the CRD of each controller in `controllers`, in one call: a shipped controller's
 * `functions/controllers/<name>/crd.yaml`, else the example project's `examples/<name>/controllers/<name>/crd.yaml`.
 */
export async function applyCrds(kubeconfigPath: string, controllers: readonly string[]): Promise<void> {
  const crdOf = (name: string) => {
    const shipped = join(repoRoot, 'functions', 'controllers', name, 'crd.yaml');
    return existsSync(shipped) ? shipped : join(repoRoot, 'examples', name, 'controllers', name, 'crd.yaml');
  };
  await exec('kubectl', [
    '--kubeconfig',
    kubeconfigPath,
    'apply',
    ...controllers.flatMap((name) => ['-f', crdOf(name)]),
  ]);
}

/** Waits until `list` answers (a CRD just applied is served); throws after 30 s. */
export async function waitForServed(list: () => Promise<unknown>): Promise<void> {
  await waitFor(() => list().then(() => true), {
    timeoutMs: 30_000,
    intervalMs: 100,
    message: 'the CRD served',
  });
}

/** A field of /proc/<pid>/status in KiB (e.g. `VmRSS`, `VmHWM`: the peak RSS); 0 when unreadable. */
export function procStatusKib(pid: number, field: string): number {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return Number(m?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * CPU time (user + system, seconds) a process and its descendants have used so far, from
 * /proc/<pid>/stat (fields 14 and 15: utime and stime in clock ticks, 100 per second on Linux) and
 * /proc/<pid>/task/<pid>/children. A process that exited is not counted (0); on a system without
 * /proc every figure is 0.
 */
export function processTreeCpuSeconds(pid: number): number {
  let ticks = 0;
  const visit = (p: number) => {
    try {
      const fields = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      ticks += Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
      const children = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim();
      for (const c of children ? children.split(' ') : []) visit(Number(c));
    } catch {
      // Gone meanwhile: its time is no longer readable.
    }
  };
  visit(pid);
  return ticks / 100;
}

/**
 * Runs Node on `args` (a bench child: bench/child.ts, the informer children) with `env` added to
 * this process's environment, and parses the last line it prints (their one JSON line).
 */
export async function jsonChild<T>(args: string[], env: Record<string, string> = {}): Promise<T> {
  // It stops itself when the bench dies (local/parent-watch.ts).
  const { stdout } = await exec(process.execPath, [`--import=${PRELOAD}`, ...args], {
    env: { ...process.env, ...env },
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1) as string) as T;
}

/** Sends SIGTERM to `child` unless it has exited, and waits for its exit. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** Starts `server` on a free port of 127.0.0.1; its URL. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

/** A key message (core/message.ts, v1) enqueued now. */
export function keyMessage(
  controller: string,
  namespace: string,
  name: string,
  reason: EnqueueReason = 'watch',
): KeyMessage {
  return { v: 1, controller, namespace, name, reason, enqueuedAt: new Date().toISOString() };
}
