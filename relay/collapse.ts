/**
 * Collapse: the workqueue's "dirty set". A key that is added again while it waits to be emitted is
 * not queued twice, so a burst of N events for one object becomes one message.
 *
 * The window is fixed from a key's first add, not extended by later adds (no trailing debounce):
 * a key waits at most `windowMs` however hot its object is, and a burst longer than the window
 * becomes one message per window.
 */

/** Timer functions, injectable so tests drive time by hand. Default: Node's global timers. */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Current time in ms since the epoch. */
  now(): number;
}

export const systemTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  now: () => Date.now(),
};

export interface CollapserOptions<T> {
  /** How long a key waits for repeats before it is emitted, in ms; 0 emits on the next timer tick. */
  windowMs: number;
  /** Receives each key once per window, with the time (ms since the epoch) of its first add. */
  emit(id: string, item: T, firstAddedAt: number): void;
  timers?: Timers;
}

interface Pending<T> {
  item: T;
  firstAddedAt: number;
  handle: unknown;
}

/** Collapses repeats of a key inside a window into one emit. */
export class Collapser<T> {
  readonly windowMs: number;
  readonly #emit: CollapserOptions<T>['emit'];
  readonly #timers: Timers;
  readonly #pending = new Map<string, Pending<T>>();

  /** @throws {RangeError} when `windowMs` is negative or not finite. */
  constructor(options: CollapserOptions<T>) {
    if (!(Number.isFinite(options.windowMs) && options.windowMs >= 0)) {
      throw new RangeError('collapse windowMs must be a finite number >= 0');
    }
    this.windowMs = options.windowMs;
    this.#emit = options.emit;
    this.#timers = options.timers ?? systemTimers;
  }

  /**
   * Adds a key. `id` identifies the key (e.g. its ordering key); `item` is what is emitted. A repeat
   * keeps the first item and its first-add time.
   * @returns `true` when the key was newly queued, `false` when it collapsed into a pending one.
   */
  add(id: string, item: T): boolean {
    if (this.#pending.has(id)) return false;
    const handle = this.#timers.setTimeout(() => this.#fire(id), this.windowMs);
    this.#pending.set(id, { item, firstAddedAt: this.#timers.now(), handle });
    return true;
  }

  /** Keys waiting for their window to end. */
  get size(): number {
    return this.#pending.size;
  }

  /** Emits every pending key now, in the order they were first added (used on shutdown). */
  flush(): void {
    for (const id of [...this.#pending.keys()]) {
      const p = this.#pending.get(id);
      if (p) this.#timers.clearTimeout(p.handle);
      this.#fire(id);
    }
  }

  /** Drops every pending key without emitting it. */
  clear(): void {
    for (const p of this.#pending.values()) this.#timers.clearTimeout(p.handle);
    this.#pending.clear();
  }

  #fire(id: string): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    this.#emit(id, p.item, p.firstAddedAt);
  }
}
