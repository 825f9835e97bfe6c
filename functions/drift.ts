/**
 * Missed events and changes made outside Kubernetes, counted: a reconcile of a key the **resync**
 * enqueued (`reason: "resync"`) that had to change something (`Result.changed`: a child created, applied or pruned, or the status
 * written) corrected drift that no watch event announced — an event the relay missed (a watch that
 * silently lost events, a relay outage) or a change made outside the API's events; and a reconcile
 * that recreated or set back a cloud resource (`Result.driftCorrected`, functions/kit/external.ts),
 * whatever brought its key, counted with that source (`resync`, `audit-log`, …). It is counted
 * per controller and logged with the key, so "the watch silently stopped" cannot go unnoticed.
 *
 * Where the count is read:
 * - the log line (WARNING, `drift: true`, labels `controller` and `key`): on Google Cloud the
 *   log-based metric `logging.googleapis.com/user/levelset/drift_corrected` (terraform/monitoring.tf)
 *   counts these lines by controller, and its alert fires on them; locally `levelset status` counts
 *   them in the stack's reconcile log. One line per corrected key: counted exactly once.
 * - the prom-client counter `levelset_drift_corrected_total{controller,source}` in the process's default
 *   registry, for a process that is scraped (Cloud Run instances are not: there the log-based metric
 *   is the count).
 */
import { Counter } from 'prom-client';
import type { Result } from './contract/controller.ts';
import type { Logger } from './log.ts';
import type { EnqueueReason } from './message.ts';

/** The name of the counter and, after `levelset/`, of Terraform's log-based metric (`drift_corrected`). */
export const DRIFT_CORRECTED_METRIC = 'levelset_drift_corrected_total';

/**
 * Keys whose reconcile corrected drift, by controller and by `source`: what brought the key (the
 * key message's `reason`: `resync`, or `audit-log` for a change Cloud Audit Logs announced; `watch`,
 * `requeue`, `manual` when a cloud resource was found changed on another occasion).
 */
export const driftCorrected = new Counter({
  name: DRIFT_CORRECTED_METRIC,
  help: 'Keys whose reconcile corrected drift (a resync key that had to write, or a cloud resource changed outside Kubernetes), by controller and source.',
  labelNames: ['controller', 'source'] as const,
});

/**
 * Counts and logs drift: a reconcile of a resync's key that changed something, or any reconcile
 * that set back a cloud resource changed outside Kubernetes (`Result.driftCorrected`). Counted
 * once per delivery, with `source` = the delivery's reason (`unknown` without one).
 * @returns `true` when it was drift
 */
export function recordDrift(
  controller: string,
  reason: EnqueueReason | undefined,
  result: Result | undefined,
  log: Logger,
): boolean {
  const missed = reason === 'resync' && result?.changed;
  if (!missed && !result?.driftCorrected) return false;
  const source = reason ?? 'unknown';
  driftCorrected.inc({ controller, source });
  log.warn(
    { drift: true, source },
    result?.driftCorrected
      ? 'drift corrected: a cloud resource changed outside Kubernetes was set back'
      : 'drift corrected: the resync found this key not converged, and no watch event had announced it',
  );
  return true;
}
