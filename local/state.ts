/**
 * The local stack's state file, `<stateDir>/stack.json`, and its log files,
 * `<stateDir>/logs/<service>.jsonl`: how `levelset` commands find a running `levelset dev`
 * (emulator, topics, function and relay URLs, kubeconfig) and follow its processes' log lines.
 *
 * With tracing, `<stateDir>/traces/<service>.jsonl` holds each process's spans (`levelset trace`).
 *
 * The state directory is `LEVELSET_STATE_DIR`, default `<repository>/.levelset`.
 */
import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { findProject } from '../core/project.ts';
import type { LogLine } from './service.ts';

/**
 * The state directory: `LEVELSET_STATE_DIR`, default `<project>/.levelset` (the project of the
 * current directory, core/project.ts; outside one, the current directory's).
 */
export function stateDirectory(env: NodeJS.ProcessEnv = process.env): string {
  if (env.LEVELSET_STATE_DIR) return env.LEVELSET_STATE_DIR;
  let root: string;
  try {
    root = findProject().root;
  } catch {
    root = process.cwd();
  }
  return join(root, '.levelset');
}

export const stackStateSchema = z.object({
  /** PID of the process that runs the stack (`levelset dev`, a test). */
  pid: z.number().int(),
  startedAt: z.iso.datetime(),
  kubeconfigPath: z.string(),
  emulatorHost: z.string(),
  projectId: z.string(),
  /** Full resource names (`projects/<p>/topics/<t>`, `projects/<p>/subscriptions/<s>`). */
  topology: z.object({
    topic: z.string(),
    deadLetterTopic: z.string(),
    subscription: z.string(),
    deadLetterSubscription: z.string(),
  }),
  reconcileUrl: z.string(),
  resyncUrl: z.string(),
  /** `GET` answers the delivery watchdog's figures (local/watchdog.ts `DeliveryStatus`) as JSON. */
  deliveriesUrl: z.string().optional(),
  /**
   * The `reconcile` function's Prometheus metrics (core/metrics.ts: reconciles by controller and
   * outcome, their duration, drift), `GET` in text format.
   */
  reconcileMetricsUrl: z.string().optional(),
  /** The `resync` function's Prometheus metrics: prom-client's process defaults (its heap, its RSS). */
  resyncMetricsUrl: z.string().optional(),
  /** `undefined` while the relay is stopped. With several clusters: the first cluster's relay. */
  relayUrl: z.string().optional(),
  /**
   * With several clusters (`levelset dev --clusters 2`): each cluster id's kubeconfig and relay
   * (`relayUrl` `undefined` while it is stopped). Absent for the single `default` cluster.
   */
  clusters: z
    .record(z.string(), z.object({ kubeconfigPath: z.string(), relayUrl: z.string().optional() }))
    .optional(),
  /** Service name → its log file (one JSON log line per line). */
  logs: z.record(z.string(), z.string()),
  /**
   * Service name → its trace file (OTLP/JSON lines, core/tracing.ts), what `levelset trace`
   * reads; absent when the stack does not trace.
   */
  traces: z.record(z.string(), z.string()).optional(),
});
export type StackState = z.infer<typeof stackStateSchema>;

/** Path of the state file in `dir`. */
export function stackStatePath(dir: string): string {
  return join(dir, 'stack.json');
}

/** Path of a service's log file in `dir`. */
export function logFilePath(dir: string, service: string): string {
  return join(dir, 'logs', `${service}.jsonl`);
}

/** Path of a service's trace file in `dir` (OTLP/JSON lines, written by the service itself). */
export function traceFilePath(dir: string, service: string): string {
  return join(dir, 'traces', `${service}.jsonl`);
}

/** Writes the state file (creating `dir`); atomically, so a reader never sees half a file. */
export function writeStackState(dir: string, state: StackState): void {
  mkdirSync(dir, { recursive: true });
  const temporary = `${stackStatePath(dir)}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(stackStateSchema.parse(state), null, 2)}\n`);
  renameSync(temporary, stackStatePath(dir));
}

/** Whether the process that wrote `state` still runs (a stack killed with SIGKILL leaves its file behind). */
export function stackProcessAlive(state: StackState): boolean {
  try {
    process.kill(state.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the state file; the log files stay for reading afterwards. */
export function removeStackState(dir: string): void {
  rmSync(stackStatePath(dir), { force: true });
}

/**
 * Reads the state file of `dir`.
 * @returns `undefined` when there is none
 * @throws {Error} when it exists but is not a valid state file
 */
export function readStackState(dir: string): StackState | undefined {
  let text: string;
  try {
    text = readFileSync(stackStatePath(dir), 'utf8');
  } catch {
    return undefined;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = stackStateSchema.safeParse(json);
  if (!parsed.success) throw new Error(`${stackStatePath(dir)} is not a Levelset stack state file`);
  return parsed.data;
}

/**
 * The files of one stack in `dir`, none when `dir` is `undefined`: a log file per service (each line
 * also to `onLog`), a trace file per service with `tracing`, and the state file. `logs` closes the
 * log files and `state` removes the state file, each stopped in its place of the stack's stop order.
 */
export function createStackFiles(
  dir: string | undefined,
  tracing: boolean,
  onLog: ((service: string, line: LogLine) => void) | undefined,
) {
  /** Each service's log file, by how to close it. */
  const logFiles = new Map<string, () => void>();
  const traceFiles = new Map<string, string>();
  return {
    /**
     * The log of `service`: each line to `onLog` and to its log file, truncated now and kept open,
     * one JSON line written synchronously (a reader sees a line as soon as it was logged); lines
     * logged after the stop of `logs` (a service logging while the stack stops) are dropped.
     */
    log(service: string): (line: LogLine) => void {
      let fd: number | undefined;
      if (dir) {
        mkdirSync(join(dir, 'logs'), { recursive: true });
        fd = openSync(logFilePath(dir, service), 'w');
        logFiles.set(service, () => {
          if (fd !== undefined) closeSync(fd);
          fd = undefined;
        });
      }
      return (line) => {
        if (fd !== undefined) writeSync(fd, `${JSON.stringify(line)}\n`);
        onLog?.(service, line);
      };
    },
    /** The tracing environment of `service`: its own file (a previous stack's spans removed), every trace exported. */
    traceEnv(service: string): Record<string, string> {
      if (!tracing || !dir) return {};
      const file = traceFilePath(dir, service);
      if (!traceFiles.has(service)) rmSync(file, { force: true });
      traceFiles.set(service, file);
      return { LEVELSET_TRACING: 'file', LEVELSET_TRACE_FILE: file, LEVELSET_TRACE_SAMPLE_RATIO: '1' };
    },
    /** Writes the state file: `state`, this process, the log and the trace files. */
    write(state: Omit<StackState, 'pid' | 'startedAt' | 'logs' | 'traces'>): void {
      if (!dir) return;
      const logs = Object.fromEntries([...logFiles.keys()].map((name) => [name, logFilePath(dir, name)]));
      const traces = tracing ? { traces: Object.fromEntries(traceFiles) } : {};
      const header = { pid: process.pid, startedAt: new Date().toISOString() };
      writeStackState(dir, { ...header, ...state, logs, ...traces });
    },
    logs: {
      stop: async () => {
        for (const close of logFiles.values()) close();
      },
    },
    state: {
      stop: async () => {
        if (dir) removeStackState(dir);
      },
    },
  };
}
