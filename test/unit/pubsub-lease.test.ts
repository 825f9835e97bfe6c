/**
 * The subscriber's lease extension delay (core/pubsub-lease.ts): never negative, never under its
 * floor, even when the modAcks' latency exceeds the ack deadline (an emulator stopped while messages
 * are leased); a normal latency keeps the library's formula.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LEASE_EXTENSION_FLOOR_MS, LeaseManager, nextLeaseExtensionMs } from '../../core/pubsub-lease.ts';

interface Internals {
  _getNextExtensionTimeoutMs(): number;
  _scheduleExtension(): void;
  _timer?: NodeJS.Timeout;
}

/** A LeaseManager over a subscriber stand-in with this ack deadline (s) and modAck latency (ms). */
const manager = (ackDeadline: number, modAckLatency: number) =>
  new LeaseManager({ ackDeadline, modAckLatency } as never) as unknown as Internals;

describe('the lease extension delay', () => {
  it("keeps the library's formula for a normal latency", () => {
    assert.equal(nextLeaseExtensionMs(10, 100, 0.5), (9000 - 100) * 0.5);
    assert.equal(nextLeaseExtensionMs(60, 1000, 1), 53_000);
  });

  it('is clamped at its floor when the latency exceeds 90 % of the deadline, or the jitter is near 0', () => {
    assert.equal(nextLeaseExtensionMs(10, 17_219, 0.9), LEASE_EXTENSION_FLOOR_MS);
    assert.equal(nextLeaseExtensionMs(10, 9000, 0.5), LEASE_EXTENSION_FLOOR_MS);
    assert.equal(nextLeaseExtensionMs(10, 100, 0), LEASE_EXTENSION_FLOOR_MS);
    assert.equal(nextLeaseExtensionMs(Number.NaN, 100, 0.5), LEASE_EXTENSION_FLOOR_MS);
  });

  it("replaces the library's computation: a slow modAck schedules no negative timer", async () => {
    const lease = manager(10, 60_000);
    for (let i = 0; i < 100; i++) assert.ok(lease._getNextExtensionTimeoutMs() >= LEASE_EXTENSION_FLOOR_MS);
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      lease._scheduleExtension();
      clearTimeout(lease._timer);
      // process.emitWarning emits on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(
      warnings.map((w) => w.name),
      [],
    );
  });
});
