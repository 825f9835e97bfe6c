// The relay's bounded publish retry buffer: de-duplication, drop-oldest when full, backoff, clear.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Timers } from '../../relay/collapse.ts';
import { RetryBuffer } from '../../relay/retry-buffer.ts';

/** Manual timers: `advance(ms)` fires what is due. */
function manualTimers() {
  let now = 0;
  let next = 1;
  const due = new Map<number, { at: number; fn: () => void }>();
  const timers: Timers = {
    setTimeout: (fn, ms) => {
      const id = next++;
      due.set(id, { at: now + ms, fn });
      return id;
    },
    clearTimeout: (id) => void due.delete(id as number),
    now: () => now,
  };
  const advance = (ms: number) => {
    now += ms;
    for (const [id, t] of [...due].sort((a, b) => a[1].at - b[1].at)) {
      if (t.at <= now) {
        due.delete(id);
        t.fn();
      }
    }
  };
  return { timers, advance, pending: () => due.size };
}

const noJitter = { jitter: 0 };

describe('RetryBuffer', () => {
  it('hands every failed key back once after the backoff, de-duplicated, oldest first', () => {
    const { timers, advance } = manualTimers();
    const retried: string[][] = [];
    const buffer = new RetryBuffer<string>({ timers, backoff: noJitter, retry: (k) => retried.push(k) });
    buffer.add('a', 'a');
    buffer.add('b', 'b');
    buffer.add('a', 'a');
    assert.equal(buffer.size, 2);
    advance(999);
    assert.deepEqual(retried, []);
    advance(1);
    assert.deepEqual(retried, [['a', 'b']]);
    assert.equal(buffer.size, 0);
  });

  it('backs off 1 s, 2 s, 4 s while publishes keep failing, and starts over after a success', () => {
    const { timers, advance } = manualTimers();
    const at: number[] = [];
    const buffer = new RetryBuffer<string>({
      timers,
      backoff: noJitter,
      retry: () => at.push(timers.now()),
    });
    buffer.add('k', 'k');
    advance(1_000);
    buffer.add('k', 'k'); // the retry failed again
    advance(2_000);
    buffer.add('k', 'k');
    advance(4_000);
    assert.deepEqual(at, [1_000, 3_000, 7_000]);
    buffer.succeeded();
    buffer.add('k', 'k');
    advance(1_000);
    assert.deepEqual(at, [1_000, 3_000, 7_000, 8_000]);
  });

  it('drops the oldest key when full and reports it', () => {
    const { timers } = manualTimers();
    const dropped: string[] = [];
    const sizes: number[] = [];
    const buffer = new RetryBuffer<string>({
      capacity: 2,
      timers,
      retry: () => {},
      onDrop: (k) => dropped.push(k),
      onSize: (n) => sizes.push(n),
    });
    for (const k of ['a', 'b', 'c', 'd']) buffer.add(k, k);
    assert.deepEqual(dropped, ['a', 'b']);
    assert.equal(buffer.size, 2);
    assert.deepEqual(sizes, [1, 2, 2, 2]);
  });

  it('clear() forgets the keys and the timer', () => {
    const { timers, advance, pending } = manualTimers();
    let retried = 0;
    const buffer = new RetryBuffer<string>({ timers, retry: () => retried++ });
    buffer.add('a', 'a');
    assert.equal(buffer.clear(), 1);
    assert.equal(pending(), 0);
    advance(60_000);
    assert.equal(retried, 0);
  });

  it('refuses a capacity that is not a positive integer', () => {
    assert.throws(() => new RetryBuffer({ capacity: 0, retry: () => {} }), RangeError);
  });
});
