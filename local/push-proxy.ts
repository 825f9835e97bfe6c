/**
 * The local stack's push endpoint: a small HTTP proxy between the Pub/Sub emulator's push
 * subscription and the `reconcile` function that does what Pub/Sub's dead-letter policy does in the
 * cloud, because the emulator cannot.
 *
 * Pub/Sub emulator 0.8.20 cannot dead-letter from a subscription with message ordering: when a
 * message reaches `maxDeliveryAttempts` its push loop dies (`NullPointerException … publisherService
 * is null at MessageBacklog.pull`) and nothing is delivered again, for any key. So the local keys
 * subscription has no dead-letter policy (local/pubsub-emulator.ts), and this proxy:
 *
 * - counts delivery attempts per message id and adds `deliveryAttempt` to the push body, as Pub/Sub
 *   does for a subscription with a dead-letter policy (the emulator never sends it);
 * - forwards the body to the function and answers the emulator with the function's status, so the
 *   subscription's retry policy (backoff) applies as in the cloud;
 * - after `maxDeliveryAttempts` failed attempts publishes the message to the dead-letter topic with
 *   the attributes Pub/Sub adds (`CloudPubSubDeadLetterSource*`) and acknowledges it (204): the key
 *   is in the dead-letter subscription and the next message of its ordering key flows, as in the cloud.
 *
 * One difference on purpose: a push the function's port refuses (the function is not running, e.g.
 * restarting) is answered 503 without counting an attempt. Cloud Run never refuses a connection — a
 * restarted instance is replaced behind the same URL — so locally a function down for a few seconds
 * must not spend a key's attempts.
 *
 * As an option ({@link PushProxyOptions.pushBackoff}) it models what Cloud Pub/Sub does to a push
 * endpoint that answers non-2xx and the emulator does not: push backoff, which delays the
 * subscription's next pushes (every key's) from 100 ms doubling up to 60 s, and resets on a success
 * (Pub/Sub's push subscription documentation). The bench's `retries` section measures with it.
 *
 * It also keeps the delivery figures the watchdog (local/watchdog.ts) and `levelset status` read
 * (`GET /deliveries`, answered by the proxy itself).
 */
import { Agent, createServer, type IncomingMessage, request, type Server } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { type Message, PubSub, type Subscription } from '@google-cloud/pubsub';
import '../core/pubsub-lease.ts';
import pLimit from 'p-limit';
import { DEAD_LETTER_ATTRIBUTES } from '../core/message.ts';
import { emulatorClientOptions } from '../core/publish.ts';
import { LOCAL_RETRY_BACKOFF } from './pubsub-emulator.ts';
import { PushWindow, type PushWindowOptions } from './push-window.ts';

/** Successful push answers: Pub/Sub acknowledges on 102, 200, 201, 202 and 204 ("Push subscriptions"). */
const ACK_STATUSES = new Set([102, 200, 201, 202, 204]);

/** Largest push body forwarded, bytes (a Pub/Sub message is at most 10 MB). */
const MAX_PUSH_BYTES = 16 * 1024 * 1024;

