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
  MalformedMessageError,
} from '../../core/message.ts';
import { deadLetterAttributes, readRetryConfig, retryDecision } from '../../functions/runtime/retry.ts';

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
    assert.deepEqual(retryDecision(config, 1), { action: 'requeue', attempt: 2, delayMs: 100 });
    assert.deepEqual(retryDecision(config, 2), { action: 'requeue', attempt: 3, delayMs: 200 });
    assert.deepEqual(retryDecision(config, 2, 7000), { action: 'requeue', attempt: 3, delayMs: 7000 });
    assert.deepEqual(retryDecision(config, 3), { action: 'dead-letter' });
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
