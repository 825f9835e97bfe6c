/**
 * Graceful shutdown of a long-running process (the relay, the in-process mode), as Kubernetes
 * expects of a container: on SIGTERM or SIGINT, run `stop` once and exit with the code it resolves
 * to; exit 1 when it fails or takes longer than {@link SHUTDOWN_TIMEOUT_MS} (inside
 * the default 30 s `terminationGracePeriodSeconds`).
 */
import type { Logger } from '../core/log.ts';

/** The longest a shutdown may take before the process exits 1, in ms. */
export const SHUTDOWN_TIMEOUT_MS = 25_000;

/**
 * Installs the SIGTERM/SIGINT handlers. A second signal during the shutdown is ignored, the
 * shutdown's deadline bounds it: Ctrl-C in a terminal sends SIGINT to the local stack's children
 * too, and the stack's stop then sends them SIGTERM.
 * @param stop stops the work (informers, queues, publishers) and resolves to the exit code (1 when
 *   work was dropped); its rejection is logged, then exit 1.
 */
export function stopOnSignals(logger: Logger, stop: () => Promise<number>): void {
  let shuttingDown = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs: SHUTDOWN_TIMEOUT_MS }, 'shutdown timed out');
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS);
    timer.unref();
    stop().then(
      (code) => {
        clearTimeout(timer);
        process.exit(code);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}
