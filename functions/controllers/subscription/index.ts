/**
 * `subscription`: the Subscription controller (`pubsub.levelset.dev/v1alpha1`), on the kit's external
 * resources (docs/external-resources.md, "A second controller"). A Subscription stands for a Pub/Sub
 * subscription of the topic of a `Topic` object in its namespace, in that topic's project. This file
 * says how to observe, create, update, delete and compare a subscription, and which one a
 * Subscription wants once its Topic is Ready; the kit does the rest, as for the Topic. A converged
 * Subscription costs 2 Kubernetes GETs (itself, its Topic) and 1 Pub/Sub read.
 */
import {
  defineExternalResource,
  type ExternalClient,
  isReady,
  type Labels,
  mapByIndex,
  pubsubClient,
  sameLabels,
  TerminalError,
  type Waiting,
  type Wanted,
} from '../../kit/index.ts';
import { type TopicStatus, topicResource } from '../topic/api.ts';
import { subscriptionResource, subscriptionSpecSchema, subscriptionStatusSchema, topicRefOf } from './api.ts';

/** Reason of `Ready=False` while the referenced Topic is missing or not Ready. */
export const DEPENDENCY_NOT_READY = 'DependencyNotReady';
/** Reason of `Ready=False` for a subscription whose topic was deleted (Pub/Sub: `_deleted-topic_`). */
export const TOPIC_DELETED = 'TopicDeleted';

/** A subscription: its topic (full name), ack deadline (s), retention (s), dead letter, push endpoint. */
type SubscriptionWanted = {
  topic: string;
  ackDeadlineSeconds: number;
  retentionSeconds: number;
  deadLetterPolicy: { deadLetterTopic: string; maxDeliveryAttempts: number } | null;
  pushEndpoint: string;
};
type SubscriptionLive = {
  labels?: Labels | null;
  topic?: string | null;
  ackDeadlineSeconds?: number | null;
  messageRetentionDuration?: { seconds?: unknown } | null;
  deadLetterPolicy?: { deadLetterTopic?: string | null; maxDeliveryAttempts?: number | null } | null;
  pushConfig?: { pushEndpoint?: string | null } | null;
};
const settings = (d: SubscriptionWanted) => ({
  ackDeadlineSeconds: d.ackDeadlineSeconds,
  messageRetentionDuration: { seconds: d.retentionSeconds },
  deadLetterPolicy: d.deadLetterPolicy,
  pushConfig: d.pushEndpoint ? { pushEndpoint: d.pushEndpoint } : {},
});
const deadLetterOf = (live: SubscriptionLive) =>
  live.deadLetterPolicy?.deadLetterTopic
    ? {
        deadLetterTopic: live.deadLetterPolicy.deadLetterTopic,
        maxDeliveryAttempts: live.deadLetterPolicy.maxDeliveryAttempts,
      }
    : null;

const subscriptions: ExternalClient<SubscriptionWanted, SubscriptionLive> = {
  service: 'pubsub.googleapis.com',
  observe: async (name) => (await (await pubsubClient()).subscription(name).getMetadata())[0],
  labelsOf: (live) => ({ ...live.labels }),
  isUpToDate: (d, live) =>
    live.topic === d.topic &&
    live.ackDeadlineSeconds === d.ackDeadlineSeconds &&
    Number(live.messageRetentionDuration?.seconds) === d.retentionSeconds &&
    JSON.stringify(deadLetterOf(live)) === JSON.stringify(d.deadLetterPolicy) &&
    (live.pushConfig?.pushEndpoint ?? '') === d.pushEndpoint,
  async create(name, d, labels) {
    await (await pubsubClient()).topic(d.topic).createSubscription(name, { labels, ...settings(d) });
  },
  async update(name, d, labels, live) {
    if (live.topic !== d.topic) {
      // Its topic was deleted (`_deleted-topic_`) or is another: a subscription's topic cannot
      // change, so it is replaced, once the topic exists (until then it keeps its backlog).
      const [exists] = await (await pubsubClient()).topic(d.topic).exists();
      if (!exists)
        throw new TerminalError(TOPIC_DELETED, `${d.topic} does not exist (${name}: ${live.topic})`);
      await subscriptions.delete(name);
      await subscriptions.create(name, d, labels);
      return;
    }
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

/** The `subscription` controller module (shipped as `levelset/controllers`: functions/controllers/shipped.ts). */
export const subscriptionController = defineExternalResource({
  name: 'subscription',
  primary: subscriptionResource,
  spec: subscriptionSpecSchema,
  status: subscriptionStatusSchema,
  kinds: { subscription: { client: subscriptions } },
  // The Topic each Subscription names, as `namespace/name`: an event of a Topic maps to its Subscriptions.
  indexes: { topicRef: ({ object }) => topicRefOf(object) },
  watches: [{ resource: topicResource, map: mapByIndex('topicRef') }],
  rbac: [{ apiGroups: [topicResource.group], resources: [topicResource.plural], verbs: ['get'] }],
  async desired({ spec, get }): Promise<Wanted | Waiting> {
    const ref = spec.topicRef.name;
    const topicObject = await get(topicResource, ref);
    const topic = (topicObject as { status?: TopicStatus } | undefined)?.status?.topic;
    if (!topic || !isReady(topicObject))
      return {
        wait: {
          reason: DEPENDENCY_NOT_READY,
          message: `Topic ${ref} is ${topicObject ? 'not Ready' : 'not found'}`,
        },
      };
    const project = topic.split('/')[1];
    return {
      subscription: [
        {
          name: `projects/${project}/subscriptions/${spec.subscriptionId}`,
          desired: {
            topic,
            ackDeadlineSeconds: spec.ackDeadlineSeconds ?? 10,
            retentionSeconds: Number.parseInt(spec.messageRetentionDuration ?? '604800s', 10),
            deadLetterPolicy: spec.deadLetter
              ? {
                  deadLetterTopic: `projects/${project}/topics/${spec.deadLetter.topicId}`,
                  maxDeliveryAttempts: spec.deadLetter.maxDeliveryAttempts ?? 5,
                }
              : null,
            pushEndpoint: spec.push?.endpoint ?? '',
          },
        },
      ],
    };
  },
});
