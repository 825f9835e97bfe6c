/**
 * The Subscription API (`pubsub.levelset.dev/v1alpha1`): the zod schemas of its spec and status, from which
 * `npm run generate:manifests` generates `crd.yaml`'s openAPIV3Schema (so the API server refuses an
 * invalid spec with 422; the rules a CRD cannot express are checked by the reconcile, and listed in
 * `crd.yaml`). Pub/Sub's rules for IDs, dead letters and durations are the Topic API's (topic/api.ts).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import * as z from 'zod';
import { customResource } from '../../kit/index.ts';
import { resourceId, topicSpecSchema, subscriptionSpecSchema as topicSubscription } from '../topic/api.ts';

/** The primary resource: `subscriptions.pubsub.levelset.dev`, namespaced. */
export const subscriptionResource = customResource({
  group: 'pubsub.levelset.dev',
  version: 'v1alpha1',
  kind: 'Subscription',
  plural: 'subscriptions',
});

/** `spec`, as the CRD allows it. */
export const subscriptionSpecSchema = z.object({
  topicRef: z
    .object({ name: z.string().min(1) })
    .describe('The Topic object, in the same namespace, whose topic this subscribes to (and whose project).'),
  subscriptionId: resourceId.describe(
    'The Pub/Sub subscription ID. A subscription cannot move: changing it replaces it.',
  ),
  ackDeadlineSeconds: topicSubscription.shape.ackDeadlineSeconds,
  /** Whole seconds with an `s` suffix, `600s` to `604800s` (7 days, Pub/Sub's default and a subscription's maximum). */
  messageRetentionDuration: topicSpecSchema.shape.messageRetentionDuration
    .unwrap()
    .refine((d) => Number.parseInt(d, 10) <= 604800, 'a subscription keeps messages 604800s (7 days) at most')
    .describe('How long unacknowledged messages are kept, 600s to 604800s (default 604800s).')
    .optional(),
  deadLetter: topicSubscription.shape.deadLetter,
  /** Absent: a pull subscription. */
  push: z
    .object({ endpoint: z.string().regex(/^https:\/\/[^/\s]+/, 'must be an https URL') })
    .describe('Push to this https endpoint; absent: a pull subscription.')
    .optional(),
});
export type SubscriptionSpec = z.infer<typeof subscriptionSpecSchema>;

/** `status`, as the reconcile returns it (the kit adds `observedGeneration` and `conditions`). */
export const subscriptionStatusSchema = z.object({
  subscription: z
    .string()
    .describe("The subscription's full resource name, projects/<the topic's project>/subscriptions/<id>.")
    .optional(),
});
export type SubscriptionStatus = z.infer<typeof subscriptionStatusSchema>;

/**
 * The Topic a Subscription names, as `namespace/name` (a spec index's value and a reference's:
 * kit index-spec.ts, references.ts); `[]` when its stored spec names none.
 */
export function topicRefOf(subscription: KubernetesObject): string[] {
  const name = (subscription as { spec?: { topicRef?: { name?: unknown } } }).spec?.topicRef?.name;
  return typeof name === 'string' && name ? [`${subscription.metadata?.namespace}/${name}`] : [];
}
