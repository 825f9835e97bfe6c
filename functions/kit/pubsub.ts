/**
 * The external client of a Pub/Sub subscription (an {@link ExternalClient}), one for every controller
 * that manages subscriptions (the Topic's, of its `spec.subscriptions`; the Subscription's), on the
 * process's one Pub/Sub client ({@link pubsubClient}).
 */
import { TerminalError } from '../../core/k8s/errors.ts';
import { type ExternalClient, type Labels, observeGoogleResource, sameLabels } from './external.ts';
import { pubsubClient } from './google-cloud.ts';

/** Reason of `Ready=False` for a subscription whose topic was deleted (Pub/Sub: `_deleted-topic_`). */
export const TOPIC_DELETED = 'TopicDeleted';

/**
 * What a subscription is to be. `retentionSeconds` and `pushEndpoint` absent: not managed (Pub/Sub's
 * defaults at creation: 7 days, pull; never compared).
 */
export interface PubsubSubscriptionWanted {
  /** The topic's full name, `projects/<p>/topics/<id>`. */
  topic: string;
  /** s, 10 to 600. */
  ackDeadlineSeconds: number;
  deadLetterPolicy: { deadLetterTopic: string; maxDeliveryAttempts: number } | null;
  /** s, how long it keeps unacknowledged messages. */
  retentionSeconds?: number;
  /** The push endpoint (https); `''`: a pull subscription. */
  pushEndpoint?: string;
}

/** A subscription as `getMetadata()` answers it (google.pubsub.v1.Subscription), the fields compared. */
export interface PubsubSubscriptionLive {
  labels?: Labels | null;
  topic?: string | null;
  ackDeadlineSeconds?: number | null;
  messageRetentionDuration?: { seconds?: unknown } | null;
  deadLetterPolicy?: { deadLetterTopic?: string | null; maxDeliveryAttempts?: number | null } | null;
  pushConfig?: { pushEndpoint?: string | null } | null;
}

const settings = (d: PubsubSubscriptionWanted) => ({
  ackDeadlineSeconds: d.ackDeadlineSeconds,
  deadLetterPolicy: d.deadLetterPolicy,
  ...(d.retentionSeconds === undefined ? {} : { messageRetentionDuration: { seconds: d.retentionSeconds } }),
  ...(d.pushEndpoint === undefined
    ? {}
    : { pushConfig: d.pushEndpoint ? { pushEndpoint: d.pushEndpoint } : {} }),
});
const deadLetterOf = (live: PubsubSubscriptionLive) =>
  live.deadLetterPolicy?.deadLetterTopic
    ? {
        deadLetterTopic: live.deadLetterPolicy.deadLetterTopic,
        maxDeliveryAttempts: live.deadLetterPolicy.maxDeliveryAttempts,
      }
    : null;

/**
 * A Pub/Sub subscription. Its topic cannot change (Pub/Sub): one of another topic (`_deleted-topic_`
 * once its topic was deleted) is recreated by the kit, once the wanted topic exists; until then
 * `mustRecreate` throws `TerminalError` {@link TOPIC_DELETED} and the subscription keeps its backlog.
 * Pub/Sub's client takes no AbortSignal: the kit stops waiting at the deadline.
 */
export const pubsubSubscriptions: ExternalClient<PubsubSubscriptionWanted, PubsubSubscriptionLive> = {
  service: 'pubsub.googleapis.com',
  observe: async (name) =>
    observeGoogleResource(async () => (await (await pubsubClient()).subscription(name).getMetadata())[0]),
  isUpToDate: (d, live) =>
    live.topic === d.topic &&
    live.ackDeadlineSeconds === d.ackDeadlineSeconds &&
    JSON.stringify(deadLetterOf(live)) === JSON.stringify(d.deadLetterPolicy) &&
    (d.retentionSeconds === undefined ||
      Number(live.messageRetentionDuration?.seconds) === d.retentionSeconds) &&
    (d.pushEndpoint === undefined || (live.pushConfig?.pushEndpoint ?? '') === d.pushEndpoint),
  async mustRecreate(name, d, live) {
    if (live.topic === d.topic) return false;
    const [exists] = await (await pubsubClient()).topic(d.topic).exists();
    if (!exists) throw new TerminalError(TOPIC_DELETED, `${d.topic} does not exist (${name}: ${live.topic})`);
    return true;
  },
  async create(name, d, labels) {
    await (await pubsubClient()).topic(d.topic).createSubscription(name, { labels, ...settings(d) });
  },
  async update(name, d, labels, live) {
    // Only what differs is in the update mask.
    const relabel = sameLabels({ ...live.labels }, labels) ? {} : { labels };
    await (await pubsubClient()).subscription(name).setMetadata({ ...relabel, ...settings(d) });
  },
  async setLabels(name, labels) {
    await (await pubsubClient()).subscription(name).setMetadata({ labels });
  },
  async delete(name) {
    await (await pubsubClient()).subscription(name).delete();
  },
};
