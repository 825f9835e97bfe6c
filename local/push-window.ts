/**
 * A model of how many pushes Cloud Pub/Sub keeps outstanding to a push endpoint at once: the
 * **push window**, opened by successes and closed by failures (a slow start, as TCP's congestion
 * window). The local push proxy (local/push-proxy.ts, `pushWindow`) uses it in the stack's
 * `cloud` push model, where it pulls the subscription and pushes itself instead of the emulator's
 * push loop (two pushes at a time, whatever the endpoint answers).
 *
 * What Google documents, in "Push subscriptions" (Pub/Sub documentation, its workflow): "Pub/Sub
 * dynamically adjusts the rate of push requests based on the rate at which it receives success
 * responses". It names no mechanism and gives no figures (start, growth, shrink, ceiling), so the
 * mechanism and its figures are this model's choices, each the textbook slow start's: it starts at
 * {@link PUSH_WINDOW}`.initial` (1), grows by one push at each success (so it doubles with each
 * window's worth of successes, once per round trip while pushes succeed), halves at each failure
 * (a non-2xx answer or no answer; at least 1), and never exceeds `maximum`. Figures measured with
 * it are modelled, and the bench labels them so.
 */

/** The window's bounds: where it starts, and its ceiling. */
export interface PushWindowOptions {
  /** Pushes outstanding at the start; default {@link PUSH_WINDOW}`.initial`. */
  initial?: number;
  /**
   * The ceiling; default {@link PUSH_WINDOW}`.maximum`. Not a Pub/Sub figure (none is documented):
   * what the local proxy holds pulled at most. Locally one function process stands for one
   * instance, so pushes above its request slots wait at it, where Cloud Run would start another.
   */
  maximum?: number;
}

/** The model's defaults: a single push at first, at most 64. */
export const PUSH_WINDOW = { initial: 1, maximum: 64 } as const;

/** A slow-start window of outstanding pushes. */
export class PushWindow {
  readonly maximum: number;
  #size: number;
  #inFlight = 0;
  #waiting: (() => void)[] = [];

  constructor(options: PushWindowOptions = {}) {
    this.maximum = Math.max(1, options.maximum ?? PUSH_WINDOW.maximum);
    this.#size = Math.min(this.maximum, Math.max(1, options.initial ?? PUSH_WINDOW.initial));
  }

  /** Pushes allowed outstanding now. */
  get size(): number {
    return this.#size;
  }

  /** Pushes outstanding now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Resolves when a push may start (a slot of the window is free); the caller then owns the slot. */
  async acquire(): Promise<void> {
    while (this.#inFlight >= this.#size) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#inFlight++;
  }

  /**
   * Gives the slot back with the push's outcome: a success opens the window by one, a failure
   * halves it; `undefined` (an outcome that is not an attempt) leaves it as it is.
   */
  release(success: boolean | undefined): void {
    this.#inFlight--;
    if (success === true) this.#size = Math.min(this.maximum, this.#size + 1);
    else if (success === false) this.#size = Math.max(1, Math.floor(this.#size / 2));
    // Every waiter re-checks: the window may have grown by one or shrunk.
    for (const wake of this.#waiting.splice(0)) wake();
  }
}
