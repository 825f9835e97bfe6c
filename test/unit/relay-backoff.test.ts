// The informer restart backoff: exponential, capped, jittered.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff } from '../../relay/backoff.ts';

describe('Backoff', () => {
  it('doubles from initialMs up to maxMs without jitter', () => {
    const b = new Backoff({ initialMs: 100, maxMs: 1000, jitter: 0 });
    assert.deepEqual(
      Array.from({ length: 7 }, () => b.next()),
      [100, 200, 400, 800, 1000, 1000, 1000],
    );
    assert.equal(b.attempt, 7);
  });

  it('jitters downwards within [d·(1−jitter), d], never above the cap', () => {
    const low = new Backoff({ initialMs: 1000, maxMs: 4000, jitter: 0.5, random: () => 0.999999 });
    const high = new Backoff({ initialMs: 1000, maxMs: 4000, jitter: 0.5, random: () => 0 });
    assert.deepEqual([low.next(), low.next(), low.next(), low.next()], [500, 1000, 2000, 2000]);
    assert.deepEqual([high.next(), high.next(), high.next(), high.next()], [1000, 2000, 4000, 4000]);
  });

  it('spreads delays with the default random source', () => {
    const delays = Array.from({ length: 50 }, () => new Backoff({ initialMs: 1000 }).next());
    assert.ok(delays.every((d) => d >= 800 && d <= 1000));
    assert.ok(new Set(delays).size > 1, 'jitter should vary the delay');
  });

  it('reset starts over from initialMs', () => {
    const b = new Backoff({ initialMs: 100, jitter: 0 });
    b.next();
    b.next();
    b.reset();
    assert.equal(b.attempt, 0);
    assert.equal(b.next(), 100);
  });

  it('defaults: 500 ms doubling, capped at 30 s', () => {
    const b = new Backoff({ jitter: 0 });
    const delays = Array.from({ length: 10 }, () => b.next());
    assert.equal(delays[0], 500);
    assert.equal(delays[1], 1000);
    assert.equal(delays.at(-1), 30_000);
  });

  it('rejects nonsense', () => {
    assert.throws(() => new Backoff({ initialMs: 0 }), RangeError);
    assert.throws(() => new Backoff({ initialMs: 100, maxMs: 50 }), RangeError);
    assert.throws(() => new Backoff({ factor: 0.5 }), RangeError);
    assert.throws(() => new Backoff({ jitter: 2 }), RangeError);
  });
});
