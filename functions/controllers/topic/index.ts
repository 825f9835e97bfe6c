/**
 * `topic`: the Topic controller (`pubsub.levelset.dev/v1alpha1`), on the kit's external resources
 * (docs/external-resources.md). A Topic stands for a Pub/Sub topic and its subscriptions in the
 * controllers' project (Config Connector's model). This file says how to observe, create, update,
 * delete and compare a topic, and which topic and subscriptions a Topic wants (the subscriptions'
 * client is the kit's, shared with the Subscription controller); the kit does the
 * owner mark, the finalizer, the status, the policies, plans, traces, quota and drift. A converged
 * Topic costs 1 Kubernetes request (GET) and 1 Pub/Sub read per topic and subscription.
 */
import {
  defineExternalResource,
  type ExternalClient,
  type GoogleCloudConfig,
  type Labels,
  observeGoogleResource,
  pubsubClient,
  pubsubSubscriptions,
  sameLabels,
} from '../../kit/google.ts';
import { subscriptionResource, topicRefOf } from '../subscription/api.ts';
import { defaultTopicId, topicResource, topicSpecSchema, topicStatusSchema } from './api.ts';
import { topicAuditLog } from './audit-log.ts';

/** A topic: its retention, seconds (omitted: Pub/Sub's default). */
type TopicWanted = { retentionSeconds?: number };
type TopicLive = { labels?: Labels | null; messageRetentionDuration?: { seconds?: unknown } | null };
const retention = (d: TopicWanted) =>
  d.retentionSeconds === undefined ? {} : { messageRetentionDuration: { seconds: d.retentionSeconds } };

const topics: ExternalClient<TopicWanted, TopicLive> = {
  service: 'pubsub.googleapis.com',
  observe: async (name) =>
    observeGoogleResource(async () => (await (await pubsubClient()).topic(name).getMetadata())[0]),
  isUpToDate: (d, live) =>
    d.retentionSeconds === undefined || Number(live.messageRetentionDuration?.seconds) === d.retentionSeconds,
  async create(name, d, labels) {
    await (await pubsubClient()).createTopic({ name, labels, ...retention(d) });
  },
  async update(name, d, labels, live) {
    // Only what differs is in the update mask.
    const relabel = !sameLabels({ ...live.labels }, labels) ? { labels } : {};
    await (await pubsubClient()).topic(name).setMetadata({ ...relabel, ...retention(d) });
  },
  async setLabels(name, labels) {
    await (await pubsubClient()).topic(name).setMetadata({ labels });
  },
  async delete(name) {
    await (await pubsubClient()).topic(name).delete();
  },
};

/** The full name of topic `id` in the controllers' project. */
const topicName = (google: GoogleCloudConfig, id: string) => `projects/${google.project}/topics/${id}`;

/** The `topic` controller module (shipped as `levelset/controllers`: functions/controllers/shipped.ts). */
export const topicController = defineExternalResource({
  name: 'topic',
  primary: topicResource,
  spec: topicSpecSchema,
  status: topicStatusSchema,
  auditLog: topicAuditLog,
  kinds: { topic: { client: topics }, subscriptions: { client: pubsubSubscriptions, list: true } },
  // A Topic that Subscriptions name is not deleted from under them (kit/references.ts).
  referencedBy: [{ resource: subscriptionResource, references: topicRefOf }],
  desired({ object, spec, google }) {
    const topic = topicName(
      google,
      spec.topicId ?? defaultTopicId(object.metadata.namespace, object.metadata.name),
    );
    const seconds = spec.messageRetentionDuration && Number.parseInt(spec.messageRetentionDuration, 10);
    return {
      topic: [
        { name: topic, labels: spec.labels ?? {}, desired: seconds ? { retentionSeconds: seconds } : {} },
      ],
      subscriptions: (spec.subscriptions ?? []).map((s) => ({
        name: `projects/${google.project}/subscriptions/${s.id}`,
        desired: {
          topic,
          ackDeadlineSeconds: s.ackDeadlineSeconds ?? 10,
          deadLetterPolicy: s.deadLetter
            ? {
                deadLetterTopic: topicName(google, s.deadLetter.topicId),
                maxDeliveryAttempts: s.deadLetter.maxDeliveryAttempts ?? 5,
              }
            : null,
        },
      })),
    };
  },
});
