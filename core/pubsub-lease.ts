/**
 * The lease extension delay of `@google-cloud/pubsub`'s subscriber, clamped (imported for its effect
 * by every module that opens a streaming pull: local/push-proxy.ts, local/watchdog.ts,
 * functions/runtime/audit-log-subscription.ts).
 *
 * The library schedules a subscriber's next lease extension after `(ackDeadline × 0.9 − modAckLatency)
 * × jitter` ms (lease-manager.js `_getNextExtensionTimeoutMs`), where `modAckLatency` is the 99th
 * percentile of every modAck's latency so far. A modAck held up for longer than 90 % of the ack
 * deadline (the emulator stopped while messages are leased, the soak's emulator-restart fault) makes
 * the delay negative: Node warns (`TimeoutNegativeWarning`) and fires the timer after 1 ms, and as the
 * percentile never forgets, the extensions then run back to back while messages are leased. The
 * upstream fix (googleapis/google-cloud-node pull request 9243, a clamp at 0) is not released in
 * @google-cloud/pubsub 6.3.0; this module replaces the method with {@link nextLeaseExtensionMs}.
 */
import { LeaseManager } from '@google-cloud/pubsub/build/src/lease-manager.js';

/** The least delay between two lease extensions, ms: one second, the resolution of the library's latency histogram. */
export const LEASE_EXTENSION_FLOOR_MS = 1_000;

/**
 * ms until a subscriber's next lease extension: the library's `(ackDeadline × 0.9 − modAckLatency) ×
 * jitter`, never under {@link LEASE_EXTENSION_FLOOR_MS}.
 * @param ackDeadlineS the subscriber's ack deadline, s
 * @param modAckLatencyMs the 99th percentile of its modAcks' latency (with its batching time), ms
 * @param jitter a number in [0, 1)
 */
export function nextLeaseExtensionMs(ackDeadlineS: number, modAckLatencyMs: number, jitter: number): number {
  const ms = (ackDeadlineS * 1000 * 0.9 - modAckLatencyMs) * jitter;
  return Number.isFinite(ms) ? Math.max(LEASE_EXTENSION_FLOOR_MS, ms) : LEASE_EXTENSION_FLOOR_MS;
}

interface LeaseManagerInternals {
  _subscriber: { ackDeadline: number; modAckLatency: number };
  _getNextExtensionTimeoutMs(): number;
}

const prototype = LeaseManager.prototype as unknown as LeaseManagerInternals;
// A later version without the method computes its delay otherwise: left alone (the unit test fails then).
if (typeof prototype._getNextExtensionTimeoutMs === 'function')
  prototype._getNextExtensionTimeoutMs = function (this: LeaseManagerInternals) {
    return nextLeaseExtensionMs(this._subscriber.ackDeadline, this._subscriber.modAckLatency, Math.random());
  };

export { LeaseManager };
