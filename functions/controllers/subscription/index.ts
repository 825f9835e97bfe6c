/**
 * `subscription`: the Subscription controller (`pubsub.levelset.dev/v1alpha1`), on the kit's external
 * resources (docs/external-resources.md, "A second controller"). A Subscription stands for a Pub/Sub
 * subscription of the topic of a `Topic` object in its namespace, in that topic's project. This file
 * says which subscription a Subscription wants once its Topic is Ready; the subscription's client is
 * the kit's (`pubsubSubscriptions`, the Topic's too), and the kit does the rest, as for the Topic. A converged
 * Subscription costs 2 Kubernetes GETs (itself, its Topic) and 1 Pub/Sub read.
 */
import { defineExternalResource, pubsubSubscriptions } from '../../kit/google.ts';
import { isReady, mapByIndex } from '../../kit/index.ts';
import { type TopicStatus, topicResource } from '../topic/api.ts';
import { subscriptionResource, subscriptionSpecSchema, subscriptionStatusSchema, topicRefOf } from './api.ts';

/** Reason of `Ready=False` while the referenced Topic is missing or not Ready. */
export const DEPENDENCY_NOT_READY = 'DependencyNotReady';

/** The `subscription` controller module (shipped as `levelset/controllers`: functions/controllers/shipped.ts). */
export const subscriptionController = defineExternalResource({
  name: 'subscription',
  primary: subscriptionResource,
  spec: subscriptionSpecSchema,
  status: subscriptionStatusSchema,
  kinds: { subscription: { client: pubsubSubscriptions } },
  // The Topic each Subscription names, as `namespace/name`: an event of a Topic maps to its Subscriptions.
  indexes: { topicRef: ({ object }) => topicRefOf(object) },
  watches: [{ resource: topicResource, map: mapByIndex('topicRef') }],
  rbac: [{ apiGroups: [topicResource.group], resources: [topicResource.plural], verbs: ['get'] }],
  async desired({ spec, get }) {
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
