// The in-process mode's workqueue, against client-go's semantics (k8s.io/client-go/util/workqueue:
// queue_test.go, delaying_queue_test.go, default_rate_limiters_test.go), with hand-cranked timers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { itemExponentialBackoffMs } from '../../core/backoff.ts';
import {
  BucketRateLimiter,
  createWorkQueueMetrics,
  LOW_PRIORITY_EVERY,
  MaxOfRateLimiter,
  type RateLimiter,
  WorkQueue,
} from '../../functions/runtime/workqueue.ts';
import { ManualTimers } from '../support/manual-timers.ts';

/**
 * client-go's `ItemExponentialFailureRateLimiter` (5 ms doubling per failure of a key, to 1000 s; the
 * per-key half of `DefaultControllerRateLimiter`), over core/backoff.ts: the delays the queue's
 * rate-limiting tests count on.
 */
function exponential(): RateLimiter {
  const failures = new Map<string, number>();
  return {
    when(key) {
      const n = (failures.get(key) ?? 0) + 1;
      failures.set(key, n);
      return itemExponentialBackoffMs(n, 5, 1_000_000);
    },
    forget: (key) => void failures.delete(key),
    numRequeues: (key) => failures.get(key) ?? 0,
  };
}

function setup() {
  const timers = new ManualTimers();
  const registry = new Registry();
  const metrics = createWorkQueueMetrics(registry);
  const q = new WorkQueue({ name: 'foo', timers, metrics, rateLimiter: exponential() });
  const value = async (metric: string) =>
    (await registry.getSingleMetric(metric)?.get())?.values.find(
      (v) => v.labels.name === 'foo' && !('le' in v.labels),
    )?.value ?? 0;
  return { timers, q, registry, value };
}

/** Resolves the keys `get` hands out right now (without waiting). */
async function drain(q: WorkQueue): Promise<string[]> {
  const keys: string[] = [];
  while (q.length > 0) {
    const r = await q.get();
    if (r.shutdown) break;
    keys.push(r.key);
  }
  return keys;
}

describe('BucketRateLimiter (golang.org/x/time/rate semantics)', () => {
  it('lets a burst through, then spaces keys at 1/qps, and refills over time', () => {
    let now = 0;
    const l = new BucketRateLimiter(10, 100, () => now);
    const burst = Array.from({ length: 100 }, (_, i) => l.when(`k${i}`));
    assert.ok(burst.every((d) => d === 0));
    assert.equal(l.when('a'), 100);
    assert.equal(l.when('b'), 200);
    now += 1000; // +10 tokens: the bucket is back to 8
    assert.equal(l.when('c'), 0);
    assert.equal(l.numRequeues('c'), 0);
  });
});

describe('MaxOfRateLimiter', () => {
  it('takes the longest delay and the most requeues', () => {
    const now = 0;
    const l = new MaxOfRateLimiter(exponential(), new BucketRateLimiter(10, 1, () => now));
    assert.equal(l.when('k'), 5); // bucket has its token: 0; exponential 5
    assert.equal(l.when('k'), 100); // bucket empty: 100 ms > 10
    assert.equal(l.numRequeues('k'), 2);
    l.forget('k');
    assert.equal(l.numRequeues('k'), 0);
  });
});

