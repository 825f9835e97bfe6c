/**
 * The Pub/Sub resources a Topic owns, as Cloud Audit Logs name them, and the way back from a name to
 * the Topic (functions/kit/audit-log.ts): a topic of the default ID `k8s.<namespace>.<name>` names
 * its Topic outright; any other topic or subscription is looked up in the Topics' `status`, which
 * still holds the name after the resource was deleted.
 */
import type { AuditLogDeclaration } from '../../kit/google.ts';
import { isDNS1123Label, isDNS1123Subdomain, type Key } from '../../kit/index.ts';
import { defaultTopicId, type TopicStatus } from './api.ts';

/**
 * The Topic whose default topic ID is `topicId` ({@link defaultTopicId} inverted: a namespace has
 * no dot), or `undefined` when `topicId` is no default ID (a `spec.topicId`) or may be a shortened
 * one (255 characters, the length of every shortened ID: also the default ID of another name).
 */
export function keyOfTopicId(topicId: string): Key | undefined {
  if (topicId.length >= 255) return undefined;
  const [prefix, namespace, ...rest] = topicId.split('.');
  const name = rest.join('.');
  if (prefix !== 'k8s' || !namespace || !isDNS1123Label(namespace) || !isDNS1123Subdomain(name))
    return undefined;
  return defaultTopicId(namespace, name) === topicId ? { namespace, name } : undefined;
}

/** The Topic controller's `auditLog`: its topics and subscriptions. */
export const topicAuditLog: AuditLogDeclaration = {
  serviceName: 'pubsub.googleapis.com',
  resourceNames: ['projects/{project}/topics/{topic}', 'projects/{project}/subscriptions/{subscription}'],
  keyOfName: ({ ids }) => (ids.topic === undefined ? undefined : keyOfTopicId(ids.topic)),
  namesOf: (object) => {
    const status = ((object as { status?: TopicStatus }).status ?? {}) as TopicStatus;
    return [status.topic, ...(status.subscriptions ?? [])];
  },
};
