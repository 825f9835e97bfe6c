/**
 * Retrying a failed key without answering Pub/Sub non-2xx (docs/architecture.md "Retries", decision
 * 42). On Cloud Pub/Sub a push endpoint that answers non-2xx makes Pub/Sub slow its pushes for the
 * whole subscription (push backoff, 100 ms up to 60 s: Pub/Sub's push subscription documentation),
 * so a few failing keys would space out every other key's deliveries. Instead `reconcile`
 * acknowledges (`204`) a `transient` or `error` outcome and:
 *
 * - brings the key back through the requeue path (functions/runtime/requeue.ts: published to the keys topic
 *   with its ordering key) after a per-key exponential backoff, client-go's
 *   `ItemExponentialFailureRateLimiter` (core/backoff.ts `itemExponentialBackoffMs`), or after the delay the
 *   failure asked for (`Retry-After`, core/k8s/errors.ts `retryAfterMsOf`); the attempt count
 *   travels in the message's {@link ATTEMPT_ATTRIBUTE} (core/message.ts), since a function
 *   instance keeps no state;
 * - after {@link RetryConfig.maxAttempts} attempts (Terraform's `max_delivery_attempts`, the number
 *   its Pub/Sub dead-letter policy uses) publishes the key's message to the dead-letter topic with
 *   the attributes Pub/Sub's dead-lettering adds ({@link deadLetterAttributes}), so
 *   `levelset dead-letters` reads it as any other dead letter.
 *
 * `LEVELSET_RETRY=pubsub` (or no requeuer) keeps the former answer: `500`, and Pub/Sub retries and
 * dead-letters.
 */
import * as z from 'zod';
import { ITEM_BACKOFF_BASE_MS, ITEM_BACKOFF_MAX_MS, itemExponentialBackoffMs } from '../../core/backoff.ts';
import { DEAD_LETTER_ATTRIBUTES } from '../../core/message.ts';

/** Pub/Sub's default `max_delivery_attempts`, and Terraform's. */
export const DEFAULT_MAX_DELIVERY_ATTEMPTS = 5;

const retryEnvSchema = z.object({
  /** `requeue` (default): acknowledge and requeue; `pubsub`: answer `500`, Pub/Sub retries. */
  LEVELSET_RETRY: z.enum(['requeue', 'pubsub']).default('requeue'),
  /** Attempts of a key before it is dead-lettered; Pub/Sub's bounds 5–100, lower allowed for tests. */
  LEVELSET_MAX_DELIVERY_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(DEFAULT_MAX_DELIVERY_ATTEMPTS),
  LEVELSET_RETRY_BASE_MS: z.coerce.number().positive().finite().default(ITEM_BACKOFF_BASE_MS),
  LEVELSET_RETRY_MAX_MS: z.coerce.number().positive().finite().default(ITEM_BACKOFF_MAX_MS),
  /** Dead-letter topic id; default `<LEVELSET_TOPIC>-dead-letter` (Terraform's and the local stack's). */
  LEVELSET_DEAD_LETTER_TOPIC: z.string().min(1).optional(),
  LEVELSET_TOPIC: z.string().min(1).default('levelset-keys'),
});

/** How `reconcile` retries a failed key ({@link readRetryConfig}). */
export interface RetryConfig {
  mode: 'requeue' | 'pubsub';
  /** Attempts (the first delivery included) before the key is dead-lettered. */
  maxAttempts: number;
  /** Per-key backoff bounds, ms ({@link itemExponentialBackoffMs}). */
  baseMs: number;
  maxMs: number;
  /** Dead-letter topic id. */
  deadLetterTopic: string;
}

/**
 * Reads the retry configuration: `LEVELSET_RETRY`, `LEVELSET_MAX_DELIVERY_ATTEMPTS` (default 5),
 * `LEVELSET_RETRY_BASE_MS` (5), `LEVELSET_RETRY_MAX_MS` (1 000 000), `LEVELSET_DEAD_LETTER_TOPIC`.
 * @throws {Error} naming every invalid variable, and when the base exceeds the maximum.
 */
export function readRetryConfig(env: NodeJS.ProcessEnv = process.env): RetryConfig {
  const parsed = retryEnvSchema.safeParse(env);
  if (!parsed.success)
    throw new Error(
      `invalid retry configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const e = parsed.data;
  if (e.LEVELSET_RETRY_BASE_MS > e.LEVELSET_RETRY_MAX_MS)
    throw new Error('invalid retry configuration: LEVELSET_RETRY_BASE_MS is above LEVELSET_RETRY_MAX_MS');
  return {
    mode: e.LEVELSET_RETRY,
    maxAttempts: e.LEVELSET_MAX_DELIVERY_ATTEMPTS,
    baseMs: e.LEVELSET_RETRY_BASE_MS,
    maxMs: e.LEVELSET_RETRY_MAX_MS,
    deadLetterTopic: e.LEVELSET_DEAD_LETTER_TOPIC ?? `${e.LEVELSET_TOPIC}-dead-letter`,
  };
}

/** What `reconcile` does with a failed delivery ({@link retryDecision}). */
export type RetryDecision =
  | { action: 'requeue'; attempt: number; delayMs: number }
  | { action: 'dead-letter' };

/**
 * The fate of a key whose attempt `attempt` (from 1) failed: requeued as attempt `attempt + 1`
 * after `retryAfterMs` when the failure asked for a delay, else after the per-key backoff; or, at
 * `maxAttempts`, dead-lettered.
 */
export function retryDecision(config: RetryConfig, attempt: number, retryAfterMs?: number): RetryDecision {
  if (attempt >= config.maxAttempts) return { action: 'dead-letter' };
  const delayMs = retryAfterMs ?? itemExponentialBackoffMs(attempt, config.baseMs, config.maxMs);
  return { action: 'requeue', attempt: attempt + 1, delayMs };
}

/**
 * The attributes of a dead letter as Pub/Sub's dead-lettering writes them (Pub/Sub docs:
 * "Dead-letter topics"), over the message's own: `CloudPubSubDeadLetterSourceDeliveryCount` =
 * `attempts`, the source subscription's id and project, and the source message's publish time when
 * known. `levelset dead-letters` (cli/impl/dead-letters.ts) reads these.
 * @param subscription the source subscription, full name or id (its last path segment is kept)
 */
export function deadLetterAttributes(
  attributes: Record<string, string>,
  source: { attempts: number; subscription: string; projectId: string; publishTime?: string },
): Record<string, string> {
  return {
    ...attributes,
    [DEAD_LETTER_ATTRIBUTES.deliveryAttempts]: String(source.attempts),
    [DEAD_LETTER_ATTRIBUTES.sourceSubscription]: source.subscription.split('/').pop() ?? '',
    [DEAD_LETTER_ATTRIBUTES.sourceSubscriptionProject]: source.projectId,
    ...(source.publishTime ? { [DEAD_LETTER_ATTRIBUTES.sourcePublishTime]: source.publishTime } : {}),
  };
}
