/**
 * The relay's publish retry buffer: keys whose publish failed (Pub/Sub unreachable, the emulator
 * restarted, a topic briefly missing) wait here, de-duplicated, and are handed back to the pipeline
 * after an exponential, capped, jittered backoff, so a Pub/Sub outage loses none of the keys the
 * relay saw. Bounded: when full, the oldest key is dropped (and reported); the periodic resync
 * reconciles every key anyway, so a dropped key is late, never lost.
 */
import { Backoff, type BackoffOptions } from './backoff.ts';
import { systemTimers, type Timers } from './collapse.ts';

/** Default {@link RetryBufferOptions.capacity}: 10 000 keys (about 2 MB of small key objects). */
export const DEFAULT_RETRY_BUFFER_KEYS = 10_000;

export interface RetryBufferOptions<T> {
  /** Keys kept at most; default {@link DEFAULT_RETRY_BUFFER_KEYS}. */
  capacity?: number;
  /** Delay before handing keys back; default 1 s doubling up to 30 s, 20 % jitter. */
  backoff?: BackoffOptions;
  /** Receives the buffered keys, oldest first, when the delay is over. Must not throw. */
  retry(items: T[]): void;
  /** Called for each key dropped because the buffer was full. */
  onDrop?(item: T): void;
  /** Called with the number of buffered keys after each change. */
  onSize?(size: number): void;
  timers?: Timers;
}

/** Failed keys by id (e.g. the ordering key), oldest first, retried together after a backoff. */
export class RetryBuffer<T> {
  readonly capacity: number;
  readonly #options: RetryBufferOptions<T>;
  readonly #backoff: Backoff;
  readonly #timers: Timers;
  readonly #items = new Map<string, T>();
  #handle: unknown;

  /** @throws {RangeError} when `capacity` is not a positive integer (and as {@link Backoff}). */
  constructor(options: RetryBufferOptions<T>) {
    this.capacity = options.capacity ?? DEFAULT_RETRY_BUFFER_KEYS;
    if (!(Number.isInteger(this.capacity) && this.capacity > 0))
      throw new RangeError('retry buffer capacity must be a positive integer');
    this.#options = options;
    this.#backoff = new Backoff({ initialMs: 1_000, maxMs: 30_000, ...options.backoff });
    this.#timers = options.timers ?? systemTimers;
  }

  /** Keys waiting. */
  get size(): number {
    return this.#items.size;
  }

  /** Adds a key whose publish failed (a key already waiting stays in its place); schedules a retry. */
  add(id: string, item: T): void {
    if (!this.#items.has(id)) {
      while (this.#items.size >= this.capacity) {
        const [oldestId, oldest] = this.#items.entries().next().value as [string, T];
        this.#items.delete(oldestId);
        this.#options.onDrop?.(oldest);
      }
      this.#items.set(id, item);
      this.#options.onSize?.(this.#items.size);
    }
    if (this.#handle === undefined) {
      this.#handle = this.#timers.setTimeout(() => this.#fire(), this.#backoff.next());
    }
  }

  /** A publish succeeded: the next failure waits the initial delay again. */
  succeeded(): void {
    if (this.#items.size === 0 && this.#handle === undefined) this.#backoff.reset();
  }

  /** Drops every waiting key and the timer (on stop: the resync covers what was left). @returns keys dropped */
  clear(): number {
    const n = this.#items.size;
    if (this.#handle !== undefined) this.#timers.clearTimeout(this.#handle);
    this.#handle = undefined;
    this.#items.clear();
    this.#options.onSize?.(0);
    return n;
  }

  #fire(): void {
    this.#handle = undefined;
    const items = [...this.#items.values()];
    this.#items.clear();
    this.#options.onSize?.(0);
    this.#options.retry(items);
  }
}
