/**
 * Drift, counted by where it was found: a reconcile of a key that the **resync** enqueued
 * (`reason: "resync"`) or that a **Cloud Audit Logs** entry enqueued (`reason: "audit-log"`,
 * functions/runtime/audit-log.ts) and that had to change something (`Result.changed`: a child created,
 * applied or pruned, a cloud resource recreated or corrected, or the status written) corrected drift
 * that no watch event announced. From the resync: an event the relay missed (a watch that silently
 * lost events, a relay outage) or a change outside the cluster that nothing reported; from the audit
 * log: a change made to a cloud resource outside Levelset, reported within seconds. It is counted per
 * controller and source and logged with the key, so an operator sees how much the resync still finds
 * on its own, and "the watch silently stopped" cannot go unnoticed.
 *
 * Where the count is read:
 * - the log line (WARNING, `drift: true`, `driftSource`, labels `controller` and `key`): on Google
 *   Cloud the log-based metric `logging.googleapis.com/user/levelset/drift_corrected`
 *   (terraform/monitoring.tf) counts these lines by controller and source, and its alert fires on
 *   the resync's; locally `levelset status` counts them in the stack's reconcile log. One line per
 *   corrected key: counted exactly once.
 * - the prom-client counter `levelset_drift_corrected_total{controller,source}` in the process's
 *   default registry, for a process that is scraped (Cloud Run instances are not: there the
 *   log-based metric is the count).
 */
import { Counter } from 'prom-client';
import type { Result } from '../../core/contract/controller.ts';
import type { Logger } from '../../core/log.ts';
import type { EnqueueReason } from '../../core/message.ts';

/** The name of the counter and, after `levelset/`, of Terraform's log-based metric (`drift_corrected`). */
export const DRIFT_CORRECTED_METRIC = 'levelset_drift_corrected_total';

/** Where drift was found: the enqueue reasons whose changing reconcile is drift. */
export const DRIFT_SOURCES = ['resync', 'audit-log'] as const satisfies readonly EnqueueReason[];
export type DriftSource = (typeof DRIFT_SOURCES)[number];

/** Keys whose resync- or audit-log-triggered reconcile changed something, by controller and source (default registry). */
export const driftCorrected = new Counter({
  name: DRIFT_CORRECTED_METRIC,
  help: 'Keys found drifted (their reconcile wrote something no watch event had announced), by controller and source (resync, audit-log).',
  labelNames: ['controller', 'source'] as const,
});

const isDriftSource = (reason: EnqueueReason | undefined): reason is DriftSource =>
  (DRIFT_SOURCES as readonly (EnqueueReason | undefined)[]).includes(reason);

const MESSAGES: Record<DriftSource, string> = {
  resync: 'drift corrected: the resync found this key not converged, and no watch event had announced it',
  'audit-log': 'drift corrected: a change made outside Levelset, reported by Cloud Audit Logs, was undone',
};

/**
 * Counts and logs drift: a reconcile of a resync's or an audit log entry's key that changed
 * something, or any reconcile that set back a cloud resource changed outside Kubernetes
 * (`Result.driftCorrected`), with `source` = the delivery's reason (`unknown` without one).
 * @returns `true` when it was drift
 */
export function recordDrift(
  controller: string,
  reason: EnqueueReason | undefined,
  result: Result | undefined,
  log: Logger,
): boolean {
  const found = isDriftSource(reason) && result?.changed;
  if (!found && !result?.driftCorrected) return false;
  const source = reason ?? 'unknown';
  driftCorrected.inc({ controller, source });
  log.warn(
    { drift: true, driftSource: source },
    isDriftSource(reason)
      ? MESSAGES[reason]
      : 'drift corrected: a cloud resource changed outside Kubernetes was set back',
  );
  return true;
}
