// Collapse (the workqueue's dirty set), leading + trailing edge and the trailing-only baseline,
// driven by hand-cranked timers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CollapseEdge, type CollapseMode, Collapser } from '../../relay/collapse.ts';
import { ManualTimers } from '../support/manual-timers.ts';

const T0 = 1_000_000;

function setup(windowMs = 250, mode?: CollapseMode) {
  const timers = new ManualTimers(T0);
  const emitted: { id: string; item: string; at: number; firstAddedAt: number }[] = [];
  const c = new Collapser<string>({
    windowMs,
    mode,
    timers,
    emit: (id, item, firstAddedAt) => emitted.push({ id, item, at: timers.now(), firstAddedAt }),
  });
  return { timers, emitted, c };
}

describe('Collapser, leading + trailing edge (default)', () => {
  it('names the edge of each emit: leading from add, trailing at the window end and on flush', () => {
    const timers = new ManualTimers(T0);
    const edges: [string, CollapseEdge][] = [];
    const c = new Collapser<string>({
      windowMs: 100,
      timers,
      emit: (_id, item, _at, edge) => edges.push([item, edge]),
    });
    c.add('k', 'a');
    c.add('k', 'b');
    timers.advance(100);
    c.add('k', 'c');
    c.flush();
    assert.deepEqual(edges, [
      ['a', 'leading'],
      ['b', 'trailing'],
      ['c', 'trailing'],
    ]);
  });

  it('emits the first add of a quiet key at once', () => {
    const { emitted, c } = setup();
    assert.equal(c.mode, 'leading-trailing');
    assert.equal(c.add('foo/ns/a', 'first'), true);
    assert.deepEqual(emitted, [{ id: 'foo/ns/a', item: 'first', at: T0, firstAddedAt: T0 }]);
    assert.equal(c.size, 0, 'nothing waits');
  });

  it('collapses the repeats inside the window into one trailing emit at its end', () => {
    const { timers, emitted, c } = setup(250);
    c.add('k', 'e0');
    const fresh: boolean[] = [];
    for (let i = 1; i <= 99; i++) {
      timers.advance(2);
      fresh.push(c.add('k', `e${i}`));
    }
    assert.deepEqual(
      fresh.filter((f) => f),
      [true],
      'only the first repeat schedules an emit',
    );
    assert.equal(emitted.length, 1);
    assert.equal(c.size, 1);
    timers.advance(249 - 198);
    assert.equal(emitted.length, 1, 'still inside the window');
    timers.advance(1);
    assert.deepEqual(emitted[1], { id: 'k', item: 'e1', at: T0 + 250, firstAddedAt: T0 + 2 });
    assert.equal(c.size, 0);
  });

  it('goes back to leading once a key was quiet for a whole window', () => {
    const { timers, emitted, c } = setup(100);
    c.add('k', 'a');
    timers.advance(100); // window ends with no repeat: the key is quiet again
    c.add('k', 'b');
    assert.deepEqual(
      emitted.map((e) => [e.item, e.at]),
      [
        ['a', T0],
        ['b', T0 + 100],
      ],
    );
  });

  it('opens a new window after a trailing emit, so a hot key is never emitted twice within a window', () => {
    const { timers, emitted, c } = setup(100);
    c.add('k', 'a'); // leading, window [0, 100)
    timers.advance(50);
    c.add('k', 'b'); // trailing at 100, opens [100, 200)
    timers.advance(60); // t = 110
    c.add('k', 'c'); // waits for 200, not emitted at once
    assert.deepEqual(
      emitted.map((e) => e.at - T0),
      [0, 100],
    );
    timers.advance(90);
    assert.deepEqual(
      emitted.map((e) => [e.item, e.at - T0]),
      [
        ['a', 0],
        ['b', 100],
        ['c', 200],
      ],
    );
    timers.advance(100); // quiet window: back to leading
    c.add('k', 'd');
    assert.equal(emitted.at(-1)?.at, T0 + 300);
  });

  it('emits at most 1 + ⌈T / window⌉ times for updates spanning T ms', () => {
    for (const windowMs of [10, 50, 250, 1000]) {
      const { timers, emitted, c } = setup(windowMs);
      for (let i = 0; i < 1000; i++) {
        c.add('k', String(i));
        timers.advance(1); // 1,000 updates within 1 s
      }
      timers.advance(2 * windowMs);
      assert.ok(emitted.length <= 1 + Math.ceil(1000 / windowMs), `${windowMs} ms: ${emitted.length}`);
      assert.ok(emitted.length >= Math.floor(1000 / windowMs), `${windowMs} ms: ${emitted.length}`);
    }
  });

  it('keeps different keys apart', () => {
    const { timers, emitted, c } = setup();
    c.add('a', 'a');
    c.add('b', 'b');
    c.add('a', 'a2');
    timers.advance(250);
    assert.deepEqual(
      emitted.map((e) => e.item),
      ['a', 'b', 'a2'],
    );
  });

  it('flush (SIGTERM) emits the waiting trailing keys, cancels every timer, and forgets the windows', () => {
    const { timers, emitted, c } = setup();
    c.add('a', 'a1');
    c.add('b', 'b1');
    timers.advance(10);
    c.add('b', 'b2');
    c.add('a', 'a2');
    c.add('quiet', 'q');
    c.flush();
    assert.deepEqual(
      emitted.map((e) => [e.item, e.at - T0]),
      [
        ['a1', 0],
        ['b1', 0],
        ['q', 10],
        ['a2', 10],
        ['b2', 10],
      ],
    );
    assert.equal(c.size, 0);
    assert.equal(timers.scheduled, 0);
    c.add('a', 'a3');
    assert.equal(emitted.at(-1)?.item, 'a3', 'after a flush a key is quiet again');
  });

  it('clear drops waiting keys without emitting', () => {
    const { timers, emitted, c } = setup();
    c.add('a', 'a');
    c.add('a', 'a2');
    c.clear();
    timers.advance(1000);
    assert.equal(emitted.length, 1);
    assert.equal(timers.scheduled, 0);
  });
});

