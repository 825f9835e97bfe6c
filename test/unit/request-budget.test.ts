import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { PooledKubeConfig } from '../../core/pooled-kubeconfig.ts';
import { REQUESTS_PER_RECONCILE, readRequestBudget } from '../../core/request-budget.ts';

describe('the request budget (core/request-budget.ts)', () => {
  test('unset: no budget, no limit (as controller-runtime since v0.21)', () => {
    assert.equal(readRequestBudget({}), undefined);
    assert.equal(readRequestBudget({ LEVELSET_MAX_INSTANCES: '10' }), undefined);
  });

  test("each instance's share is budget / max instances, burst twice that; the resync takes half the budget in reconciles", () => {
    const budget = readRequestBudget({ LEVELSET_REQUEST_BUDGET: '100', LEVELSET_MAX_INSTANCES: '10' });
    assert.deepEqual(budget, {
      budget: 100,
      perInstance: { qps: 10, burst: 20 },
      resyncKeysPerSecond: 100 / (2 * REQUESTS_PER_RECONCILE),
    });
    // The keys a resync publishes, each reconciled with REQUESTS_PER_RECONCILE requests, spend half.
    assert.equal((budget?.resyncKeysPerSecond ?? 0) * REQUESTS_PER_RECONCILE, 50);
    // A share below one request per second still takes one at once.
    assert.deepEqual(
      readRequestBudget({ LEVELSET_REQUEST_BUDGET: '5', LEVELSET_MAX_INSTANCES: '1000' })?.perInstance,
      { qps: 0.005, burst: 1 },
    );
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
  });
});

describe('PooledKubeConfig with a client-side limit', () => {
  const server = createServer((req, res) => {
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

  test('every request takes a token of the bucket first, which starts full (client-go QPS and Burst)', async () => {
    const kc = load(new PooledKubeConfig({ qps: 0.001, burst: 5 }));
    assert.equal(kc.limiter?.content, 5);
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of ['a', 'b', 'c']) await core.readNamespace({ name });
    // 3 tokens spent; at 0.001 per second, less than 0.01 came back meanwhile.
    const left = kc.limiter?.content ?? Number.NaN;
    assert.ok(left >= 2 && left < 2.01, String(left));
  });

  test('without limits: no bucket', () => {
    assert.equal(load(new PooledKubeConfig()).limiter, undefined);
  });
});
