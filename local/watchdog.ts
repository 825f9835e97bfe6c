/**
 * The local stack's delivery watchdog: notices keys that were published but are not being
 * delivered, and recovers, instead of letting `levelset dev` sit silent.
 *
 * It sees every message of the keys topic through a pull subscription of its own,
 * `<topic>-local-watchdog` (acknowledged at once: it only records message id, data, attributes,
 * ordering key), and every message that left the keys subscription through the push proxy
 * (local/push-proxy.ts: acknowledged by `reconcile`, or dead-lettered). What was published and has
 * not left is the **backlog**. A **stall** is: a backlog whose oldest key is older than `stallMs`,
 * no push at all from the emulator for `stallMs` (a key being retried is pushed at least every
 * `maximumBackoff`, 10 s locally, so it never looks stalled), and `reconcile` answering HTTP. Then
 * the watchdog reports it, deletes and re-creates the push subscription (a subscription whose push
 * loop died is gone with it) and publishes every backlog message again (same data, attributes and
 * ordering key; reconciles are level-driven, so a key delivered twice is harmless).
 *
 * Pub/Sub on Google Cloud needs none of this; it is the local stack's guard against its emulator.
 */
import { type Message, PubSub, type Subscription } from '@google-cloud/pubsub';
import '../core/pubsub-lease.ts';
import { emulatorClientOptions } from '../core/publish.ts';
import type { PushProxy } from './push-proxy.ts';
import { answers } from './service.ts';

/** What the watchdog knows about deliveries; times are epoch ms, `undefined` when it never happened. */
export interface DeliveryStatus {
  /** Keys published to the keys topic and not yet acknowledged nor dead-lettered. */
  backlog: number;
  /** {@link DeliveryStatus.backlog} by the message's `controller` attribute (`?` when it has none). */
  backlogByController: Record<string, number>;
  /** Publish time of the oldest key of the backlog. */
  oldestPublishedAt: number | undefined;
  /** The last push the emulator made (any outcome). */
  lastPushAt: number | undefined;
  /** The last push `reconcile` acknowledged. */
  lastDeliveredAt: number | undefined;
  /** Pushes acknowledged, dead-lettered so far. */
  delivered: number;
  deadLettered: number;
  /** {@link DeliveryStatus.deadLettered} by controller (local/push-proxy.ts). */
  deadLetteredByController: Record<string, number>;
  /** Stalls detected and recovered from. */
  recoveries: number;
}

/** One recovery, as reported to `onStall`. */
export interface StallReport {
  /** Keys published again. */
  republished: number;
  /** ms since the last push (or since the oldest key was published, when there was none). */
  silentMs: number;
}

export interface DeliveryWatchdogOptions {
  emulatorHost: string;
  projectId: string;
  /** Keys topic id. */
  topic: string;
  pushProxy: PushProxy;
  /** The `reconcile` function's URL: a stall is only declared while it answers HTTP. */
  functionUrl: () => string;
  /** Full name of the keys push subscription, which a stall deletes. */
  pushSubscription: string;
  /** Creates the keys push subscription again (same configuration), after a stall deleted it. */
  createPushSubscription: () => Promise<unknown>;
  /** A backlog not pushed for this long is a stall; ms, default 30 000 (3 × the local maximum backoff). */
  stallMs?: number;
  /** How often to check, ms; default 1 000. */
  intervalMs?: number;
  onStall?: (report: StallReport) => void;
  /** A recovery that failed (it is tried again at the next check). */
  onError?: (err: Error) => void;
}

export interface DeliveryWatchdog {
  status(): DeliveryStatus;
  stop(): Promise<void>;
}

interface Published {
  data: Buffer;
  attributes: Record<string, string>;
  orderingKey: string;
  publishedAt: number;
}

/** Ids of settled messages are kept this long, ms, in case the watchdog's copy arrives after the push. */
const SETTLED_MEMORY_MS = 10 * 60_000;

