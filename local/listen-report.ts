/**
 * How {@link startService} (local/service.ts) knows that what answers on a service's port is its own
 * child. The port is chosen free ({@link freePort}) and then left unbound until the child listens on
 * it, which on a busy machine takes seconds (it imports its modules first): meanwhile any other
 * process may bind it (another stack's relay, push proxy or API server, or a port chosen the same
 * way). A readiness probe of the port alone then takes that foreign process for the service, and
 * the child dies of `EADDRINUSE` unnoticed: the stack runs, pushing its keys to a stranger.
 *
 * So each child of `startService` preloads {@link LISTEN_REPORT_PRELOAD}, which reports over the
 * child's IPC channel (Node's `child_process` `ipc` stdio) its listen on the port named by
 * {@link LISTEN_REPORT_PORT_ENV}, or the error of that listen, as seen on Node's built-in
 * `net.server.listen` tracing channel (node:diagnostics_channel).
 */
import { subscribe } from 'node:diagnostics_channel';
import type { Server } from 'node:net';
import { pathToFileURL } from 'node:url';
import { levelsetModule } from './module-path.ts';

/** The environment variable naming the port whose listen the child reports. */
export const LISTEN_REPORT_PORT_ENV = 'LEVELSET_LISTEN_REPORT_PORT';

/** The `--import` module that makes a Node child report its listen ({@link reportListen}). */
export const LISTEN_REPORT_PRELOAD = pathToFileURL(levelsetModule('local/report-listen.ts')).href;

/** What the child sends: it listens on `port`, or its listen on `port` failed with `code` (e.g. `EADDRINUSE`). */
export type ListenReport = { listening: number } | { listenFailed: number; code: string };

/** Whether an IPC message is a {@link ListenReport}. */
export function isListenReport(message: unknown): message is ListenReport {
  const m = message as Record<string, unknown> | null;
  return (
    typeof m === 'object' &&
    m !== null &&
    (typeof m.listening === 'number' || (typeof m.listenFailed === 'number' && typeof m.code === 'string'))
  );
}

/**
 * Reports, over this process's IPC channel, each listen on `port` and each failed one; does
 * nothing without a channel. The channel does not keep the process alive.
 */
export function reportListen(port: number): void {
  if (!process.send) return;
  process.channel?.unref();
  const send = (report: ListenReport) => {
    if (process.connected) process.send?.(report);
  };
  subscribe('tracing:net.server.listen:asyncEnd', (message) => {
    const address = (message as { server: Server }).server.address();
    if (typeof address === 'object' && address?.port === port) send({ listening: port });
  });
  subscribe('tracing:net.server.listen:error', (message) => {
    const error = (message as { error: NodeJS.ErrnoException & { port?: number } }).error;
    if (error.port === port) send({ listenFailed: port, code: error.code ?? 'unknown' });
  });
}
