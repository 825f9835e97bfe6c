/**
 * The slow-start push window (local/push-window.ts): it starts small, grows by one push at each
 * success (doubling per window of successes), halves at each failure, and bounds what is outstanding.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PUSH_WINDOW, PushWindow } from '../../local/push-window.ts';
import { PUSH_MODEL_ENV, pushModelOf } from '../../local/stack.ts';

describe('push window', () => {
  it('starts at its initial size and bounds what is outstanding', async () => {
    const w = new PushWindow({ initial: 2, maximum: 8 });
    await w.acquire();
    await w.acquire();
    let third = false;
    const waiting = w.acquire().then(() => {
      third = true;
    });
    await Promise.resolve();
    assert.equal(third, false);
    assert.equal(w.inFlight, 2);
    w.release(true); // a success: the window is 3 now, and the waiting push starts
    await waiting;
    assert.equal(third, true);
    assert.equal(w.size, 3);
  });

  it('doubles with each window of successes, up to its maximum', async () => {
    const w = new PushWindow({ initial: 1, maximum: 10 });
    const sizes: number[] = [];
    for (let round = 0; round < 4; round++) {
      const n = w.size;
      for (let i = 0; i < n; i++) await w.acquire();
      for (let i = 0; i < n; i++) w.release(true);
      sizes.push(w.size);
    }
    assert.deepEqual(sizes, [2, 4, 8, 10]);
  });

  it('halves at each failure, down to one push; an outcome that is no attempt leaves it', async () => {
    const w = new PushWindow({ initial: 9, maximum: 16 });
    const sizes: number[] = [];
    for (const outcome of [false, undefined, false, false, false]) {
      await w.acquire();
      w.release(outcome);
      sizes.push(w.size);
    }
    assert.deepEqual(sizes, [4, 4, 2, 1, 1]);
  });

  it('defaults to a single push at first', () => {
    assert.equal(new PushWindow().size, PUSH_WINDOW.initial);
    assert.equal(PUSH_WINDOW.initial, 1);
  });
});

describe("the local stack's push model", () => {
  it("is the emulator's unless the option or LEVELSET_PUSH_MODEL asks for the model", () => {
    assert.equal(pushModelOf(undefined, {}), 'emulator');
    assert.equal(pushModelOf(undefined, { [PUSH_MODEL_ENV]: 'cloud' }), 'cloud');
    assert.equal(pushModelOf('emulator', { [PUSH_MODEL_ENV]: 'cloud' }), 'emulator');
    assert.throws(() => pushModelOf(undefined, { [PUSH_MODEL_ENV]: 'fast' }), /one of emulator, cloud/);
  });
});