/** Starts the watchdog (creating its pull subscription). */
export async function startDeliveryWatchdog(options: DeliveryWatchdogOptions): Promise<DeliveryWatchdog> {
  const stallMs = options.stallMs ?? 30_000;
  const pubsub = new PubSub({ projectId: options.projectId, ...emulatorClientOptions(options.emulatorHost) });
  const subscriptionId = `${options.topic}-local-watchdog`;
  const topic = pubsub.topic(options.topic, { messageOrdering: true, batching: { maxMessages: 1 } });
  const pending = new Map<string, Published>();
  const settled = new Map<string, number>();
  let recoveries = 0;
  let stopped = false;
  let recovering = false;
  let subscription: Subscription | undefined;

  options.pushProxy.onSettled((id) => {
    if (!pending.delete(id)) settled.set(id, Date.now());
  });

  const onMessage = (m: Message) => {
    m.ack();
    if (settled.delete(m.id)) return;
    pending.set(m.id, {
      data: m.data,
      attributes: { ...m.attributes },
      orderingKey: m.orderingKey ?? '',
      publishedAt: m.publishTime.getTime(),
    });
  };
  /** (Re)opens the pull subscription, creating it when missing (a restarted emulator lost it). */
  const subscribe = async (): Promise<void> => {
    if (stopped) return;
    try {
      await topic.createSubscription(subscriptionId).catch((err: { code?: number }) => {
        if (err.code !== 6) throw err; // ALREADY_EXISTS
      });
      const s = pubsub.subscription(subscriptionId, { flowControl: { maxMessages: 1000 } });
      s.on('message', onMessage);
      s.once('error', () => {
        void s.close().catch(() => {});
        if (subscription === s) subscription = undefined;
      });
      subscription = s;
    } catch {
      // the emulator is down: the next check tries again
    }
  };
  await subscribe();

  const status = (): DeliveryStatus => {
    const stats = options.pushProxy.stats();
    let oldest: number | undefined;
    const backlogByController: Record<string, number> = {};
    for (const p of pending.values()) {
      if (oldest === undefined || p.publishedAt < oldest) oldest = p.publishedAt;
      const controller = p.attributes.controller ?? '?';
      backlogByController[controller] = (backlogByController[controller] ?? 0) + 1;
    }
    return {
      backlog: pending.size,
      backlogByController,
      oldestPublishedAt: oldest,
      lastPushAt: stats.lastPushAt,
      lastDeliveredAt: stats.lastAcknowledgedAt,
      delivered: stats.acknowledged,
      deadLettered: stats.deadLettered,
      deadLetteredByController: stats.deadLetteredByController,
      recoveries,
    };
  };

  const check = async () => {
    const now = Date.now();
    for (const [id, at] of settled) if (now - at > SETTLED_MEMORY_MS) settled.delete(id);
    if (!subscription) await subscribe();
    const s = status();
    if (s.oldestPublishedAt === undefined || now - s.oldestPublishedAt < stallMs) return;
    if (s.lastPushAt !== undefined && now - s.lastPushAt < stallMs) return;
    if (!(await answers(options.functionUrl(), { timeoutMs: 2_000 }))) return; // down: nothing could be delivered anyway
    const stalled = [...pending];
    await pubsub
      .subscription(options.pushSubscription)
      .delete()
      .catch((err: { code?: number }) => {
        if (err.code !== 5) throw err; // NOT_FOUND: already gone
      });
    await options.createPushSubscription();
    for (const [id, p] of stalled) {
      try {
        await topic.publishMessage({
          data: p.data,
          attributes: p.attributes,
          ...(p.orderingKey ? { orderingKey: p.orderingKey } : {}),
        });
      } catch (err) {
        if (p.orderingKey) topic.resumePublishing(p.orderingKey); // a failed publish pauses its key
        throw err;
      }
      pending.delete(id);
    }
    recoveries++;
    options.onStall?.({
      republished: stalled.length,
      silentMs: now - (s.lastPushAt ?? s.oldestPublishedAt),
    });
  };
  const timer = setInterval(() => {
    if (recovering || stopped) return;
    recovering = true;
    check()
      .catch((err: Error) => options.onError?.(err))
      .finally(() => {
        recovering = false;
      });
  }, options.intervalMs ?? 1_000);
  timer.unref();

  return {
    status,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await subscription?.close().catch(() => {});
      await pubsub.close().catch(() => {});
    },
  };
}
