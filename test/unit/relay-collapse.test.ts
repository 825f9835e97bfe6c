// Collapse (the workqueue's dirty set), driven by hand-cranked timers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Collapser, type Timers } from '../../relay/collapse.ts';

/** Timers whose clock only moves when the test says so. */
export class ManualTimers implements Timers {
  #now = 1_000_000;
  #next = 1;
  readonly #due = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.#now;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.#next++;
    this.#due.set(id, { at: this.#now + ms, fn });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.#due.delete(handle as number);
  }
  get scheduled(): number {
    return this.#due.size;
  }
  /** Moves the clock forward, firing due timers in time order. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      const next = [...this.#due]
        .filter(([, t]) => t.at <= end)
        .sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!next) break;
      this.#due.delete(next[0]);
      this.#now = next[1].at;
      next[1].fn();
    }
    this.#now = end;
  }
}

function setup(windowMs = 250) {
  const timers = new ManualTimers();
  const emitted: { id: string; item: string; at: number; firstAddedAt: number }[] = [];
  const c = new Collapser<string>({
    windowMs,
    timers,
    emit: (id, item, firstAddedAt) => emitted.push({ id, item, at: timers.now(), firstAddedAt }),
  });
  return { timers, emitted, c };
}

describe('Collapser', () => {
  it('turns a burst of 100 adds of one key inside the window into one emit', () => {
    const { timers, emitted, c } = setup();
    let fresh = 0;
    for (let i = 0; i < 100; i++) {
      if (c.add('foo/ns/a', `event-${i}`)) fresh++;
      timers.advance(2);
    }
    assert.equal(emitted.length, 0, 'still inside the window after 200 ms');
    timers.advance(50);
    assert.equal(fresh, 1);
    assert.equal(emitted.length, 1);
    assert.deepEqual(emitted[0], { id: 'foo/ns/a', item: 'event-0', at: 1_000_250, firstAddedAt: 1_000_000 });
    assert.equal(c.size, 0);
  });

  it('emits nothing before the window ends, and exactly at its end', () => {
    const { timers, emitted, c } = setup(250);
    c.add('k', 'x');
    timers.advance(249);
    assert.equal(emitted.length, 0);
    assert.equal(c.size, 1);
    timers.advance(1);
    assert.equal(emitted.length, 1);
  });

  it('does not extend the window on repeats: a key waits at most windowMs', () => {
    const { timers, emitted, c } = setup(100);
    c.add('k', 'first');
    for (let t = 0; t < 10; t++) {
      timers.advance(10);
      c.add('k', 'again');
    }
    // 100 ms after the first add, with repeats all along: emitted once, at +100.
    assert.equal(emitted.length, 1);
    assert.equal(emitted[0]?.at, 1_000_100);
  });

  it('emits once per window for a burst longer than the window', () => {
    const { timers, emitted, c } = setup(100);
    for (let i = 0; i < 50; i++) {
      c.add('k', String(i));
      timers.advance(10); // 500 ms of updates
    }
    timers.advance(100);
    assert.equal(emitted.length, 5);
  });

  it('keeps different keys apart', () => {
    const { timers, emitted, c } = setup();
    c.add('a', 'a');
    c.add('b', 'b');
    c.add('a', 'a2');
    timers.advance(250);
    assert.deepEqual(emitted.map((e) => e.item).sort(), ['a', 'b']);
  });

  it('queues a key again after it was emitted', () => {
    const { timers, emitted, c } = setup();
    c.add('a', '1');
    timers.advance(250);
    assert.equal(c.add('a', '2'), true);
    timers.advance(250);
    assert.deepEqual(
      emitted.map((e) => e.item),
      ['1', '2'],
    );
  });

  it('flush emits every pending key at once, in first-add order, and cancels their timers', () => {
    const { timers, emitted, c } = setup();
    c.add('b', 'b');
    timers.advance(10);
    c.add('a', 'a');
    c.flush();
    assert.deepEqual(
      emitted.map((e) => [e.item, e.at]),
      [
        ['b', 1_000_010],
        ['a', 1_000_010],
      ],
    );
    assert.equal(timers.scheduled, 0);
    timers.advance(1000);
    assert.equal(emitted.length, 2);
  });

  it('clear drops pending keys without emitting', () => {
    const { timers, emitted, c } = setup();
    c.add('a', 'a');
    c.clear();
    timers.advance(1000);
    assert.equal(emitted.length, 0);
    assert.equal(timers.scheduled, 0);
  });

  it('rejects a negative or infinite window', () => {
    assert.throws(() => new Collapser({ windowMs: -1, emit: () => {} }), RangeError);
    assert.throws(() => new Collapser({ windowMs: Number.POSITIVE_INFINITY, emit: () => {} }), RangeError);
  });
});
