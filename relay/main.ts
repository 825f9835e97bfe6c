/**
 * The relay process, {@link runRelay}: configuration from the environment ({@link loadRelayConfig}),
 * the shared key publisher, {@link startRelay} with the project's controllers; SIGTERM/SIGINT stop
 * the informers, publish the keys still in the collapse window, flush within
 * `STOP_FLUSH_TIMEOUT_MS` (relay/relay.ts), and exit. Its callers:
 * `levelset relay` (the project's registry, core/project.ts) and the relay bundle's entry,
 * which imports the registry (`levelset build`, cli/build/index.ts).
 *
 * Exit codes: 0 after a clean shutdown; 1 on invalid configuration, a failed start, a shutdown
 * that left keys unpublished (the flush's deadline passed or a publish failed: logged with their
 * count; the next resync enqueues them again), or one that did not finish within
 * `SHUTDOWN_TIMEOUT_MS` (relay/shutdown.ts).
 */

import type { Controller } from '../core/contract/controller.ts';
import { loadKubeConfig } from '../core/kube.ts';
import { createLogger } from '../core/log.ts';
import { createKeyPublisher } from '../core/publish.ts';
import { startTracing } from '../core/tracing.ts';
import type { Tracing } from '../core/tracing-config.ts';
import { ConfigError, loadRelayConfig } from './config.ts';
import { createRelayMetrics, processMetricsRegistry } from './metrics.ts';
import { startRelay } from './relay.ts';
import { stopOnSignals } from './shutdown.ts';

function failStart(message: string, err: unknown): void {
  // LOG_LEVEL may be the invalid variable: pino refuses unknown levels, so use one it accepts.
  if (
    !['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(process.env.LOG_LEVEL ?? 'info')
  ) {
    process.env.LOG_LEVEL = 'info';
  }
  // A configuration error is fully described by its message; a stack trace would only add noise.
  createLogger('relay').fatal(err instanceof ConfigError ? {} : { err }, message);
  process.exitCode = 1;
}

/** Runs the relay of `controllers` until a signal stops it; a failure sets `process.exitCode` to 1 (the file's docstring). */
export async function runRelay(controllers: readonly Controller[]): Promise<void> {
  let config: ReturnType<typeof loadRelayConfig>;
  try {
    config = loadRelayConfig();
  } catch (err) {
    failStart(err instanceof Error ? err.message : String(err), err);
    return;
  }
  let tracing: Tracing;
  try {
    tracing = await startTracing('relay');
  } catch (err) {
    failStart(err instanceof Error ? err.message : String(err), new ConfigError(String(err)));
    return;
  }
  const logger = createLogger('relay').child({ cluster: config.cluster });
  let kubeConfig: ReturnType<typeof loadKubeConfig>;
  try {
    kubeConfig = loadKubeConfig();
  } catch (err) {
    logger.fatal({ err }, `no Kubernetes configuration: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
    return;
  }
  const publisher = createKeyPublisher({
    projectId: config.projectId,
    topic: config.topic,
    emulatorHost: config.emulatorHost,
    logger,
    timeoutMs: config.publishTimeoutMs,
  });
  let relay: Awaited<ReturnType<typeof startRelay>>;
  try {
    relay = await startRelay({
      kubeConfig,
      controllers,
      cluster: config.cluster,
      publisher,
      collapseMs: config.collapseMs,
      port: config.port,
      logger,
      informers: { watchSilenceTimeoutMs: config.watchSilenceTimeoutMs },
      retryBufferKeys: config.retryBufferKeys,
      maxInFlight: config.maxInFlight,
      metrics: createRelayMetrics(processMetricsRegistry()),
    });
  } catch (err) {
    logger.fatal({ err }, 'relay failed to start');
    await publisher.close().catch(() => {});
    process.exitCode = 1;
    return;
  }

  stopOnSignals(logger, async () => {
    const { flushed, unpublished } = await relay.stop();
    // After the flush's deadline the Pub/Sub client still holds the publishes given up on: its
    // close would wait for them.
    if (flushed) await publisher.close();
    await tracing.shutdown();
    return flushed && unpublished === 0 ? 0 : 1;
  });
}
