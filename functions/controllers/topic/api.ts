/**
 * The Topic API (`pubsub.levelset.dev/v1alpha1`), as `crd.yaml` serves it, and the zod schema of its
 * spec (defence in depth: the CRD's schema already rejects most invalid specs with 422).
 */
import { z } from 'zod';
import { customResource } from '../../kit/index.ts';

/** The primary resource: `topics.pubsub.levelset.dev`, namespaced. */
export const topicResource = customResource({
  group: 'pubsub.levelset.dev',
  version: 'v1alpha1',
  kind: 'Topic',
  plural: 'topics',
});

/** `spec`, as the CRD allows it. */
export const topicSpecSchema = z.object({
  topicId: z.string().optional(),
  messageRetentionDuration: z.string().optional(),
});
export type TopicSpec = z.infer<typeof topicSpecSchema>;
