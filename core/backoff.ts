/**
 * Per-key exponential backoff, as client-go's `workqueue.ItemExponentialFailureRateLimiter`
 * (`DefaultControllerRateLimiter`: base 5 ms, cap 1000 s): the n-th consecutive failure of one key
 * waits `base × 2ⁿ⁻¹` ms, at most `max`; a success forgets the key. State is per process (a Cloud
 * Run instance): a key that fails on another instance starts again at `base`, which errs on the
 * side of retrying sooner, never later than the cap.
 */

/** client-go's defaults (`workqueue.DefaultControllerRateLimiter`), ms. */
export const ITEM_BACKOFF_BASE_MS = 5;
export const ITEM_BACKOFF_MAX_MS = 1_000_000;

/**
 * The delay before the next attempt of a key that failed `failures` times (≥ 1),
 * `baseMs × 2^(failures − 1)` capped at `maxMs` (ms): client-go's `ItemExponentialFailureRateLimiter.When`.
 * The one formula of the kit's rate-limited requeues, `reconcile`'s retries (functions/runtime/retry.ts)
 * and the in-process workqueue (functions/runtime/workqueue.ts).
 */
export function itemExponentialBackoffMs(failures: number, baseMs: number, maxMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, failures - 1), maxMs);
}

export class ItemExponentialBackoff {
  readonly #failures = new Map<string, number>();
  readonly baseMs: number;
  readonly maxMs: number;

  /** @param baseMs first delay, ms (default 5) @param maxMs the cap, ms (default 1 000 000 = 1000 s) */
  constructor(baseMs = ITEM_BACKOFF_BASE_MS, maxMs = ITEM_BACKOFF_MAX_MS) {
    this.baseMs = baseMs;
    this.maxMs = maxMs;
  }

  /** Counts one more failure of `item` and returns how long it should wait, ms (client-go's `When`). */
  when(item: string): number {
    const failures = this.#failures.get(item) ?? 0;
    this.#failures.set(item, failures + 1);
    return itemExponentialBackoffMs(failures + 1, this.baseMs, this.maxMs);
  }

  /** The consecutive failures counted for `item` (client-go's `NumRequeues`). */
  failures(item: string): number {
    return this.#failures.get(item) ?? 0;
  }

  /** Forgets `item` after a success: its next failure waits `baseMs` again (client-go's `Forget`). */
  forget(item: string): void {
    this.#failures.delete(item);
  }
}
