/**
 * A failing key never slows the others (issue 32), on real parts: Pub/Sub emulator → push proxy →
 * `reconcile` under functions-framework → local API server, the secret-replicator's keys. The API
 * server fails the reads of one source Secret; the test publishes that key as the relay would and
 * observes only through the push proxy (every answer the function gave), the functions' log lines
 * and the dead-letter subscription that `levelset dead-letters` reads. A short backoff and few
 * attempts are configured (`LEVELSET_RETRY_BASE_MS`, `maxDeliveryAttempts`), so a key that fails
 * "for a minute" fails all its attempts in well under a second. A rate-limited key is retried
 * from the counts its message carries, so its backoff continues in the next function process.
 *
 * Serverless mode only: the in-process mode has no Pub/Sub (its workqueue retries with the same
 * function of the same counts, functions/runtime/retry.ts `nextRetry`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import type { FaultInjector } from '@levelset/apiserver';
import { decodeDeadLetter } from '../../cli/impl/dead-letters.ts';
import { createSubscriber } from '../../cli/pubsub.ts';
import type { Target } from '../../cli/target.ts';
import { LABELS } from '../../core/log.ts';
import {
  ATTEMPT_ATTRIBUTE,
  DEAD_LETTER_ATTRIBUTES,
  keyMessageOf,
  RATE_LIMITED_ATTRIBUTE,
} from '../../core/message.ts';
import { createKeyPublisher, type KeyPublisher } from '../../core/publish.ts';
import type { ForwardedPush } from '../../local/push-proxy.ts';
import type { LogLine } from '../../local/service.ts';
import { stackFaults } from '../../local/stack-faults.ts';
import { outcomeLines, type Pipeline, serverlessStack, startPipeline } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const CONTROLLER = 'secret-replicator';
const ATTEMPTS = 5;
const BASE_MS = 20;

/** Lines of `reconcile` about `key` (`namespace/name`) that carry `field`. */
function keyLines(p: Pipeline, key: string, field: string): LogLine[] {
  return p.logs
    .filter(({ service, line }) => {
      const labels = line[LABELS] as { key?: string } | undefined;
      return service === 'reconcile' && labels?.key === key && line[field] !== undefined;
    })
    .map(({ line }) => line);
}

/** When a line was written, epoch ms (Cloud Logging's `timestamp` `{seconds, nanos}`). */
function writtenAt(line: LogLine): number {
  const { seconds, nanos } = line.timestamp as { seconds: number; nanos: number };
  return seconds * 1000 + nanos / 1e6;
}

/**
 * Reconciles of one key that started before an earlier one ended, from their final lines (each ran
 * from its `timestamp` − `durationMs` to its `timestamp`).
 * @throws {Error} when a line lacks either (then nothing could be counted)
 */
function overlaps(lines: LogLine[]): number {
  const runs = lines
    .map((l) => ({ end: writtenAt(l), start: writtenAt(l) - Number(l.durationMs) }))
    .sort((a, b) => a.start - b.start);
  if (runs.some((r) => !Number.isFinite(r.start)))
    throw new Error('a final line without timestamp or durationMs');
  let count = 0;
  let latestEnd = Number.NEGATIVE_INFINITY;
  // 1 ms of slack: `durationMs` is rounded to the millisecond.
  for (const run of runs) {
    if (run.start < latestEnd - 1) count++;
    latestEnd = Math.max(latestEnd, run.end);
  }
  return count;
}

