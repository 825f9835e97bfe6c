/**
 * Graceful shutdown of a long-running process (the relay, the in-process mode), as Kubernetes
 * expects of a container: on SIGTERM or SIGINT, run `stop` once and exit 0; exit 1 when it fails or
 * takes longer than {@link SHUTDOWN_TIMEOUT_MS} (inside the default 30 s
 * `terminationGracePeriodSeconds`).
 */
import type { Logger } from '../functions/log.ts';

/** The longest a shutdown may take before the process exits 1, in ms. */
export const SHUTDOWN_TIMEOUT_MS = 25_000;

/**
 * Installs the SIGTERM/SIGINT handlers. A second signal during the shutdown is ignored.
 * @param stop stops the work (informers, queues, publishers); its rejection is logged, then exit 1.
 */
export function stopOnSignals(logger: Logger, stop: () => Promise<void>): void {
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
      () => {
        clearTimeout(timer);
        process.exit(0);
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
