/**
 * The resync's pacing by the request budget (core/request-budget.ts `resyncPacing`): at most
 * `floor(keysPerSecond)` keys published in any 1-second window, and none after the run's deadline.
 * On a fake clock (node:test's mock timers): the pacing reads `Date.now()` and waits with
 * `setTimeout`, so the windows are counted exactly, with no timing assertion.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { Controller } from '../../core/contract/controller.ts';
import { createLogger } from '../../core/log.ts';
import type { KeyMessage } from '../../core/message.ts';
import {
  createResyncHandler,
  type FleetResyncReport,
  type ResyncOptions,
  type ResyncReport,
  resyncAll,
} from '../../functions/runtime/resync.ts';

const quiet = createLogger('test', { write: () => {} });

/** A controller whose keys are `n` names, listed without the API server. */
function controllerOf(n: number): Controller {
  return {
    name: 'paced',
    primary: { group: 'example.com', version: 'v1', kind: 'Thing', plural: 'things', namespaced: true },
    rbac: [],
    async *listKeys() {
      for (let i = 0; i < n; i++) yield { namespace: 'ns', name: `thing-${i}` };
    },
    reconcileKey: async () => ({ outcome: 'success' }),
  } as unknown as Controller;
}

/** Moves the fake clock 1 ms at a time until `done()`, letting the resync's promises settle between steps. */
async function runClock(t: TestContext, done: () => boolean, maxMs = 60_000): Promise<void> {
  for (let ms = 0; ms < maxMs && !done(); ms++) {
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(1);
  }
}

/** Publishes `n` keys on a fake clock (ms from 0); the publish times, and the report. */
async function publishTimes(
  t: TestContext,
  n: number,
  options: ResyncOptions = {},
): Promise<{ times: number[]; report: ResyncReport }> {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  const times: number[] = [];
  const publisher = {
    publish: async (_m: KeyMessage) => {
      times.push(Date.now());
      return 'id';
    },
  };
  let report: ResyncReport | undefined;
  const run = resyncAll([controllerOf(n)], new KubeConfig(), publisher, quiet, options).then((r) => {
    report = r;
  });
  await runClock(t, () => report !== undefined);
  await run;
  assert.ok(report);
  return { times, report };
}

/** At most `limit` publishes in any 1-second window. */
function assertPerSecond(times: readonly number[], limit: number): void {
  for (const start of times) {
    const inWindow = times.filter((ms) => ms >= start && ms < start + 1000).length;
    assert.ok(inWindow <= limit, `${inWindow} keys published in [${start}, ${start + 1000}) ms`);
  }
}

test('a paced resync publishes at most keysPerSecond keys in any 1-second window (fake clock)', async (t) => {
  const { times, report } = await publishTimes(t, 35, { keysPerSecond: 10 });
  assert.equal(report.published, 35);
  assert.equal(report.deferred, undefined);
  assertPerSecond(times, 10);
  // Paced, not stalled: the first 10 at once, the 35 within 4 seconds.
  assert.equal(times.filter((ms) => ms === 0).length, 10);
  assert.ok((times.at(-1) ?? 0) < 4000, `the 35th at ${times.at(-1)} ms`);
});

test('a fractional pace rounds down, never up', async (t) => {
  const { times, report } = await publishTimes(t, 20, { keysPerSecond: 16.7 });
  assert.equal(report.published, 20);
  assertPerSecond(times, 16);
});

test('at its deadline a run stops publishing and reports the rest deferred', async (t) => {
  // 10 keys per second and a deadline 2.5 s after the start: at most 10 in each of [0, 1), [1, 2)
  // and [2, 2.5) seconds, 30 of the 100 keys.
  const { times, report } = await publishTimes(t, 100, { keysPerSecond: 10, deadline: 2500 });
  assert.equal(report.deferred, true);
  assert.equal(report.controllers.paced?.deferred, true);
  assert.equal(report.published, times.length);
  assert.ok(report.published > 0 && report.published <= 30, String(report.published));
  assert.ok(times.every((ms) => ms < 2500));
  assertPerSecond(times, 10);
});

test('a deadline the run meets defers nothing', async (t) => {
  const { report } = await publishTimes(t, 15, { keysPerSecond: 10, deadline: 60_000 });
  assert.equal(report.published, 15);
  assert.equal(report.deferred, undefined);
});

test('unpaced (no budget), every key is published', async (t) => {
  assert.equal((await publishTimes(t, 50)).report.published, 50);
});

test("the handler's deadline is its timeout less the margin: a run that cannot publish every key answers 200, deferred", async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  const times: number[] = [];
  const errors: string[] = [];
  const logger = createLogger('test', {
    write: (line: string) => {
      if (JSON.parse(line).level >= 50) errors.push(line);
    },
  });
  const handler = createResyncHandler({
    controllers: [controllerOf(100)],
    kubeConfig: () => new KubeConfig(),
    publisher: () =>
      ({
        publish: async () => {
          times.push(Date.now());
          return 'id';
        },
      }) as never,
    logger,
    keysPerSecond: 10,
    // RESYNC_DEADLINE_MARGIN_SECONDS (30) before 32 s: no key after 2 s.
    timeoutSeconds: 32,
  });
  let answer: { status: number; body: FleetResyncReport } | undefined;
  const res = {
    status(status: number) {
      return {
        json(body: FleetResyncReport) {
          answer = { status, body };
        },
      };
    },
  };
  const done = handler({ method: 'POST', headers: {}, body: undefined } as never, res as never);
  await runClock(t, () => answer !== undefined);
  await done;
  assert.equal(answer?.status, 200);
  assert.equal(answer?.body.deferred, true);
  assert.ok(times.length > 0 && times.length <= 20 && times.every((ms) => ms < 2000), String(times.length));
  assert.equal(answer?.body.published, times.length);
  assert.equal(errors.length, 1, 'the deferral is logged as an error');
  assert.match(errors[0] ?? '', /reached its deadline/);
});