describe('WorkQueue (queue_test.go)', () => {
  it('hands keys out in FIFO order, and deduplicates a key that is waiting', async () => {
    const { q, value } = setup();
    for (const k of ['a', 'b', 'a', 'c', 'b']) q.add(k);
    assert.equal(q.length, 3);
    assert.equal(await value('workqueue_adds_total'), 3, 'adds_total counts keys added to the dirty set');
    assert.equal(await value('workqueue_depth'), 3);
    assert.deepEqual(await drain(q), ['a', 'b', 'c']);
    assert.equal(await value('workqueue_depth'), 0);
    assert.equal(q.processing, 3);
  });

  it('never hands a key out twice at once: an add while processing re-queues it at done (TestAddWhileProcessing)', async () => {
    const { q } = setup();
    q.add('a');
    const first = await q.get();
    assert.equal(first.key, 'a');
    q.add('a');
    q.add('a');
    assert.equal(q.length, 0, 'not handed to a second worker while processing');
    q.done('a');
    assert.equal(q.length, 1, 'queued once more after done');
    assert.deepEqual(await drain(q), ['a']);
    q.done('a');
    assert.equal(q.length, 0);
  });

  it('a waiting worker gets the next key added (Get blocks)', async () => {
    const { q } = setup();
    const pending = q.get();
    q.add('x');
    assert.deepEqual(await pending, { key: 'x', shutdown: false });
  });

  it('after ShutDown: adds are ignored, queued keys are still handed out, then shutdown', async () => {
    const { q } = setup();
    q.add('a');
    q.shutDown();
    q.add('b');
    assert.equal(q.shuttingDown, true);
    assert.deepEqual(await q.get(), { key: 'a', shutdown: false });
    assert.deepEqual(await q.get(), { key: undefined, shutdown: true });
    const other = setup().q;
    const blocked = other.get();
    other.shutDown();
    assert.deepEqual(await blocked, { key: undefined, shutdown: true });
  });

  it('shutDownWithDrain waits for the keys being processed', async () => {
    const { q } = setup();
    q.add('a');
    await q.get();
    let drained = false;
    const p = q.shutDownWithDrain().then(() => {
      drained = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(drained, false);
    q.done('a');
    await p;
    assert.equal(drained, true);
  });
});

describe('WorkQueue priority (the resync at low priority)', () => {
  it('hands a live key out before a large resync backlog queued earlier', async () => {
    const { q, value } = setup();
    for (let i = 0; i < 1000; i++) q.add(`resync-${i}`, 'low');
    q.add('live');
    assert.equal(q.length, 1001);
    assert.equal(await value('workqueue_depth'), 1001);
    assert.deepEqual(await q.get(), { key: 'live', shutdown: false });
  });

  it('never starves the low-priority keys: one handout in LOW_PRIORITY_EVERY while both wait', async () => {
    const { q } = setup();
    for (let i = 0; i < 100; i++) q.add(`resync-${i}`, 'low');
    for (let i = 0; i < 100; i++) q.add(`live-${i}`);
    const first = await Promise.all(Array.from({ length: 3 * LOW_PRIORITY_EVERY }, () => q.get()));
    const low = first.filter((r) => r.key?.startsWith('resync-')).map((r) => r.key);
    assert.deepEqual(low, ['resync-0', 'resync-1', 'resync-2'], 'the oldest resync keys, in order');
    const rest = await drain(q);
    assert.equal(rest.length, 200 - first.length, 'every key is handed out');
  });

  it('promotes a resync key that a live event adds again, and hands it out once', async () => {
    const { q } = setup();
    q.add('a', 'low');
    q.add('b', 'low');
    q.add('b');
    q.add('c');
    assert.equal(q.length, 3);
    assert.deepEqual(await drain(q), ['b', 'c', 'a']);
    assert.equal(q.length, 0);
  });

  it('a low key added while it is processing keeps its low priority when re-queued at done', async () => {
    const { q } = setup();
    q.add('a');
    assert.equal((await q.get()).key, 'a');
    q.add('a', 'low');
    q.add('live');
    q.done('a');
    assert.deepEqual(await drain(q), ['live', 'a']);
  });
});

describe('WorkQueue delays (delaying_queue_test.go) and rate limiting (rate_limiting_queue_test.go)', () => {
  it('addAfter adds the key once its delay has passed; zero adds at once', () => {
    const { q, timers } = setup();
    q.addAfter('later', 50);
    q.addAfter('now', 0);
    assert.equal(q.length, 1);
    timers.advance(49);
    assert.equal(q.length, 1);
    timers.advance(1);
    assert.equal(q.length, 2);
    assert.equal(q.waiting, 0);
  });

  it('a key waiting keeps the earlier of its ready times (TestAddTwoFireEarly)', () => {
    const { q, timers } = setup();
    q.addAfter('k', 1000);
    q.addAfter('k', 50);
    q.addAfter('k', 500);
    assert.equal(q.waiting, 1);
    timers.advance(50);
    assert.equal(q.length, 1);
    timers.advance(1000);
    assert.equal(q.length, 1, 'added once');
  });

  it('addRateLimited backs off per key (5 ms, 10 ms, …) and forget resets it; retries are counted', async () => {
    const { q, timers, value } = setup();
    const table = [5, 10, 20, 40];
    for (const want of table) {
      q.addRateLimited('k');
      timers.advance(want - 1);
      assert.equal(q.length, 0, `not before ${want} ms`);
      timers.advance(1);
      assert.equal(q.length, 1, `at ${want} ms`);
      assert.deepEqual(await drain(q), ['k']);
      q.done('k');
    }
    assert.equal(q.numRequeues('k'), 4);
    assert.equal(await value('workqueue_retries_total'), 4);
    q.forget('k');
    assert.equal(q.numRequeues('k'), 0);
    q.addRateLimited('k');
    timers.advance(5);
    assert.equal(q.length, 1);
  });

  it("addRateLimited waits a failure's Retry-After when it is longer than the backoff, and still counts the failure", async () => {
    const { q, timers } = setup();
    q.addRateLimited('k', 1000);
    timers.advance(999);
    assert.equal(q.length, 0, 'not before the Retry-After');
    timers.advance(1);
    assert.deepEqual(await drain(q), ['k']);
    q.done('k');
    assert.equal(q.numRequeues('k'), 1);
    q.addRateLimited('k', 1); // shorter than the backoff's 10 ms: the backoff
    timers.advance(9);
    assert.equal(q.length, 0);
    timers.advance(1);
    assert.equal(q.length, 1);
  });

  it('shutDown drops keys waiting for a delay', () => {
    const { q, timers } = setup();
    q.addAfter('k', 10);
    q.shutDown();
    timers.advance(100);
    assert.equal(q.length, 0);
    assert.equal(timers.scheduled, 0);
  });

  it('observes queue and work durations under client-go metric names', async () => {
    const { q, timers, registry } = setup();
    q.add('k');
    timers.advance(30);
    await q.get();
    timers.advance(70);
    const text = await registry.metrics();
    assert.match(text, /workqueue_longest_running_processor_seconds\{name="foo"\} 0\.07/);
    assert.match(text, /workqueue_unfinished_work_seconds\{name="foo"\} 0\.07/);
    q.done('k');
    const after = await registry.metrics();
    assert.match(after, /workqueue_queue_duration_seconds_sum\{name="foo"\} 0\.03/);
    assert.match(after, /workqueue_work_duration_seconds_sum\{name="foo"\} 0\.07/);
    assert.match(after, /workqueue_work_duration_seconds_count\{name="foo"\} 1/);
  });
});
