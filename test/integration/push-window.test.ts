/**
 * The local push proxy's model of Cloud Pub/Sub's push concurrency (local/push-proxy.ts
 * `pushWindow`, local/push-window.ts), against the real emulator: the proxy pulls a pull
 * subscription and pushes to an HTTP server standing for the function, at most a slow-start
 * window at once. The window opens as pushes succeed and closes on failures; what the proxy does
 * in front of the emulator's push subscription still holds: attempts counted into the push body,
 * dead letters after the last attempt, one push at a time per ordering key and in order, a failed
 * message pushed again before the later messages of its key.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type Message, PubSub } from '@google-cloud/pubsub';
import { DEAD_LETTER_ATTRIBUTES } from '../../core/message.ts';
import { emulatorClientOptions } from '../../core/publish.ts';
import { ensureKeysTopology, type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import { type PushProxy, startPushProxy } from '../../local/push-proxy.ts';
import { waitFor } from '../support/wait.ts';

/** One push the server received: the message's data, its ordering key, the attempt, the answer, when. */
interface Received {
  data: string;
  key: string | undefined;
  attempt: number;
  status: number;
  /** Pushes in flight at the server when this one arrived (itself included). */
  concurrent: number;
  startedAt: number;
  endedAt: number;
}

describe('push proxy: Cloud Pub/Sub push window model', () => {
  let emulator: PubSubEmulator;
  let pubsub: PubSub;
  let target: string;
  const received: Received[] = [];
  let inFlight = 0;
  /** data → how many of its first pushes fail (500); `always` fails every push. */
  const failures = new Map<string, number | 'always'>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      inFlight++;
      const startedAt = performance.now();
      const concurrent = inFlight;
      const envelope = JSON.parse(Buffer.concat(chunks).toString()) as {
        message: { data: string; orderingKey?: string };
        deliveryAttempt: number;
      };
      const data = Buffer.from(envelope.message.data, 'base64').toString();
      const failing = failures.get(data);
      const status =
        failing === 'always' || (failing !== undefined && envelope.deliveryAttempt <= failing) ? 500 : 204;
      setTimeout(() => {
        inFlight--;
        received.push({
          data,
          key: envelope.message.orderingKey,
          attempt: envelope.deliveryAttempt,
          status,
          concurrent,
          startedAt,
          endedAt: performance.now(),
        });
        res.writeHead(status).end();
      }, 20);
    });
  });
  const proxies: PushProxy[] = [];

  /** A topic, its dead-letter topic and a pull subscription, and a proxy pulling it with a window. */
  const pulled = async (topic: string) => {
    const topology = await ensureKeysTopology({
      projectId: emulator.projectId,
      emulatorHost: emulator.host,
      topic,
      pushEndpoint: undefined,
    });
    const proxy = await startPushProxy({
      target,
      emulatorHost: emulator.host,
      projectId: emulator.projectId,
      deadLetterTopic: topology.deadLetterTopic,
      subscription: topology.subscription,
      maxDeliveryAttempts: 3,
      pushWindow: { initial: 1, maximum: 16 },
      retryBackoff: { minimumMs: 50, maximumMs: 200 },
    });
    proxies.push(proxy);
    await proxy.startPulling();
    const publisher = pubsub.topic(topic, { messageOrdering: true, batching: { maxMessages: 1 } });
    return { topology, proxy, publisher };
  };

  before(async () => {
    emulator = await startPubSubEmulator();
    pubsub = new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.host) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    target = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
  });

  after(async () => {
    for (const proxy of proxies) await proxy.stop();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await pubsub?.close();
    await emulator?.stop();
  });

  let unordered: Awaited<ReturnType<typeof pulled>>;

  it('opens the window as pushes succeed: one push at first, then many at once', async () => {
    unordered = await pulled('window-grows');
    const { proxy, publisher } = unordered;
    assert.deepEqual(proxy.stats().pushWindow, { size: 1, inFlight: 0 });
    const n = 200;
    await Promise.all(
      Array.from({ length: n }, (_, i) => publisher.publishMessage({ data: Buffer.from(`m${i}`) })),
    );
    await waitFor(() => proxy.stats().acknowledged === n, {
      timeoutMs: 60_000,
      message: 'every message pushed',
    });
    const first = received.slice(0, 3).map((r) => r.concurrent);
    assert.equal(first[0], 1, 'the first push alone');
    assert.ok(Math.max(...first) <= 2, `the first pushes, a window of 1 then 2: ${first}`);
    const most = Math.max(...received.map((r) => r.concurrent));
    assert.ok(most > 2, `more pushes at once than the emulator's two: ${most}`);
    assert.equal(proxy.stats().pushWindow?.size, 16, 'grown to its maximum');
    assert.equal(received.length, n, 'each message pushed once');
    assert.equal(new Set(received.map((r) => r.data)).size, n);
  });

  it('closes the window on failures, dead-letters after the last attempt, and opens again', async () => {
    const { proxy, publisher, topology } = unordered;
    received.length = 0;
    const dead: Message[] = [];
    const inspect = pubsub.subscription(topology.deadLetterSubscription);
    inspect.on('message', (m: Message) => {
      dead.push(m);
      m.ack();
    });
    try {
      const failing = ['f0', 'f1', 'f2', 'f3'];
      for (const f of failing) failures.set(f, 'always');
      for (const f of failing) await publisher.publishMessage({ data: Buffer.from(f) });
      await waitFor(() => proxy.stats().deadLettered === failing.length, {
        timeoutMs: 30_000,
        message: 'the failing messages dead-lettered',
      });
      assert.equal(proxy.stats().pushWindow?.size, 1, 'halved at each of 12 failures, from 16 to 1');
      assert.deepEqual(
        received.map((r) => r.status),
        failing.flatMap(() => [500, 500, 500]),
      );
      await waitFor(() => dead.length === failing.length, { timeoutMs: 30_000, message: 'the dead letters' });
      assert.deepEqual(dead.map((m) => m.data.toString()).sort(), failing);
      for (const m of dead) assert.equal(m.attributes[DEAD_LETTER_ATTRIBUTES.deliveryAttempts], '3');
      // Successes open it again, one push each. Delivery is at least once: a dead-lettered message
      // the emulator delivers again (its ack late, on a loaded machine) now succeeds, and counts.
      for (const f of failing) failures.delete(f);
      const acknowledged = proxy.stats().acknowledged;
      for (let i = 0; i < 5; i++) await publisher.publishMessage({ data: Buffer.from(`again${i}`) });
      await waitFor(
        () =>
          new Set(received.filter((r) => r.data.startsWith('again') && r.status === 204).map((r) => r.data))
            .size === 5 && proxy.stats().acknowledged >= acknowledged + 5,
        { timeoutMs: 30_000, message: 'the later messages pushed' },
      );
      const successes = proxy.stats().acknowledged - acknowledged;
      assert.ok(successes >= 5);
      assert.equal(proxy.stats().pushWindow?.size, 1 + successes);
    } finally {
      await inspect.close();
    }
  });

  it('pushes one message of an ordering key at a time, in order, a failed one again before the next', async () => {
    const { proxy, publisher } = await pulled('window-ordered');
    received.length = 0;
    failures.set('a', 2);
    const others = Array.from({ length: 10 }, (_, i) => `x${i}`);
    await Promise.all([
      ...['a', 'b', 'c', 'd'].map((d) =>
        publisher.publishMessage({ data: Buffer.from(d), orderingKey: 'k' }),
      ),
      ...others.map((d) => publisher.publishMessage({ data: Buffer.from(d), orderingKey: d })),
    ]);
    await waitFor(() => proxy.stats().acknowledged === 4 + others.length, {
      timeoutMs: 30_000,
      message: 'every message pushed',
    });
    const ofKey = received.filter((r) => r.key === 'k').sort((x, y) => x.startedAt - y.startedAt);
    assert.deepEqual(
      ofKey.map((r) => `${r.data}#${r.attempt}:${r.status}`),
      ['a#1:500', 'a#2:500', 'a#3:204', 'b#1:204', 'c#1:204', 'd#1:204'],
    );
    for (let i = 1; i < ofKey.length; i++)
      assert.ok(
        (ofKey[i] as Received).startedAt >= (ofKey[i - 1] as Received).endedAt,
        'no two pushes of the key at once',
      );
    assert.deepEqual(
      received.filter((r) => r.key !== 'k').map((r) => r.status),
      others.map(() => 204),
    );
  });

  it("the emulator refused none of the pulls' acknowledgements and lease extensions", () => {
    // Every message of the tests above was acknowledged (and leased) through the Pub/Sub client's
    // queues; with `maxMessages: 1` each one first sent an empty request the emulator refuses.
    assert.ok(proxies.length > 0 && proxies.every((p) => p.stats().acknowledged > 0));
    assert.deepEqual(
      proxies.map((p) => p.stats().ackErrors),
      proxies.map(() => 0),
    );
  });
});