export interface PushProxyOptions {
  /** Where pushes go: the `reconcile` function's URL. */
  target: string;
  /** `host:port` of the emulator. */
  emulatorHost: string;
  projectId: string;
  /** Full name of the dead-letter topic (`projects/<p>/topics/<t>`). */
  deadLetterTopic: string;
  /** Full name of the keys topic, for the dead letter's source attributes. */
  subscription: string;
  /** Failed attempts before a message is dead-lettered (Pub/Sub allows 5–100); default 5. */
  maxDeliveryAttempts?: number;
  /** ms one forwarded push may take (the subscription's ack deadline); default 60 000. */
  timeoutMs?: number;
  /**
   * Pushes forwarded to the function at once; the rest wait here, in arrival order. Default: no
   * limit. The resync subscription's proxy has one (its own push rate), so that a resync's backlog
   * takes a bounded share of the function and live keys, on their own subscription, pass it.
   */
  maxConcurrentPushes?: number;
  /**
   * The function instance's request slots, shared by every proxy in front of the same function
   * (p-limit's limiter): Cloud Run's `max_instance_request_concurrency` of the one local instance,
   * so the function never serves more requests at once than a deployed instance does (its memory,
   * measured locally, is then an instance's). Taken after {@link maxConcurrentPushes}'s slot; the
   * push's timeout runs from then. Default: no limit.
   */
  instanceSlots?: <T>(fn: () => Promise<T>) => Promise<T>;
  /**
   * Cloud Pub/Sub's push backoff: after a non-2xx answer (or no answer) every later push of the
   * subscription waits `minimumMs` (default 100), doubling at each further failure up to `maximumMs`
   * (default 60 000), until a push succeeds. `true`: the documented defaults. Default: off (the emulator's behaviour).
   */
  pushBackoff?: boolean | { minimumMs?: number; maximumMs?: number };
  /**
   * Cloud Pub/Sub's push concurrency (the stack's `cloud` push model): instead of answering the
   * emulator's pushes, the proxy pulls {@link subscription} (a pull subscription; streaming pull) once
   * {@link PushProxy.startPulling} is called, and pushes each message to the function itself, at
   * most a slow-start window at once (local/push-window.ts), one at a time per ordering key, in
   * the order pulled. A failed push is pushed again by the proxy after the subscription's retry
   * backoff ({@link retryBackoff}), its lease kept and the later messages of its key waiting behind
   * it, as Pub/Sub redelivers an ordered message; an acknowledged or dead-lettered message is
   * acknowledged. `true`: the model's defaults. Default: off (the emulator pushes, two at a time).
   */
  pushWindow?: boolean | PushWindowOptions;
  /**
   * With {@link pushWindow}: the subscription's retry policy, ms (a failed message's n-th push
   * again waits `minimumMs × 2^(n-1)`, at most `maximumMs`); default the local subscriptions'
   * ({@link LOCAL_RETRY_BACKOFF}).
   */
  retryBackoff?: { minimumMs: number; maximumMs: number };
}

/** What the function's answer to a push was: acknowledged, a failed attempt, or no attempt (its port refused the push). */
type PushOutcome = 'acknowledged' | 'failed' | 'refused';

/**
 * The acknowledgement batching of the proxy's pull (`@google-cloud/pubsub` `BatchOptions`): sent at
 * the next turn of the event loop, together when several come in the same turn. Not `maxMessages:
 * 1`: the library's queue flushes before it adds a message when the batch would reach `maxMessages`
 * (message-queues.js `MessageQueue.add`, 6.3.0), so at 1 every acknowledgement and lease extension
 * first sent an empty request, which the emulator refuses (`INVALID_ARGUMENT: No ack ids
 * specified.`) and whose error google-gax decodes by building a protobuf root for its details:
 * two failed RPCs per pushed message, and about a sixth of the stack process's CPU in the peer bench.
 */
export const PULL_ACK_BATCHING = { maxMilliseconds: 0 } as const;

/** Cloud Pub/Sub's push backoff bounds, ms (Pub/Sub's push subscription documentation). */
export const PUSH_BACKOFF = { minimumMs: 100, maximumMs: 60_000 } as const;

/** One push the proxy forwarded, as {@link PushProxy.onPush} reports it. */
export interface ForwardedPush {
  messageId: string | undefined;
  /** The message's attributes and decoded data (UTF-8). */
  attributes: Record<string, string>;
  data: string;
  /** The function's answer (502 when it broke or timed out). */
  status: number;
  /** `performance.now()` when the push was forwarded, and when its answer came, ms. */
  startedAt: number;
  endedAt: number;
}

/** Delivery figures of the local push path. Times are epoch ms; `undefined` when it never happened. */
export interface DeliveryStats {
  /** Pushes received from the emulator (every attempt). */
  pushes: number;
  /** Pushes the function acknowledged (2xx). */
  acknowledged: number;
  /** Messages dead-lettered by the proxy. */
  deadLettered: number;
  /** {@link DeliveryStats.deadLettered} by the message's `controller` attribute (`?` when it has none). */
  deadLetteredByController: Record<string, number>;
  /** Pushes answered 503 because the function's port refused the connection (not counted as attempts). */
  refused: number;
  /** Last push received from the emulator, whatever its outcome. */
  lastPushAt: number | undefined;
  /** Last push the function acknowledged. */
  lastAcknowledgedAt: number | undefined;
  /** Messages with a failed attempt that are neither acknowledged nor dead-lettered yet. */
  retrying: number;
  /** The function's answers by HTTP status (502 for a push that broke or timed out). */
  statuses: Record<string, number>;
  /** The push backoff in force now, ms (0: none; {@link PushProxyOptions.pushBackoff}). */
  pushBackoffMs: number;
  /** With {@link PushProxyOptions.pushWindow}: the push window now, and the pushes outstanding in it. */
  pushWindow?: { size: number; inFlight: number };
  /**
   * With {@link PushProxyOptions.pushWindow}: acknowledgement and lease RPCs of the pull the emulator
   * refused (the Pub/Sub client's `debug` events; each one also costs the client a decoding of the
   * error's details). 0 in a healthy run; `@google-cloud/pubsub` only reports them there.
   */
  ackErrors?: number;
}

