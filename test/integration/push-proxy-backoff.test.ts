/**
 * The local push proxy's model of Cloud Pub/Sub's push backoff (local/push-proxy.ts `pushBackoff`):
 * after a non-2xx answer every later push of the subscription waits, the wait doubling at each
 * further failure up to its maximum, and a success ends it. Pushes are POSTed to the proxy as the
 * emulator would; the function is a real HTTP server answering as told.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { PUSH_BACKOFF, type PushProxy, startPushProxy } from '../../local/push-proxy.ts';

describe('push proxy: push backoff model', () => {
  let answer = 204;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(answer).end());
  });
  let proxy: PushProxy;
  let plain: PushProxy;
  let n = 0;
  const push = async (to: PushProxy) => {
    const res = await fetch(to.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        message: { data: '', messageId: String(++n), attributes: {} },
        subscription: 's',
      }),
    });
    await res.arrayBuffer();
    return res.status;
  };

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const target = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
    const common = {
      target,
      // Never reached: no message here is dead-lettered.
      emulatorHost: '127.0.0.1:1',
      projectId: 'p',
      deadLetterTopic: 'projects/p/topics/d',
      subscription: 'projects/p/subscriptions/s',
      maxDeliveryAttempts: 100,
    };
    proxy = await startPushProxy({ ...common, pushBackoff: { minimumMs: 1, maximumMs: 4 } });
    plain = await startPushProxy(common);
  });

  after(async () => {
    await proxy?.stop();
    await plain?.stop();
    await new Promise((resolve) => server.close(resolve));
  });

  it('documents Pub/Sub’s bounds as the defaults', () => {
    assert.deepEqual(PUSH_BACKOFF, { minimumMs: 100, maximumMs: 60_000 });
  });

  it('doubles from the minimum to the maximum at each failure and ends at the first success', async () => {
    answer = 500;
    const seen: number[] = [];
    for (let i = 0; i < 4; i++) {
      assert.equal(await push(proxy), 500);
      seen.push(proxy.stats().pushBackoffMs);
    }
    assert.deepEqual(seen, [1, 2, 4, 4]);
    answer = 204;
    assert.equal(await push(proxy), 204);
    assert.equal(proxy.stats().pushBackoffMs, 0);
    assert.deepEqual(proxy.stats().statuses, { 204: 1, 500: 4 });
  });

  it('is off unless asked for (the emulator’s behaviour)', async () => {
    answer = 500;
    assert.equal(await push(plain), 500);
    assert.equal(plain.stats().pushBackoffMs, 0);
  });
});
