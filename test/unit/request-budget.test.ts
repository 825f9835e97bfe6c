import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, type TestContext, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { PooledKubeConfig } from '../../core/pooled-kubeconfig.ts';
import {
  type ClientLimits,
  type Limiter,
  limitsOf,
  REQUESTS_PER_RECONCILE,
  RESYNC_DEADLINE_MARGIN_SECONDS,
  readRequestBudget,
  requestLimiter,
  resyncKeysPerRun,
} from '../../core/request-budget.ts';

describe('the request budget (core/request-budget.ts)', () => {
  test('unset: no budget, no limit (as controller-runtime since v0.21)', () => {
    assert.equal(readRequestBudget({}), undefined);
    assert.equal(readRequestBudget({ LEVELSET_MAX_INSTANCES: '10' }), undefined);
  });

  test("each instance's share is budget / max instances per 1-second window; the resync takes half the budget in reconciles", () => {
    const budget = readRequestBudget({ LEVELSET_REQUEST_BUDGET: '100', LEVELSET_MAX_INSTANCES: '10' });
    assert.deepEqual(budget, {
      budget: 100,
      perInstance: { limit: 10, intervalMs: 1000 },
      resyncKeysPerSecond: 100 / (2 * REQUESTS_PER_RECONCILE),
      // 16.7 keys per second rounds down: no second holds more.
      resyncPacing: { limit: 16, intervalMs: 1000 },
    });
    // The keys a resync publishes, each reconciled with REQUESTS_PER_RECONCILE requests, spend half.
    assert.equal((budget?.resyncKeysPerSecond ?? 0) * REQUESTS_PER_RECONCILE, 50);
    // A share below one request per second: one per 1 / share seconds.
    assert.deepEqual(
      readRequestBudget({ LEVELSET_REQUEST_BUDGET: '5', LEVELSET_MAX_INSTANCES: '1000' })?.perInstance,
      { limit: 1, intervalMs: 200_000 },
    );
    // A fractional share rounds down, so the instances together stay within the budget.
    assert.deepEqual(limitsOf(2.5), { limit: 2, intervalMs: 1000 });
    assert.deepEqual(limitsOf(180), { limit: 180, intervalMs: 1000 });
  });

  test('a resync run publishes at most its pacing times its timeout less the margin: 10 000 keys fit the defaults', () => {
    const budget = readRequestBudget({
      LEVELSET_REQUEST_BUDGET: '100',
      LEVELSET_MAX_INSTANCES: '100',
      LEVELSET_RESYNC_TIMEOUT_SECONDS: '720',
    });
    assert.equal(budget?.resyncTimeoutSeconds, 720);
    const perRun = resyncKeysPerRun(budget?.resyncPacing ?? { limit: 0, intervalMs: 1000 }, 720);
    assert.equal(perRun, 16 * (720 - RESYNC_DEADLINE_MARGIN_SECONDS));
    assert.ok(perRun >= 10_000, String(perRun));
    // The former default timeout, 540 s, held fewer than 10 000.
    assert.ok(resyncKeysPerRun({ limit: 16, intervalMs: 1000 }, 540) < 10_000);
    assert.equal(resyncKeysPerRun({ limit: 1, intervalMs: 2000 }, 40), 5);
    assert.equal(resyncKeysPerRun({ limit: 16, intervalMs: 1000 }, 20), 0);
  });

  test('an invalid setting is refused naming the variable', () => {
    assert.throws(
      () => readRequestBudget({ LEVELSET_REQUEST_BUDGET: '-1' }),
      /invalid request budget: LEVELSET_REQUEST_BUDGET/,
    );
    assert.throws(
      () => readRequestBudget({ LEVELSET_REQUEST_BUDGET: '10', LEVELSET_MAX_INSTANCES: '0' }),
      /LEVELSET_MAX_INSTANCES/,
    );
    assert.throws(
      () => readRequestBudget({ LEVELSET_REQUEST_BUDGET: '10', LEVELSET_RESYNC_TIMEOUT_SECONDS: 'soon' }),
      /LEVELSET_RESYNC_TIMEOUT_SECONDS/,
    );
  });
});

/** Every window of `intervalMs` starting at a call holds at most `limit` calls (`times` ascending, ms). */
function assertWindows(times: readonly number[], { limit, intervalMs }: ClientLimits): void {
  for (let i = 0; i < times.length; i++) {
    const start = times[i] ?? 0;
    const inWindow = times.filter((t) => t >= start && t < start + intervalMs).length;
    assert.ok(inWindow <= limit, `${inWindow} calls in [${start}, ${start + intervalMs}) ms, limit ${limit}`);
  }
}

