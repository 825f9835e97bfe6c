/**
 * The Topic API (`pubsub.levelset.dev/v1alpha1`): the zod schemas of its spec and status, from which
 * `npm run generate:manifests` generates `crd.yaml`'s openAPIV3Schema (so the API server refuses an
 * invalid spec with 422; the rules a CRD cannot express are checked by the reconcile, and listed in
 * `crd.yaml`). Other controllers may import this module (a Subscription controller, say).
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { CLOUD_OWNER_LABEL } from '../../kit/google.ts';
import { customResource } from '../../kit/index.ts';

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
  id: resourceId.describe('The Pub/Sub subscription ID.'),
  /** Seconds, 10 to 600 (Pub/Sub's bounds); omitted: Pub/Sub's default (10). */
  ackDeadlineSeconds: z
    .number()
    .int()
    .min(10)
    .max(600)
    .describe('Seconds Pub/Sub waits for an acknowledgement, 10 to 600 (default 10).')
    .optional(),
  /** Messages that fail `maxDeliveryAttempts` times (5 to 100, default 5) go to this topic of the same project. */
  deadLetter: z
    .object({ topicId: resourceId, maxDeliveryAttempts: z.number().int().min(5).max(100).optional() })
    .describe(
      'Messages that fail maxDeliveryAttempts times (5 to 100, default 5) go to this topic of the project.',
    )
    .optional(),
});
export type SubscriptionSpec = z.infer<typeof subscriptionSpecSchema>;

/** `spec`, as the CRD allows it. */
export const topicSpecSchema = z.object({
  /** Default: {@link defaultTopicId}. */
  topicId: resourceId
    .describe(
      'The Pub/Sub topic ID (default k8s.<namespace>.<name>). Changing it creates the new topic and deletes the old one.',
    )
    .optional(),
  labels: z
    .record(labelKey, labelValue)
    .refine((l) => !(CLOUD_OWNER_LABEL in l), `${CLOUD_OWNER_LABEL} is set by the kit`)
    .describe(`Google Cloud labels of the topic (${CLOUD_OWNER_LABEL} is the kit's).`)
    .optional(),
  /** Seconds with an `s` suffix, as Pub/Sub's Duration in JSON: `600s` to `2678400s` (10 minutes to 31 days). */
  messageRetentionDuration: z
    .string()
    .regex(/^[0-9]+s$/, 'must be whole seconds, e.g. "86400s"')
    .refine(
      (d) => Number.parseInt(d, 10) >= 600 && Number.parseInt(d, 10) <= 2678400,
      'must be 600s to 2678400s',
    )
    .describe('How long the topic keeps messages, whole seconds with an s suffix (600s to 2678400s).')
    .optional(),
  subscriptions: z
    .array(subscriptionSpecSchema)
    .describe('Subscriptions of the topic, created and deleted with it.')
    .optional(),
});
export type TopicSpec = z.infer<typeof topicSpecSchema>;

/** `status` as the controller writes it (besides the kit's `observedGeneration` and `conditions`). */
export const topicStatusSchema = z.object({
  topic: z.string().describe("The topic's full resource name, projects/<project>/topics/<id>.").optional(),
  subscriptions: z
    .array(z.string())
    .describe("The subscriptions' full resource names, projects/<project>/subscriptions/<id>.")
    .optional(),
});
export type TopicStatus = z.infer<typeof topicStatusSchema>;

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
