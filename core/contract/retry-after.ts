/**
 * A failure that says when to try again: a Kubernetes `429 Too Many Requests` with `Retry-After`, a
 * Google API `RESOURCE_EXHAUSTED` with a `google.rpc.RetryInfo` retry delay. The kit (or a
 * controller) throws it; `reconcile` retries the key after {@link RetryAfterError.retryAfterMs}
 * instead of its per-key exponential backoff (functions/runtime/retry.ts), and never sooner. It is transient
 * (core/k8s/errors.ts `isTransient`); after the configured attempts the key is dead-lettered
 * as any other failing key.
 */
export class RetryAfterError extends Error {
  override readonly name = 'RetryAfterError';
  /** How long to wait before the next attempt, ms (≥ 0, finite). */
  readonly retryAfterMs: number;
  /**
   * @param retryAfterMs the delay the failing API asked for, ms
   * @param options.cause the API's error, kept for the log line
   * @throws {RangeError} when `retryAfterMs` is negative or not finite
   */
  constructor(message: string, retryAfterMs: number, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    if (!(retryAfterMs >= 0 && Number.isFinite(retryAfterMs)))
      throw new RangeError(`retryAfterMs must be a finite number ≥ 0, got ${retryAfterMs}`);
    this.retryAfterMs = retryAfterMs;
  }
}