/** Moves the fake clock 1 ms at a time until `done()`, letting the promises settle between steps. */
async function runClock(t: TestContext, done: () => boolean, maxMs = 60_000): Promise<void> {
  for (let ms = 0; ms < maxMs && !done(); ms++) {
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(1);
  }
  await new Promise((resolve) => setImmediate(resolve));
}

describe('the sliding-window limiter (requestLimiter), on a fake clock', () => {
  test('from a full start and under a backlog, no 1-second window holds more than the limit', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
    const limits = { limit: 10, intervalMs: 1000 };
    const take = requestLimiter(limits);
    const times: number[] = [];
    // 45 requests at once: a token bucket of burst 2 × 10 would let 30 through in the first second.
    const all = Array.from({ length: 45 }, () => take().then(() => times.push(Date.now())));
    await runClock(t, () => times.length === 45);
    await Promise.all(all);
    assert.equal(times.length, 45);
    assertWindows(times, limits);
    // The limit is a bound, not a crawl: the first 10 at once, and 10 in every second after.
    assert.equal(times.filter((ms) => ms === 0).length, 10);
    assert.ok((times.at(-1) ?? 0) < 5000, `the 45th at ${times.at(-1)} ms`);
  });

  test('after an idle spell, a second burst is bounded by the window too', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
    const limits = { limit: 5, intervalMs: 1000 };
    const take = requestLimiter(limits);
    const times: number[] = [];
    const first = Array.from({ length: 7 }, () => take().then(() => times.push(Date.now())));
    await runClock(t, () => times.length === 7);
    await Promise.all(first);
    // Idle until 1.5 s after the last, then 12 more at once: the window's history still counts.
    t.mock.timers.tick(1500 - ((Date.now() - (times.at(-1) ?? 0)) % 1000));
    const second = Array.from({ length: 12 }, () => take().then(() => times.push(Date.now())));
    await runClock(t, () => times.length === 19);
    await Promise.all(second);
    assertWindows(times, limits);
  });

  test('a burst late in a second is not let through again at the next second (a fixed window would)', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
    const limits = { limit: 10, intervalMs: 1000 };
    const take = requestLimiter(limits);
    const times: number[] = [];
    await take().then(() => times.push(Date.now()));
    t.mock.timers.tick(900);
    const burst = Array.from({ length: 20 }, () => take().then(() => times.push(Date.now())));
    await runClock(t, () => times.length === 21);
    await Promise.all(burst);
    assertWindows(times, limits);
  });

  test('below one request per second: one per interval', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
    const limits = limitsOf(0.25);
    assert.deepEqual(limits, { limit: 1, intervalMs: 4000 });
    const take = requestLimiter(limits);
    const times: number[] = [];
    const all = Array.from({ length: 3 }, () => take().then(() => times.push(Date.now())));
    await runClock(t, () => times.length === 3);
    await Promise.all(all);
    assertWindows(times, limits);
    assertWindows(times, { limit: 1, intervalMs: 1000 });
  });
});

describe('PooledKubeConfig with a client-side limit', () => {
  let served = 0;
  const server = createServer((req, res) => {
    served++;
    res.setHeader('Content-Type', 'application/json');
    res.end(
      JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: req.url?.split('/').pop() } }),
    );
  });
  let url = '';
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  const load = (kc: PooledKubeConfig) => {
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: url, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return kc;
  };

  test('every request waits for the limiter before it is sent, watches and LIST pages alike', async () => {
    const kc = load(new PooledKubeConfig({ limit: 1, intervalMs: 1000 }));
    assert.equal(typeof kc.limiter, 'function');
    // A gate in the limiter's place: the request is sent only once the gate opens.
    const sentAtGate: number[] = [];
    const gates: (() => void)[] = [];
    (kc as { limiter: Limiter | undefined }).limiter = () => {
      sentAtGate.push(served);
      return new Promise<void>((resolve) => gates.push(resolve));
    };
    const core = kc.makeApiClient(CoreV1Api);
    const reads = ['a', 'b', 'c'].map((name) => core.readNamespace({ name }));
    await new Promise((resolve) => setImmediate(resolve));
    while (gates.length < 3) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(served, 0, 'nothing sent while the limiter holds');
    for (const open of gates) open();
    await Promise.all(reads);
    assert.deepEqual(sentAtGate, [0, 0, 0]);
    assert.equal(served, 3);
  });

  test('without limits: no limiter', () => {
    assert.equal(load(new PooledKubeConfig()).limiter, undefined);
  });
});
