/**
 * Missed events, counted: a reconcile of a key the **resync** enqueued (`reason: "resync"`) that
 * had to change something (`Result.changed`: a child created, applied or pruned, or the status
 * written) corrected drift that no watch event announced — an event the relay missed (a watch that
 * silently lost events, a relay outage) or a change made outside the API's events. It is counted
 * per controller and logged with the key, so "the watch silently stopped" cannot go unnoticed.
 *
 * Where the count is read:
 * - the log line (WARNING, `drift: true`, labels `controller` and `key`): on Google Cloud the
 *   log-based metric `logging.googleapis.com/user/levelset/drift_corrected` (terraform/monitoring.tf)
 *   counts these lines by controller, and its alert fires on them; locally `levelset status` counts
 *   them in the stack's reconcile log. One line per corrected key: counted exactly once.
 * - the prom-client counter `levelset_drift_corrected_total{controller}` in the process's default
 *   registry, for a process that is scraped (Cloud Run instances are not: there the log-based metric
 *   is the count).
 */
import { Counter } from 'prom-client';
import type { Result } from './contract/controller.ts';
import type { Logger } from './log.ts';
import type { EnqueueReason } from './message.ts';

/** The name of the counter and, after `levelset/`, of Terraform's log-based metric (`drift_corrected`). */
export const DRIFT_CORRECTED_METRIC = 'levelset_drift_corrected_total';

/** Keys whose resync-triggered reconcile changed something, by controller (default registry). */
export const driftCorrected = new Counter({
  name: DRIFT_CORRECTED_METRIC,
  help: 'Keys a resync found drifted (its reconcile wrote something no watch event had announced), by controller.',
  labelNames: ['controller'] as const,
});

/**
 * Counts and logs drift when a reconcile of a resync's key changed something.
 * @returns `true` when it was drift
 */
export function recordDrift(
  controller: string,
  reason: EnqueueReason | undefined,
  result: Result | undefined,
  log: Logger,
): boolean {
  if (reason !== 'resync' || !result?.changed) return false;
  driftCorrected.inc({ controller });
  log.warn(
    { drift: true },
    'drift corrected: the resync found this key not converged, and no watch event had announced it',
  );
  return true;
}
