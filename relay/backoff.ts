/**
 * Exponential, capped, jittered backoff for restarting a failed list+watch (client-go's
 * `wait.Backoff` used by the reflector's `BackoffManager`).
 */

export interface BackoffOptions {
  /** First delay in ms; default 500. */
  initialMs?: number;
  /** Upper bound of any delay in ms; default 30 000 (client-go's reflector caps at 30 s). */
  maxMs?: number;
  /** Growth per failure; default 2. */
  factor?: number;
  /**
   * Fraction of a delay that is randomised, in [0, 1]; default 0.2. The delay is drawn uniformly from
   * `[d·(1−jitter), d]` where `d = min(maxMs, initialMs·factor^n)`, so it never exceeds `maxMs` and
   * restarts of many informers after one outage spread out instead of arriving together.
   */
  jitter?: number;
  /** Source of randomness in [0, 1); default `Math.random` (injected by tests). */
  random?: () => number;
}

/** The delays of successive failures; {@link Backoff.reset} after a period of health. */
export class Backoff {
  readonly initialMs: number;
  readonly maxMs: number;
  readonly factor: number;
  readonly jitter: number;
  readonly #random: () => number;
  #attempt = 0;

  /** @throws {RangeError} on a non-positive `initialMs`, `maxMs < initialMs`, `factor < 1` or `jitter` outside [0, 1]. */
  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 500;
    this.maxMs = options.maxMs ?? 30_000;
    this.factor = options.factor ?? 2;
    this.jitter = options.jitter ?? 0.2;
    this.#random = options.random ?? Math.random;
    if (!(this.initialMs > 0)) throw new RangeError('backoff initialMs must be > 0');
    if (!(this.maxMs >= this.initialMs)) throw new RangeError('backoff maxMs must be >= initialMs');
    if (!(this.factor >= 1)) throw new RangeError('backoff factor must be >= 1');
    if (!(this.jitter >= 0 && this.jitter <= 1)) throw new RangeError('backoff jitter must be in [0, 1]');
  }

  /** Failures since the last reset. */
  get attempt(): number {
    return this.#attempt;
  }

  /** The delay in ms before the next attempt; each call counts one more failure. */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * this.factor ** this.#attempt);
    this.#attempt++;
    return Math.round(base * (1 - this.jitter * this.#random()));
  }

  /** Back to `initialMs`: call when the guarded operation has been healthy for a while. */
  reset(): void {
    this.#attempt = 0;
  }
}