describe('Collapser, trailing edge only (the baseline)', () => {
  it('turns a burst of 100 adds of one key inside the window into one emit', () => {
    const { timers, emitted, c } = setup(250, 'trailing');
    let fresh = 0;
    for (let i = 0; i < 100; i++) {
      if (c.add('foo/ns/a', `event-${i}`)) fresh++;
      timers.advance(2);
    }
    assert.equal(emitted.length, 0, 'still inside the window after 200 ms');
    timers.advance(50);
    assert.equal(fresh, 1);
    assert.deepEqual(emitted, [{ id: 'foo/ns/a', item: 'event-0', at: T0 + 250, firstAddedAt: T0 }]);
    assert.equal(c.size, 0);
  });

  it('emits nothing before the window ends, and exactly at its end', () => {
    const { timers, emitted, c } = setup(250, 'trailing');
    c.add('k', 'x');
    timers.advance(249);
    assert.equal(emitted.length, 0);
    assert.equal(c.size, 1);
    timers.advance(1);
    assert.equal(emitted.length, 1);
  });

  it('emits once per window for a burst longer than the window', () => {
    const { timers, emitted, c } = setup(100, 'trailing');
    for (let i = 0; i < 50; i++) {
      c.add('k', String(i));
      timers.advance(10); // 500 ms of updates
    }
    timers.advance(100);
    assert.equal(emitted.length, 5);
  });

  it('flush emits every pending key at once, in first-add order', () => {
    const { timers, emitted, c } = setup(250, 'trailing');
    c.add('b', 'b');
    timers.advance(10);
    c.add('a', 'a');
    c.flush();
    assert.deepEqual(
      emitted.map((e) => [e.item, e.at]),
      [
        ['b', T0 + 10],
        ['a', T0 + 10],
      ],
    );
    assert.equal(timers.scheduled, 0);
  });
});

it('Collapser rejects a negative or infinite window, and an unknown mode', () => {
  assert.throws(() => new Collapser({ windowMs: -1, emit: () => {} }), RangeError);
  assert.throws(() => new Collapser({ windowMs: Number.POSITIVE_INFINITY, emit: () => {} }), RangeError);
  assert.throws(
    () => new Collapser({ windowMs: 1, mode: 'debounce' as CollapseMode, emit: () => {} }),
    RangeError,
  );
});
