// Quota and rate-limit answers sorted by the kit (functions/kit/rate-limits.ts; their backoff is
// the runtime's, test/unit/retry.test.ts) and the Go durations of `levelset.dev/reconcile-interval`. The answers end to end (the emulator through the gRPC proxy) are
// test/controllers/topic-policies.test.ts and topic-pipeline.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { parseGoDuration } from '../../functions/kit/external.ts';
import { rateLimitOf } from '../../functions/kit/rate-limits.ts';

describe('rateLimitOf', () => {
  it('Kubernetes 429: the Retry-After seconds, in ms; without one, no delay named', () => {
    assert.deepEqual(rateLimitOf(new ApiException(429, 'Too Many Requests', '', { 'retry-after': '3' })), {
      retryAfterMs: 3000,
    });
    assert.deepEqual(rateLimitOf(new ApiException(429, 'Too Many Requests', '', {})), {});
    assert.equal(rateLimitOf(new ApiException(409, 'Conflict', '', {})), undefined);
  });

  it('Google RESOURCE_EXHAUSTED: the RetryInfo delay as google-gax decodes it (seconds may be a Long)', () => {
    const exhausted = (statusDetails?: unknown[]) =>
      Object.assign(new Error('8 RESOURCE_EXHAUSTED'), { code: 8, statusDetails });
    assert.deepEqual(rateLimitOf(exhausted([{ retryDelay: { seconds: 2, nanos: 500_000_000 } }])), {
      retryAfterMs: 2500,
    });
    assert.deepEqual(rateLimitOf(exhausted([{ retryDelay: { seconds: { toNumber: () => 7 } } }])), {
      retryAfterMs: 7000,
    });
    assert.deepEqual(rateLimitOf(exhausted()), {});
    assert.deepEqual(rateLimitOf(Object.assign(new Error('429'), { code: 8, httpStatusCode: 429 })), {});
    assert.equal(rateLimitOf(Object.assign(new Error('unavailable'), { code: 14 })), undefined);
  });
});

describe('parseGoDuration', () => {
  it('reads Go durations in ms; refuses anything else', () => {
    assert.equal(parseGoDuration('10m'), 600_000);
    assert.equal(parseGoDuration('1h30m'), 5_400_000);
    assert.equal(parseGoDuration('1.5s'), 1500);
    assert.equal(parseGoDuration('0'), 0);
    for (const bad of ['', '10', '-1m', '10 m', 'ten minutes'])
      assert.equal(parseGoDuration(bad), undefined, bad);
  });
});
