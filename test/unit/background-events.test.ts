/**
 * The in-process mode's background Events (core/k8s/events.ts `BackgroundEvents`, as client-go's
 * EventBroadcaster): `record` returns before the write, the queue is bounded, a failure is logged,
 * and `flush` waits for the queued writes up to a deadline.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EventRecorder } from '../../core/contract/controller.ts';
import { BackgroundEvents } from '../../core/k8s/events.ts';
import { createLogger } from '../../core/log.ts';

const object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns', uid: 'u' } };

function logged(): { log: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const log = createLogger('test', { write: (line: string) => void lines.push(line) });
  return { log, lines };
}

/** A recorder whose writes finish when `release` is called. */
function slowRecorder(): { recorder: EventRecorder; written: string[]; release: () => void } {
  const written: string[] = [];
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return {
    written,
    release: () => open(),
    recorder: {
      async record(_o, _t, reason) {
        await gate;
        written.push(reason);
      },
    },
  };
}

describe('background Events (in-process mode)', () => {
  it('record returns before the write; flush waits for every queued write', async () => {
    const { log } = logged();
    const events = new BackgroundEvents(log);
    const { recorder, written, release } = slowRecorder();
    const wrapped = events.wrap(recorder);
    for (let i = 0; i < 10; i++) await wrapped.record(object, 'Normal', `Synced${i}`, 'm');
    assert.deepEqual(written, [], 'nothing written yet: record did not wait');
    assert.equal(events.pending, 10);
    const flushed = events.flush(5000);
    release();
    assert.equal(await flushed, true);
    assert.equal(written.length, 10);
    assert.equal(events.pending, 0);
  });

  it('drops an Event beyond its capacity, and logs it', async () => {
    const { log, lines } = logged();
    const events = new BackgroundEvents(log, 2);
    const { recorder, written, release } = slowRecorder();
    const wrapped = events.wrap(recorder);
    // Four writers take the first four; two wait; the seventh is dropped.
    for (let i = 0; i < 7; i++) await wrapped.record(object, 'Normal', `E${i}`, 'm');
    assert.equal(events.pending, 6);
    assert.ok(
      lines.some((l) => l.includes('event queue is full')),
      lines.join(''),
    );
    release();
    assert.equal(await events.flush(5000), true);
    assert.equal(written.length, 6);
  });

  it('a failed write is logged and not retried; flush gives up at its deadline', async () => {
    const { log, lines } = logged();
    const events = new BackgroundEvents(log);
    let calls = 0;
    await events
      .wrap({
        async record() {
          calls++;
          throw new Error('boom');
        },
      })
      .record(object, 'Normal', 'Synced', 'm');
    await events.wrap({ record: () => new Promise<void>(() => {}) }).record(object, 'Normal', 'Stuck', 'm');
    assert.equal(await events.flush(1000), false, 'a write that never ends holds flush to its deadline');
    assert.equal(calls, 1);
    assert.ok(
      lines.some((l) => l.includes('could not record event')),
      lines.join(''),
    );
  });
});
