/**
 * The in-process mode's process, {@link runInProcess} (`levelset run --in-process`; the
 * `deploy/in-process` Deployment's entry, the relay bundle's `in-process.mjs`): configuration from
 * the environment, {@link startInProcess} with the project's controllers; SIGTERM/SIGINT stop the
 * informers, let the workers finish the queued keys, and exit 0.
 *
 * Environment: `KUBECONFIG` (else `~/.kube/config`, else in-cluster), `RELAY_PORT` (health/metrics,
 * default 8080), `RELAY_COLLAPSE_MS` (default 0: the workqueue's dirty set alone collapses),
 * `LEVELSET_WORKERS` (per controller, default 16), `LEVELSET_RESYNC_INTERVAL_MS` (default 600 000;
 * 0 disables), `LEVELSET_RETRY_BASE_MS` and `LEVELSET_RETRY_MAX_MS` (the retries' backoff, as the
 * functions read them: functions/runtime/retry.ts), `LOG_LEVEL`, and each controller's own
 * configuration (README "Configuration").
 * Drift from Cloud Audit Logs (functions/runtime/audit-log-subscription.ts): `LEVELSET_AUDIT_LOG_SUBSCRIPTION` (a subscription
 * of the audit log sink's topic, its id or full name; default none), with
 * `LEVELSET_FUNCTIONS_SERVICE_ACCOUNT` (the principal of this process's own writes, required then),
 * `GOOGLE_CLOUD_PROJECT` and `PUBSUB_EMULATOR_HOST` as the functions read them (core/config.ts).
 *
 * Exit codes: 0 after a clean shutdown; 1 on invalid configuration, a failed start, or a shutdown
 * that did not finish within `SHUTDOWN_TIMEOUT_MS` (relay/shutdown.ts).
 */
import * as z from 'zod';
import { readFunctionsConfig } from '../../core/config.ts';
import type { Controller } from '../../core/contract/controller.ts';
import { loadKubeConfig } from '../../core/kube.ts';
import { createLogger } from '../../core/log.ts';
import { startTracing } from '../../core/tracing.ts';
import type { Tracing } from '../../core/tracing-config.ts';
import { DEFAULT_PORT } from '../../relay/config.ts';
import { stopOnSignals } from '../../relay/shutdown.ts';
import {
  DEFAULT_IN_PROCESS_COLLAPSE_MS,
  DEFAULT_WORKERS,
  type InProcess,
  startInProcess,
} from './in-process.ts';
import { readRetryConfig } from './retry.ts';

/** Default period of the in-process resync, ms (10 min). */
export const DEFAULT_RESYNC_INTERVAL_MS = 600_000;

const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const envSchema = z.object({
  RELAY_PORT: optional(z.coerce.number().int().min(0).max(65_535)),
  RELAY_COLLAPSE_MS: optional(z.coerce.number().int().min(0).max(60_000)),
  LEVELSET_WORKERS: optional(z.coerce.number().int().min(1).max(1000)),
  LEVELSET_RESYNC_INTERVAL_MS: optional(z.coerce.number().int().min(0)),
  LOG_LEVEL: optional(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])),
  LEVELSET_AUDIT_LOG_SUBSCRIPTION: optional(z.string().min(1)),
});

/**
 * The audit log subscription's configuration, when `LEVELSET_AUDIT_LOG_SUBSCRIPTION` is set.
 * @throws {Error} when the functions' variables it needs are invalid, or the service account is not set
 */
function auditLogConfig(subscription: string | undefined) {
  if (subscription === undefined) return undefined;
  const { projectId, emulatorHost, serviceAccount } = readFunctionsConfig();
  if (!serviceAccount)
    throw new Error(
      'invalid in-process configuration: LEVELSET_AUDIT_LOG_SUBSCRIPTION needs LEVELSET_FUNCTIONS_SERVICE_ACCOUNT (the principal of its own writes)',
    );
  return { subscription, projectId, serviceAccount, ...(emulatorHost ? { emulatorHost } : {}) };
}

/** Runs `controllers` in this process until a signal stops it; a failure sets `process.exitCode` to 1. */
export async function runInProcess(controllers: readonly Controller[]): Promise<void> {
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) {
    // LOG_LEVEL may be the invalid variable: pino refuses unknown levels.
    if (parsed.error.issues.some((i) => i.path[0] === 'LOG_LEVEL')) process.env.LOG_LEVEL = 'info';
    const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    createLogger('relay').fatal(`invalid in-process configuration: ${issues.join('; ')}`);
    process.exitCode = 1;
    return;
  }
  const env = parsed.data;
  const logger = createLogger('relay');
  let tracing: Tracing;
  try {
    tracing = await startTracing('in-process');
  } catch (err) {
    logger.fatal(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
    return;
  }
  let running: InProcess;
  try {
    const auditLog = auditLogConfig(env.LEVELSET_AUDIT_LOG_SUBSCRIPTION);
    running = await startInProcess({
      ...(auditLog ? { auditLog } : {}),
      kubeConfig: loadKubeConfig(),
      controllers,
      port: env.RELAY_PORT ?? DEFAULT_PORT,
      collapseMs: env.RELAY_COLLAPSE_MS ?? DEFAULT_IN_PROCESS_COLLAPSE_MS,
      workers: env.LEVELSET_WORKERS ?? DEFAULT_WORKERS,
      resyncIntervalMs: env.LEVELSET_RESYNC_INTERVAL_MS ?? DEFAULT_RESYNC_INTERVAL_MS,
      backoff: readRetryConfig(),
      logger,
    });
  } catch (err) {
    logger.fatal({ err }, 'in-process mode failed to start');
    process.exitCode = 1;
    return;
  }
  stopOnSignals(logger, async () => {
    await running.stop();
    await tracing.shutdown();
    return 0;
  });
}