describe('a failing key never slows the others (serverless)', {
  skip: process.env.TEST_KUBECONFIG ? 'needs the local API server to fail requests' : false,
}, () => {
  let p: Pipeline;
  let faults: FaultInjector;
  let publisher: KeyPublisher;
  let source: string;
  const pushes: ForwardedPush[] = [];
  /** Keys a test killed the function while it reconciled them. */
  const killed: string[] = [];
  const publish = (name: string) =>
    publisher.publish(
      keyMessageOf(
        { cluster: 'default', controller: CONTROLLER, namespace: source, name },
        'watch',
        new Date().toISOString(),
      ),
    );
  const pushesOf = (name: string) =>
    pushes.filter((x) => {
      try {
        const m = JSON.parse(x.data) as { namespace?: string; name?: string };
        return m.namespace === source && m.name === name;
      } catch {
        return false;
      }
    });

  before(async () => {
    p = await startPipeline(
      async (cluster) => {
        source = `retries-${Date.now().toString(36)}`;
        await cluster.kubeConfig
          .makeApiClient(CoreV1Api)
          .createNamespace({ body: { metadata: { name: source } } });
        return { LEVELSET_SOURCE_NAMESPACE: source, LEVELSET_RETRY_BASE_MS: String(BASE_MS) };
      },
      { mode: 'serverless', maxDeliveryAttempts: ATTEMPTS, relay: false },
    );
    const local = p.cluster.local;
    assert.ok(local);
    faults = local.faults;
    const stack = serverlessStack(p);
    stack.pushProxy.onPush((push) => pushes.push(push));
    publisher = createKeyPublisher({
      projectId: stack.emulator.projectId,
      topic: stack.topology.topic.split('/').pop() ?? '',
      emulatorHost: stack.emulator.host,
    });
  });

  after(async () => {
    faults?.clear();
    await publisher?.close();
    await p?.stop();
  });

  it('is acknowledged at every attempt, requeued after the per-key backoff, then dead-lettered with the attributes `levelset dead-letters` reads', async () => {
    const stack = serverlessStack(p);
    faults.failNext({ verb: 'get', resource: 'secrets', namespace: source, name: 'broken' }, 1000, {
      status: 500,
    });
    await publish('broken');
    const target = {
      kind: 'local',
      projectId: stack.emulator.projectId,
      emulatorHost: stack.emulator.host,
      topic: stack.topology.topic,
      subscription: stack.topology.subscription,
      deadLetterSubscription: stack.topology.deadLetterSubscription,
      describe: 'test',
    } satisfies Target;
    const subscriber = createSubscriber(target);
    try {
      const [letter] = await waitFor(
        async () => {
          const pulled = await subscriber.pull(target.deadLetterSubscription, 10);
          return pulled.length ? pulled.map(decodeDeadLetter) : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 250, message: 'the failing key in the dead-letter subscription' },
      );
      assert.ok(letter);
      assert.equal(letter.message?.controller, CONTROLLER);
      assert.equal(letter.message?.name, 'broken');
      assert.equal(letter.message?.reason, 'watch', 'the key message as it was first published');
      assert.equal(letter.deliveryAttempts, ATTEMPTS);
      assert.equal(
        letter.pulled.attributes[DEAD_LETTER_ATTRIBUTES.sourceSubscription],
        stack.topology.subscription.split('/').pop(),
      );
      assert.equal(
        letter.pulled.attributes[DEAD_LETTER_ATTRIBUTES.sourceSubscriptionProject],
        stack.emulator.projectId,
      );
      assert.ok(letter.firstPublished, 'the source publish time');
      await subscriber.ack(target.deadLetterSubscription, [letter.pulled.ackId]);
    } finally {
      await subscriber.close();
    }
    // Every attempt was a push of the keys subscription, answered 2xx; each attempt numbered in its message.
    const key = `${source}/broken`;
    // The push proxy records a push once its answer is sent, which may follow the dead letter.
    const attempts = await waitFor(
      () => (pushesOf('broken').length >= ATTEMPTS ? pushesOf('broken') : undefined),
      {
        message: 'every attempt of the broken key recorded',
      },
    );
    assert.equal(attempts.length, ATTEMPTS);
    assert.deepEqual(
      attempts.map((x) => x.status),
      Array(ATTEMPTS).fill(204),
    );
    assert.deepEqual(
      attempts.map((x) => x.attributes[ATTEMPT_ATTRIBUTE] ?? '1'),
      ['1', '2', '3', '4', '5'],
    );
    assert.deepEqual(
      outcomeLines(p, CONTROLLER, key).map((l) => l.outcome),
      Array(ATTEMPTS).fill('transient'),
    );
    // The delays asked: client-go's per-item exponential backoff from the configured base.
    assert.deepEqual(
      keyLines(p, key, 'retryInMs').map((l) => l.retryInMs),
      [BASE_MS, BASE_MS * 2, BASE_MS * 4, BASE_MS * 8],
    );
    assert.equal(stack.pushProxy.stats().deadLettered, 0, 'the function dead-lettered, not the proxy');
  });

  it('a 429 with Retry-After is retried after that delay, then converges', async () => {
    faults.failNext({ verb: 'get', resource: 'secrets', namespace: source, name: 'limited' }, 1, {
      status: 429,
      retryAfterSeconds: 1,
    });
    await publish('limited');
    const key = `${source}/limited`;
    // The push proxy records a push once its answer is sent, after the outcome line: wait for both.
    await waitFor(
      () =>
        outcomeLines(p, CONTROLLER, key).some((l) => l.outcome === 'success') &&
        pushesOf('limited').length >= 2,
      { timeoutMs: 30_000, message: 'the rate-limited key reconciled' },
    );
    // The kit answers a rate limit with `rateLimited` (functions/kit/rate-limits.ts), which the
    // runtime retries after the delay the answer asked for: not a failure, so the key's attempts are
    // not spent on it.
    assert.deepEqual(
      outcomeLines(p, CONTROLLER, key).map((l) => [l.outcome, l.rateLimited, l.retryAfterMs]),
      [
        ['requeue', true, 1000],
        ['success', undefined, undefined],
      ],
    );
    assert.deepEqual(
      keyLines(p, key, 'retryInMs').map((l) => l.retryInMs),
      [1000],
    );
    assert.deepEqual(
      pushesOf('limited').map((x) => [
        x.status,
        x.attributes[RATE_LIMITED_ATTRIBUTE],
        x.attributes[ATTEMPT_ATTRIBUTE],
      ]),
      [
        [204, undefined, undefined],
        [204, '1', undefined],
      ],
      'never a non-2xx answer; the rate limit counted in the message, apart from the attempts',
    );
  });

  // Before any key whose retries may still be pending (the slow one): the test tells the killed
  // delivery by the pushes the proxy received, and no other key's may be among them.
  it("a rate-limited key's backoff continues in another function process, from the count its message carries", async () => {
    const stack = serverlessStack(p);
    const name = 'throttled';
    const key = `${source}/${name}`;
    const match = { verb: 'get', resource: 'secrets', namespace: source, name } as const;
    // A rate limit that names no delay (a 429 without Retry-After, Google's RESOURCE_EXHAUSTED
    // without RetryInfo): the runtime's backoff, BASE_MS doubling per rate-limited delivery. Each
    // read of the key is slow until the function is killed (5 s: it is killed while it reconciles
    // the key however busy the machine), then fast again. The killed delivery's read, abandoned,
    // takes no failure: three reads are rate limited, the first process's and two of the second's.
    const limited = faults.failNext(match, 3, { status: 429, retryAfterSeconds: null });
    const slow = faults.addLatency(match, 5_000);
    try {
      const first = stack.reconcile.pid;
      const pushed = stack.pushProxy.stats().pushes;
      await publish(name);
      // The first delivery rate-limited and requeued, the requeued one pushed (and reading, slowly):
      // the first process is killed mid-delivery, and a second one serves the key from then on.
      await waitFor(
        () => keyLines(p, key, 'retryInMs').length === 1 && stack.pushProxy.stats().pushes >= pushed + 2,
        { message: 'the requeued delivery of the rate-limited key in flight' },
      );
      await stackFaults(stack).restartFunction('reconcile');
      slow();
      const second = stack.reconcile.pid;
      assert.notEqual(second, first);
      // The push proxy records a push once its answer is sent, after the outcome line: wait for both.
      await waitFor(
        () =>
          outcomeLines(p, CONTROLLER, key).some((l) => l.outcome === 'success') && pushesOf(name).length >= 5,
        { timeoutMs: 60_000, message: 'the key reconciled once the rate limit cleared' },
      );
      // Pub/Sub redelivered the killed delivery's message (rate limit 1) to the second process.
      assert.deepEqual(
        pushesOf(name).map((x) => [
          x.status,
          x.attributes[RATE_LIMITED_ATTRIBUTE],
          x.attributes[ATTEMPT_ATTRIBUTE],
        ]),
        [
          [204, undefined, undefined],
          [502, '1', undefined],
          [204, '1', undefined],
          [204, '2', undefined],
          [204, '3', undefined],
        ],
      );
      killed.push(name);
      // The delays asked, by process: the second continues the first's backoff (2, 4 × base), it
      // does not start again at the base.
      const delays = (pid: number) =>
        keyLines(p, key, 'retryInMs')
          .filter((l) => l.pid === pid)
          .map((l) => l.retryInMs);
      assert.deepEqual(delays(first), [BASE_MS]);
      assert.deepEqual(delays(second), [BASE_MS * 2, BASE_MS * 4]);
      assert.deepEqual(
        outcomeLines(p, CONTROLLER, key).map((l) => l.outcome),
        ['requeue', 'requeue', 'requeue', 'success'],
        'rate limits are no failures',
      );
    } finally {
      limited();
      slow();
    }
  });

  it('no key is reconciled twice at once: a slow, failing key whose events keep arriving', async () => {
    const name = 'slow';
    const match = { verb: 'get', resource: 'secrets', namespace: source, name } as const;
    const slow = faults.addLatency(match, 150);
    const failing = faults.failNext(match, 6, { status: 503 });
    try {
      // Events keep arriving while the key fails and is requeued.
      for (let i = 0; i < 12; i++) {
        await publish(name);
        await new Promise((resolve) => setImmediate(resolve));
      }
      const key = `${source}/${name}`;
      await waitFor(
        () =>
          outcomeLines(p, CONTROLLER, key).filter((l) => l.outcome === 'success').length > 0 &&
          pushesOf(name).length === outcomeLines(p, CONTROLLER, key).length &&
          serverlessStack(p).pushProxy.stats().retrying === 0,
        { timeoutMs: 60_000, message: 'the slow key reconciled and every delivery answered' },
      );
      await publisher.flush();
      const lines = outcomeLines(p, CONTROLLER, key);
      assert.ok(
        lines.some((l) => l.outcome === 'transient'),
        'some attempts failed and were requeued',
      );
      assert.ok(keyLines(p, key, 'retryInMs').length > 0, 'requeued');
      // Every reconcile of the key was a push of the keys subscription (none beside it) …
      const pushedIds = new Set(pushesOf(name).map((x) => x.messageId));
      assert.deepEqual(
        lines.filter((l) => !pushedIds.has(String(l.messageId))).map((l) => l.messageId),
        [],
        'every reconcile came through the ordered subscription',
      );
      // … and none ran beside another.
      assert.equal(overlaps(lines), 0);
    } finally {
      slow();
      failing();
    }
  });

  it('the reconcile function never answered non-2xx', () => {
    const statuses = serverlessStack(p).pushProxy.stats().statuses;
    // But for the deliveries the test killed it in, which the push proxy answered 502.
    const killedIn = killed.flatMap((name) => pushesOf(name).filter((x) => x.status === 502));
    assert.deepEqual(
      Object.entries(statuses).filter(([s]) => !s.startsWith('2')),
      killedIn.length ? [['502', killedIn.length]] : [],
      JSON.stringify(statuses),
    );
  });
});
