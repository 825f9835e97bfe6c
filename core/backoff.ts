/**
 * Per-key exponential backoff, as client-go's `workqueue.ItemExponentialFailureRateLimiter`
 * (`DefaultControllerRateLimiter`: base 5 ms, cap 1000 s): the n-th unsuccessful delivery of one key
 * waits `base × 2ⁿ⁻¹` ms, at most `max`; a success starts it again. No state here: the count is
 * the caller's (functions/runtime/retry.ts `nextRetry`: the key's message carries it, so it
 * continues on any function instance).
 */

/** client-go's defaults (`workqueue.DefaultControllerRateLimiter`), ms. */
export const ITEM_BACKOFF_BASE_MS = 5;
export const ITEM_BACKOFF_MAX_MS = 1_000_000;

/**
 * The delay before the next attempt of a key that failed `failures` times (≥ 1),
 * `baseMs × 2^(failures − 1)` capped at `maxMs` (ms): client-go's `ItemExponentialFailureRateLimiter.When`.
 * The one formula of the retries of both modes (functions/runtime/retry.ts `nextRetry`) and of the
 * workqueue's own limiter (functions/runtime/workqueue.ts).
 */
export function itemExponentialBackoffMs(failures: number, baseMs: number, maxMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, failures - 1), maxMs);
}
