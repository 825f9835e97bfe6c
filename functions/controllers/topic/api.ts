/**
 * The Topic API (`pubsub.levelset.dev/v1alpha1`), as `crd.yaml` serves it, and the zod schema of its
 * spec (defence in depth: the CRD's schema already rejects most invalid specs with 422).
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { CLOUD_OWNER_LABEL, customResource } from '../../kit/index.ts';

/** The primary resource: `topics.pubsub.levelset.dev`, namespaced. */
export const topicResource = customResource({
  group: 'pubsub.levelset.dev',
  version: 'v1alpha1',
  kind: 'Topic',
  plural: 'topics',
});

/**
 * A Pub/Sub topic or subscription ID (Pub/Sub "Resource names"): 3 to 255 characters, starting with a
 * letter, of letters, digits and `-_.~+%`, not starting with `goog`.
 */
export const resourceId = z
  .string()
  .min(3)
  .max(255)
  .regex(/^[A-Za-z][A-Za-z0-9\-_.~+%]*$/, 'must start with a letter; letters, digits and -_.~+% only')
  .refine((id) => !id.startsWith('goog'), 'must not start with "goog"');

/** A Google Cloud label (Resource Manager "Labels"): lower-case key starting with a letter, ≤ 63 characters each. */
const labelKey = z.string().regex(/^[a-z][a-z0-9_-]{0,62}$/, 'must be a Google Cloud label key');
const labelValue = z.string().regex(/^[a-z0-9_-]{0,63}$/, 'must be a Google Cloud label value');

/** One subscription of the topic. */
export const subscriptionSpecSchema = z.object({
  id: resourceId,
  /** Seconds, 10 to 600 (Pub/Sub's bounds); omitted: Pub/Sub's default (10). */
  ackDeadlineSeconds: z.number().int().min(10).max(600).optional(),
  /** Messages that fail `maxDeliveryAttempts` times (5 to 100, default 5) go to this topic of the same project. */
  deadLetter: z
    .object({ topicId: resourceId, maxDeliveryAttempts: z.number().int().min(5).max(100).optional() })
    .optional(),
});
export type SubscriptionSpec = z.infer<typeof subscriptionSpecSchema>;

/** `spec`, as the CRD allows it. */
export const topicSpecSchema = z.object({
  /** Default: {@link defaultTopicId}. */
  topicId: resourceId.optional(),
  labels: z
    .record(labelKey, labelValue)
    .refine((l) => !(CLOUD_OWNER_LABEL in l), `${CLOUD_OWNER_LABEL} is set by the kit`)
    .optional(),
  /** Seconds with an `s` suffix, as Pub/Sub's Duration in JSON: `600s` to `2678400s` (10 minutes to 31 days). */
  messageRetentionDuration: z
    .string()
    .regex(/^[0-9]+s$/, 'must be whole seconds, e.g. "86400s"')
    .refine(
      (d) => Number.parseInt(d, 10) >= 600 && Number.parseInt(d, 10) <= 2678400,
      'must be 600s to 2678400s',
    )
    .optional(),
  subscriptions: z.array(subscriptionSpecSchema).optional(),
});
export type TopicSpec = z.infer<typeof topicSpecSchema>;

/** `status` as the kit writes it (the `kinds` of index.ts). */
export interface TopicStatus {
  /** The topic's full resource name, `projects/<project>/topics/<id>`. */
  topic?: string;
  /** The subscriptions' full resource names, `projects/<project>/subscriptions/<id>`. */
  subscriptions?: string[];
}

/**
 * The topic ID of a Topic without `spec.topicId`: `k8s.<namespace>.<name>` (a valid ID: it starts with
 * a letter, and namespaces and names use only `a-z0-9-.`); when longer than 255 characters, cut to
 * 246 and suffixed with `-` and 8 hex digits of the SHA-256 of the whole, so it stays unique.
 */
export function defaultTopicId(namespace: string, name: string): string {
  const id = `k8s.${namespace}.${name}`;
  if (id.length <= 255) return id;
  return `${id.slice(0, 246)}-${createHash('sha256').update(id).digest('hex').slice(0, 8)}`;
}