export interface PushProxy {
  /** `http://127.0.0.1:PORT/`: the push endpoint of the keys subscription. */
  url: string;
  stats(): DeliveryStats;
  /** Serves `provider()` as JSON to `GET /deliveries` (what `levelset status` reads). */
  serveStatus(provider: () => object): void;
  /** Called with the id of every message that left the subscription (acknowledged or dead-lettered). */
  onSettled(listener: (messageId: string) => void): void;
  /** Called with every push forwarded to the function, once it was answered. */
  onPush(listener: (push: ForwardedPush) => void): void;
  /**
   * With {@link PushProxyOptions.pushWindow}: pulls the subscription (which must exist) from now
   * on, again on a new stream when called again (after the subscription was re-created). Without
   * it: nothing.
   */
  startPulling(): Promise<void>;
  stop(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_PUSH_BYTES) throw new Error(`push body over ${MAX_PUSH_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Whether `err` (from {@link forward}) is a refused connection: nothing listens on the function's port. */
function connectionRefused(err: unknown): boolean {
  const e = err as { code?: string; errors?: { code?: string }[] };
  return e.code === 'ECONNREFUSED' || !!e.errors?.some((x) => x.code === 'ECONNREFUSED');
}

/**
 * POSTs `body` to `url` over a kept-alive connection of `agent` (node:http: a push costs one request on an
 * open socket, about a millisecond less than fetch's) and resolves with the answer's status once
 * its body is read.
 * @throws the request's error (`ECONNREFUSED`, a reset), or a `TimeoutError` after `timeoutMs`
 */
function forward(
  agent: Agent,
  url: URL,
  method: string,
  contentType: string,
  body: Buffer | undefined,
  timeoutMs: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        agent,
        headers: {
          'content-type': contentType,
          ...(body ? { 'content-length': String(body.length) } : {}),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 502));
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () =>
      req.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { name: 'TimeoutError' })),
    );
    req.on('error', reject);
    req.end(body);
  });
}

interface PushMessage {
  data?: string;
  attributes?: Record<string, string>;
  messageId?: string;
  message_id?: string;
  publishTime?: string;
}

/**
 * Starts the proxy on a free port of 127.0.0.1.
 * @throws {Error} when it cannot listen.
 */
export async function startPushProxy(options: PushProxyOptions): Promise<PushProxy> {
  const maxAttempts = options.maxDeliveryAttempts ?? 5;
  /** Keep-alive connections to the function, reused across pushes. */
  const agent = new Agent({ keepAlive: true });
  const forwardSlot = pLimit(options.maxConcurrentPushes ?? Number.POSITIVE_INFINITY);
  const instanceSlot = options.instanceSlots ?? (<T>(fn: () => Promise<T>) => fn());
  const pubsub = new PubSub({ projectId: options.projectId, ...emulatorClientOptions(options.emulatorHost) });
  const deadLetters = pubsub.topic(options.deadLetterTopic, { batching: { maxMessages: 1 } });
  /** Failed attempts so far, by message id. */
  const attempts = new Map<string, number>();
  const listeners: ((messageId: string) => void)[] = [];
  const pushListeners: ((push: ForwardedPush) => void)[] = [];
  const backoff =
    options.pushBackoff === true
      ? PUSH_BACKOFF
      : options.pushBackoff
        ? { ...PUSH_BACKOFF, ...options.pushBackoff }
        : undefined;
  /** The push backoff in force (ms) and when pushes may resume (epoch ms). */
  let backoffMs = 0;
  let resumeAt = 0;
  const answered = (status: number) => {
    if (!backoff) return;
    backoffMs = ACK_STATUSES.has(status)
      ? 0
      : Math.min(backoff.maximumMs, backoffMs ? backoffMs * 2 : backoff.minimumMs);
    resumeAt = Date.now() + backoffMs;
  };
  const stats: Omit<DeliveryStats, 'retrying' | 'pushBackoffMs'> = {
    statuses: {},
    pushes: 0,
    acknowledged: 0,
    deadLettered: 0,
    deadLetteredByController: {},
    refused: 0,
    lastPushAt: undefined,
    lastAcknowledgedAt: undefined,
  };
  let ackErrors = 0;
  const settle = (id: string | undefined) => {
    if (id === undefined) return;
    attempts.delete(id);
    for (const l of listeners) l(id);
  };

  /**
   * One delivery of `body` (a push request's body, as the emulator sends it): counted, forwarded to
   * the function, dead-lettered after its last attempt. Resolves with the status to answer the
   * emulator (2xx: the message leaves the subscription), and the function's outcome (`failed`
   * for a message dead-lettered after its last failure; `refused`: no attempt).
   */
  const deliver = async (
    body: Buffer,
    method: string,
    path: string,
    contentType: string,
  ): Promise<{ status: number; outcome: PushOutcome }> => {
    stats.pushes++;
    stats.lastPushAt = Date.now();
    let envelope: { message?: PushMessage; deliveryAttempt?: number } | undefined;
    try {
      envelope = JSON.parse(body.toString('utf8')) as typeof envelope;
    } catch {
      envelope = undefined;
    }
    const message = envelope?.message;
    const id = message?.messageId ?? message?.message_id;
    const attempt = (id !== undefined ? (attempts.get(id) ?? 0) : 0) + 1;
    const forwarded =
      envelope && typeof envelope === 'object' && id !== undefined
        ? Buffer.from(JSON.stringify({ ...envelope, deliveryAttempt: attempt }))
        : body;
    let status: number;
    // Cloud Pub/Sub's push backoff: every push waits while it is in force.
    for (let wait = resumeAt - Date.now(); wait > 0; wait = resumeAt - Date.now()) await delay(wait);
    const startedAt = performance.now();
    try {
      status = await forwardSlot(() =>
        instanceSlot(() =>
          forward(
            agent,
            new URL(path, options.target),
            method,
            contentType,
            method === 'GET' || method === 'HEAD' ? undefined : forwarded,
            options.timeoutMs ?? 60_000,
          ),
        ),
      );
    } catch (err) {
      if (connectionRefused(err)) {
        stats.refused++;
        return { status: 503, outcome: 'refused' };
      }
      status = 502; // reset mid-request, timeout: a failed attempt
    }
    answered(status);
    stats.statuses[status] = (stats.statuses[status] ?? 0) + 1;
    if (pushListeners.length) {
      const push: ForwardedPush = {
        messageId: id,
        attributes: message?.attributes ?? {},
        data: Buffer.from(message?.data ?? '', 'base64').toString('utf8'),
        status,
        startedAt,
        endedAt: performance.now(),
      };
      for (const l of pushListeners) l(push);
    }
    if (ACK_STATUSES.has(status)) {
      stats.acknowledged++;
      stats.lastAcknowledgedAt = Date.now();
      settle(id);
      return { status, outcome: 'acknowledged' };
    }
    if (id === undefined || !message) return { status, outcome: 'failed' };
    attempts.set(id, attempt);
    if (attempt < maxAttempts) return { status, outcome: 'failed' };
    try {
      await deadLetters.publishMessage({
        data: Buffer.from(message.data ?? '', 'base64'),
        attributes: {
          ...message.attributes,
          [DEAD_LETTER_ATTRIBUTES.deliveryAttempts]: String(attempt),
          [DEAD_LETTER_ATTRIBUTES.sourceSubscription]: options.subscription.split('/').pop() ?? '',
          [DEAD_LETTER_ATTRIBUTES.sourceSubscriptionProject]: options.projectId,
          ...(message.publishTime ? { [DEAD_LETTER_ATTRIBUTES.sourcePublishTime]: message.publishTime } : {}),
        },
      });
    } catch {
      // not dead-lettered yet: Pub/Sub redelivers, the next failure tries again
      return { status: 503, outcome: 'failed' };
    }
    stats.deadLettered++;
    const controller = message.attributes?.controller ?? '?';
    stats.deadLetteredByController[controller] = (stats.deadLetteredByController[controller] ?? 0) + 1;
    settle(id);
    // The function's failure was an attempt; the message leaves the subscription.
    return { status: 204, outcome: 'failed' };
  };

  const window = options.pushWindow
    ? new PushWindow(options.pushWindow === true ? {} : options.pushWindow)
    : undefined;
  const retry = options.retryBackoff ?? LOCAL_RETRY_BACKOFF;
  /** Aborts the pulled messages' waits (their retry backoff) at the stop. */
  const stopping = new AbortController();
  let subscriber: Subscription | undefined;
  let reopen: NodeJS.Timeout | undefined;
  /** The last delivery queued per ordering key: the next message of the key waits for it. */
  const keyChains = new Map<string, Promise<void>>();
  /** Pushes a pulled message until it is acknowledged or dead-lettered, through the window. */
  const pushPulled = async (m: Message): Promise<void> => {
    if (!window) return;
    const publishTime = m.publishTime.toISOString();
    const body = Buffer.from(
      JSON.stringify({
        message: {
          data: m.data.toString('base64'),
          attributes: m.attributes,
          messageId: m.id,
          message_id: m.id,
          publishTime,
          publish_time: publishTime,
          ...(m.orderingKey ? { orderingKey: m.orderingKey } : {}),
        },
        subscription: options.subscription,
      }),
    );
    for (let failures = 0; !stopping.signal.aborted; ) {
      await window.acquire();
      let answer: { status: number; outcome: PushOutcome };
      try {
        answer = await deliver(body, 'POST', '/', 'application/json');
      } catch {
        answer = { status: 500, outcome: 'failed' };
      }
      window.release(answer.outcome === 'refused' ? undefined : answer.outcome === 'acknowledged');
      if (ACK_STATUSES.has(answer.status)) {
        m.ack();
        return;
      }
      failures++;
      const wait = Math.min(retry.maximumMs, retry.minimumMs * 2 ** (failures - 1));
      await delay(wait, undefined, { signal: stopping.signal }).catch(() => {});
    }
  };
  const onMessage = (m: Message) => {
    const key = m.orderingKey || undefined;
    const previous = key !== undefined ? keyChains.get(key) : undefined;
    const next = (previous ?? Promise.resolve()).then(() => pushPulled(m)).catch(() => {});
    if (key === undefined) return;
    keyChains.set(key, next);
    void next.then(() => {
      if (keyChains.get(key) === next) keyChains.delete(key);
    });
  };
  const startPulling = async (): Promise<void> => {
    if (!window || stopping.signal.aborted) return;
    clearTimeout(reopen);
    const previous = subscriber;
    previous?.removeAllListeners();
    await previous?.close().catch(() => {});
    const sub = pubsub.subscription(options.subscription, {
      // Pulled ahead at most the window's ceiling; acknowledged at once (PULL_ACK_BATCHING).
      flowControl: { maxMessages: window.maximum, allowExcessMessages: false },
      batching: PULL_ACK_BATCHING,
      streamingOptions: { maxStreams: 1 },
    });
    sub.on('message', onMessage);
    sub.on('debug', (message: { message?: string }) => {
      if (/^Failed to "(ack|modAck|nack)"/.test(message.message ?? '')) ackErrors += 1;
    });
    // The subscription is gone (the watchdog re-creates it) or the stream broke for good: a new one.
    sub.on('error', () => {
      if (subscriber !== sub || stopping.signal.aborted) return;
      clearTimeout(reopen);
      reopen = setTimeout(() => void startPulling().catch(() => {}), 1000);
    });
    subscriber = sub;
  };

  let statusProvider: (() => object) | undefined;
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/deliveries') {
      res.writeHead(statusProvider ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(statusProvider?.() ?? {}));
      return;
    }
    void (async () => {
      let body: Buffer;
      try {
        body = await readBody(req);
      } catch {
        res.writeHead(413).end();
        return;
      }
      const { status } = await deliver(
        body,
        req.method ?? 'POST',
        req.url ?? '/',
        req.headers['content-type'] ?? 'application/json',
      );
      res.writeHead(status).end();
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/`,
    stats: () => ({
      ...stats,
      deadLetteredByController: { ...stats.deadLetteredByController },
      statuses: { ...stats.statuses },
      retrying: attempts.size,
      pushBackoffMs: backoffMs,
      ...(window ? { pushWindow: { size: window.size, inFlight: window.inFlight }, ackErrors } : {}),
    }),
    serveStatus: (provider) => {
      statusProvider = provider;
    },
    onSettled: (listener) => void listeners.push(listener),
    onPush: (listener) => void pushListeners.push(listener),
    startPulling,
    async stop() {
      stopping.abort();
      clearTimeout(reopen);
      subscriber?.removeAllListeners();
      await subscriber?.close().catch(() => {});
      agent.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await pubsub.close().catch(() => {});
    },
  };
}
