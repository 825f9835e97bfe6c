/**
 * The resync's pacing by the request budget (core/request-budget.ts `resyncKeysPerSecond`): at most
 * `keysPerSecond` keys published per second, a burst of as many at once. A lower bound on the time
 * the keys past the burst take, which a token bucket guarantees however slow the machine.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { Controller } from '../../core/contract/controller.ts';
import { createLogger } from '../../core/log.ts';
import type { KeyMessage } from '../../core/message.ts';
import { resyncAll } from '../../functions/runtime/resync.ts';

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

async function publishTimes(n: number, keysPerSecond?: number): Promise<number[]> {
  const times: number[] = [];
  const publisher = {
    publish: async (_m: KeyMessage) => {
      times.push(performance.now());
      return 'id';
    },
  };
  const report = await resyncAll([controllerOf(n)], new KubeConfig(), publisher, quiet, {
    ...(keysPerSecond ? { keysPerSecond } : {}),
  });
  assert.equal(report.published, n);
  return times;
}

test('a paced resync publishes a burst of keysPerSecond keys, then keysPerSecond per second', async () => {
  // 10 at once, then 4 more at 10 per second: the 14th at least 400 ms after the first (300 allowed for timer slack).
  const times = await publishTimes(14, 10);
  const span = (times.at(-1) ?? 0) - (times[0] ?? 0);
  assert.ok(span >= 300, `14 keys at 10/s published within ${span} ms`);
  // The burst itself is not held back: the first 10 go out together.
  assert.ok((times[9] ?? 0) - (times[0] ?? 0) < span, 'the burst precedes the paced keys');
});

test('unpaced (no budget), every key is published', async () => {
  assert.equal((await publishTimes(50)).length, 50);
});
