import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { itemExponentialBackoffMs } from '../../core/backoff.ts';
import { RetryAfterError } from '../../core/contract/retry-after.ts';
import { FailedWritesError, isTransient, retryAfterMsOf } from '../../core/k8s/errors.ts';
import {
  ATTEMPT_ATTRIBUTE,
  DEAD_LETTER_ATTRIBUTES,
  decodePushEnvelope,
  FIRST_DELIVERY,
  MalformedMessageError,
  RATE_LIMITED_ATTRIBUTE,
  type RetryCounts,
} from '../../core/message.ts';
import {
  deadLetterAttributes,
  nextRetry,
  readRetryConfig,
  retryDecision,
} from '../../functions/runtime/retry.ts';

const keyData = Buffer.from(
  JSON.stringify({
    v: 1,
    controller: 'foo',
    namespace: 'ns',
    name: 'a',
    reason: 'watch',
    enqueuedAt: '2026-01-01T00:00:00Z',
  }),
).toString('base64');
const envelope = (attributes: Record<string, string>) => ({
  message: { data: keyData, attributes, messageId: '1' },
});

describe('retry of a failed key (functions/runtime/retry.ts)', () => {
  it("backs off as client-go's ItemExponentialFailureRateLimiter: 5 ms doubling per failure, capped at 1000 s", () => {
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => itemExponentialBackoffMs(n, 5, 1_000_000)),
      [5, 10, 20, 40],
    );
    assert.equal(itemExponentialBackoffMs(30, 5, 1_000_000), 1_000_000);
  });

  it('requeues as the next attempt after the backoff or the asked delay, dead-letters at the last attempt', () => {
    const config = readRetryConfig({ LEVELSET_MAX_DELIVERY_ATTEMPTS: '3', LEVELSET_RETRY_BASE_MS: '100' });
    const at = (attempt: number, rateLimited = 0): RetryCounts => ({ attempt, rateLimited });
    assert.deepEqual(retryDecision(config, at(1), {}), { action: 'requeue', counts: at(2), delayMs: 100 });
    assert.deepEqual(retryDecision(config, at(2), {}), { action: 'requeue', counts: at(3), delayMs: 200 });
    assert.deepEqual(retryDecision(config, at(2), { retryAfterMs: 7000 }), {
      action: 'requeue',
      counts: at(3),
      delayMs: 7000,
    });
    assert.deepEqual(retryDecision(config, at(3), {}), { action: 'dead-letter' });
    // A rate limit is never given up on: at the last attempt, and past any number of rate limits.
    assert.deepEqual(retryDecision(config, at(3, 40), { rateLimited: true, retryAfterMs: 1000 }), {
      action: 'requeue',
      counts: at(3, 41),
      delayMs: 1000,
    });
    assert.deepEqual(retryDecision(config, at(3, 40), {}), { action: 'dead-letter' });
  });

  it('nextRetry: one backoff over failures and rate limits alike, from the counts alone; the asked delay wins', () => {
    const backoff = { baseMs: 5, maxMs: 1_000_000 };
    // Rate limits without a delay named: 5, 10, 20, 40 ms, each delivery from the counts the previous wrote.
    const limited = { rateLimited: true };
    let counts = FIRST_DELIVERY;
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      const next = nextRetry(backoff, counts, limited);
      delays.push(next.delayMs);
      counts = next.counts;
    }
    assert.deepEqual(delays, [5, 10, 20, 40]);
    assert.deepEqual(counts, { attempt: 1, rateLimited: 4 }, 'rate limits spend no attempt');
    // A failure after them continues the backoff and counts an attempt, keeping the rate limits.
    assert.deepEqual(nextRetry(backoff, counts, {}), { counts: { attempt: 2, rateLimited: 4 }, delayMs: 80 });
    // The same counts give the same delay, whoever computes it: a pure function of the message.
    assert.deepEqual(nextRetry(backoff, { attempt: 3, rateLimited: 2 }, limited), {
      counts: { attempt: 3, rateLimited: 3 },
      delayMs: 80,
    });
    // The delay the server named, whatever the counts; the cap otherwise.
    assert.equal(
      nextRetry(backoff, { attempt: 1, rateLimited: 9 }, { ...limited, retryAfterMs: 3000 }).delayMs,
      3000,
    );
    assert.equal(nextRetry(backoff, { attempt: 1, rateLimited: 99 }, limited).delayMs, 1_000_000);
  });

  it("configuration: client-go's and Pub/Sub's defaults, the dead-letter topic of the keys topic, clear errors", () => {
    assert.deepEqual(readRetryConfig({ LEVELSET_TOPIC: 'k' }), {
      mode: 'requeue',
      maxAttempts: 5,
      baseMs: 5,
      maxMs: 1_000_000,
      deadLetterTopic: 'k-dead-letter',
    });
    assert.throws(
      () => readRetryConfig({ LEVELSET_MAX_DELIVERY_ATTEMPTS: 'many' }),
      /LEVELSET_MAX_DELIVERY_ATTEMPTS/,
    );
    assert.throws(() => readRetryConfig({ LEVELSET_RETRY: 'sqs' }), /LEVELSET_RETRY/);
    assert.throws(
      () => readRetryConfig({ LEVELSET_RETRY_BASE_MS: '10', LEVELSET_RETRY_MAX_MS: '1' }),
      /BASE_MS is above/,
    );
  });

  it("writes the dead letter's attributes as Pub/Sub's dead-lettering does, over the message's own", () => {
    const attributes = deadLetterAttributes(
      { controller: 'foo', [ATTEMPT_ATTRIBUTE]: '5' },
      {
        attempts: 5,
        subscription: 'projects/p/subscriptions/levelset-keys-reconcile',
        projectId: 'p',
        publishTime: '2026-01-01T00:00:01Z',
      },
    );
    assert.deepEqual(attributes, {
      controller: 'foo',
      [ATTEMPT_ATTRIBUTE]: '5',
      [DEAD_LETTER_ATTRIBUTES.deliveryAttempts]: '5',
      [DEAD_LETTER_ATTRIBUTES.sourceSubscription]: 'levelset-keys-reconcile',
      [DEAD_LETTER_ATTRIBUTES.sourceSubscriptionProject]: 'p',
      [DEAD_LETTER_ATTRIBUTES.sourcePublishTime]: '2026-01-01T00:00:01Z',
    });
  });

  it('reads the attempt attribute: absent is the first attempt, anything but 1–100 is malformed', () => {
    assert.equal(decodePushEnvelope(envelope({})).attempt, 1);
    assert.equal(decodePushEnvelope(envelope({ [ATTEMPT_ATTRIBUTE]: '4' })).attempt, 4);
    for (const bad of ['0', '-1', '01', 'x', '101', '2.5'])
      assert.throws(
        () => decodePushEnvelope(envelope({ [ATTEMPT_ATTRIBUTE]: bad })),
        MalformedMessageError,
        bad,
      );
  });

  it('reads the rateLimited attribute: absent is none (every message of before), anything but a whole number from 1 is malformed', () => {
    assert.equal(decodePushEnvelope(envelope({})).rateLimited, 0);
    const both = decodePushEnvelope(envelope({ [ATTEMPT_ATTRIBUTE]: '2', [RATE_LIMITED_ATTRIBUTE]: '250' }));
    assert.deepEqual([both.attempt, both.rateLimited], [2, 250]);
    for (const bad of ['0', '-1', '01', 'x', '2.5', '1000000000'])
      assert.throws(
        () => decodePushEnvelope(envelope({ [RATE_LIMITED_ATTRIBUTE]: bad })),
        MalformedMessageError,
        bad,
      );
  });

  it('honours a Retry-After: a RetryAfterError, a Kubernetes 429 or 503 in delta-seconds; transient', () => {
    const asked = new RetryAfterError('RESOURCE_EXHAUSTED', 2500);
    assert.equal(retryAfterMsOf(asked), 2500);
    assert.equal(isTransient(asked), true);
    assert.throws(() => new RetryAfterError('x', -1), RangeError);
    const tooMany = new ApiException(429, 'Too Many Requests', '{}', { 'retry-after': '3' });
    assert.equal(retryAfterMsOf(tooMany), 3000);
    assert.equal(retryAfterMsOf(new ApiException(503, 'Unavailable', '{}', { 'Retry-After': '1' })), 1000);
    assert.equal(
      retryAfterMsOf(new ApiException(429, 'x', '{}', { 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' })),
      undefined,
    );
    assert.equal(retryAfterMsOf(new ApiException(500, 'x', '{}', { 'retry-after': '3' })), undefined);
    assert.equal(retryAfterMsOf(new Error('x')), undefined);
    // Wrapped, or one of independent writes: the longest asked.
    assert.equal(retryAfterMsOf(new Error('reading the source', { cause: tooMany })), 3000);
    const writes = new FailedWritesError('copies of s/x', [
      { op: 'update', target: 'a', status: 429, error: tooMany },
      { op: 'update', target: 'b', status: 429, error: asked },
      { op: 'update', target: 'c', status: 500, error: new ApiException(500, 'x', '{}', {}) },
    ]);
    assert.equal(retryAfterMsOf(writes), 3000);
  });
});
