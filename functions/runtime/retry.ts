/**
 * Retrying a failed key without answering Pub/Sub non-2xx (docs/architecture.md "Retries", decision
 * 42). On Cloud Pub/Sub a push endpoint that answers non-2xx makes Pub/Sub slow its pushes for the
 * whole subscription (push backoff, 100 ms up to 60 s: Pub/Sub's push subscription documentation),
 * so a few failing keys would space out every other key's deliveries. Instead `reconcile`
 * acknowledges (`204`) a `transient` or `error` outcome and:
 *
 * - brings the key back through the requeue path (functions/runtime/requeue.ts: published to the keys topic
 *   with its ordering key) after the delay {@link nextRetry} gives: the one the failure asked for
 *   (`Retry-After`, core/k8s/errors.ts `retryAfterMsOf`), else a per-key exponential backoff,
 *   client-go's `ItemExponentialFailureRateLimiter` (core/backoff.ts `itemExponentialBackoffMs`);
 *   the counts travel in the message ({@link ATTEMPT_ATTRIBUTE}, {@link RATE_LIMITED_ATTRIBUTE},
 *   core/message.ts), since a function instance keeps no state;
 * - does the same with a key a quota or rate limit refused (the controller's `Result.rateLimited`),
 *   counted apart and never dead-lettered;
 * - after {@link RetryConfig.maxAttempts} attempts (Terraform's `max_delivery_attempts`, the number
 *   its Pub/Sub dead-letter policy uses) publishes the key's message to the dead-letter topic with
 *   the attributes Pub/Sub's dead-lettering adds ({@link deadLetterAttributes}), so
 *   `levelset dead-letters` reads it as any other dead letter.
 *
 * `LEVELSET_RETRY=pubsub` (or no requeuer) keeps the former answer: `500`, and Pub/Sub retries and
 * dead-letters. The in-process mode's workqueue computes its delays with the same {@link nextRetry},
 * from the same counts kept per key (functions/runtime/in-process.ts).
 */
import * as z from 'zod';
import { ITEM_BACKOFF_BASE_MS, ITEM_BACKOFF_MAX_MS, itemExponentialBackoffMs } from '../../core/backoff.ts';
import { DEAD_LETTER_ATTRIBUTES, type RetryCounts } from '../../core/message.ts';

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

/** An unsuccessful delivery: a failure (`transient`, `error`), or a rate limit; and the delay it asked for, ms. */
export interface Unsuccessful {
  rateLimited?: boolean;
  retryAfterMs?: number;
}

/** The next delivery of a key ({@link nextRetry}): the counts it carries, and its delay, ms. */
export interface NextRetry {
  counts: RetryCounts;
  delayMs: number;
}

/**
 * The one retry backoff of both modes, a function of what a key's message carries: the next
 * delivery of a key whose delivery with `counts` was `unsuccessful`. Its counts: `rateLimited + 1`
 * after a rate limit, else `attempt + 1` (both until the key succeeds). Its delay: the
 * one the answer asked for (`retryAfterMs`: a `Retry-After`, a `RetryInfo`), else client-go's
 * `ItemExponentialFailureRateLimiter` over every unsuccessful delivery of the key, failures and rate
 * limits alike (as its `NumRequeues` counts every `AddRateLimited`): `baseMs × 2ⁿ⁻¹` ms capped at
 * `maxMs`, n = `attempt − 1 + rateLimited + 1`. The `reconcile` function reads the counts from the
 * message and writes the next ones in the requeued message; the in-process mode keeps them per key.
 */
export function nextRetry(
  backoff: Pick<RetryConfig, 'baseMs' | 'maxMs'>,
  counts: RetryCounts,
  unsuccessful: Unsuccessful,
): NextRetry {
  const n = counts.attempt + counts.rateLimited;
  const delayMs = unsuccessful.retryAfterMs ?? itemExponentialBackoffMs(n, backoff.baseMs, backoff.maxMs);
  return unsuccessful.rateLimited
    ? { counts: { ...counts, rateLimited: counts.rateLimited + 1 }, delayMs }
    : { counts: { ...counts, attempt: counts.attempt + 1 }, delayMs };
}

/** What `reconcile` does with an unsuccessful delivery ({@link retryDecision}). */
export type RetryDecision = ({ action: 'requeue' } & NextRetry) | { action: 'dead-letter' };

/**
 * The fate of a key whose delivery with `counts` was `unsuccessful`: a failure at attempt
 * `maxAttempts` is dead-lettered; anything else is requeued as {@link nextRetry} says (a rate
 * limit, whatever the attempt: never given up on).
 */
export function retryDecision(
  config: RetryConfig,
  counts: RetryCounts,
  unsuccessful: Unsuccessful,
): RetryDecision {
  if (!unsuccessful.rateLimited && counts.attempt >= config.maxAttempts) return { action: 'dead-letter' };
  return { action: 'requeue', ...nextRetry(config, counts, unsuccessful) };
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
