/**
 * Collapse: the workqueue's "dirty set". A key that is added again while it waits to be emitted is
 * not queued twice, so a burst of N events for one object becomes a bounded number of messages.
 *
 * Two edges (like a leading + trailing throttle):
 * - `leading-trailing` (default): the first add of a *quiet* key is emitted at once (no wait for the
 *   window); adds that follow within `windowMs` of that emit collapse into one trailing emit at the
 *   window's end, which opens a new window. A key that stays quiet for a whole window goes back to
 *   leading. A burst of any length spanning `T` ms thus costs at most `1 + ⌈T / windowMs⌉` emits.
 * - `trailing` (the relay's behaviour before leading edges; kept as the benchmark's baseline): every
 *   key waits for the window from its first add, repeats collapse into that one emit. The window is
 *   fixed from a key's first add, not extended by later adds (no debounce).
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

/** The edge of a window an emit is on. */
export type CollapseEdge = 'leading' | 'trailing';

/** Which edges of a window emit: see the module comment. */
export type CollapseMode = 'leading-trailing' | 'trailing';
export const COLLAPSE_MODES: readonly CollapseMode[] = ['leading-trailing', 'trailing'];

export interface CollapserOptions<T> {
  /** Length of a collapse window in ms; 0 emits repeats on the next timer tick. */
  windowMs: number;
  /** Default `leading-trailing`. */
  mode?: CollapseMode;
  /**
   * Receives each emitted key, with the time (ms since the epoch) of the add it answers and the
   * edge that emits it: `leading` (at once, from {@link Collapser.add}) or `trailing` (at a
   * window's end, or by {@link Collapser.flush}).
   */
  emit(id: string, item: T, firstAddedAt: number, edge: CollapseEdge): void;
  timers?: Timers;
}

/** A key inside a window: its timer, and the repeat waiting for the trailing edge, if any. */
interface Window<T> {
  handle: unknown;
  pending?: { item: T; firstAddedAt: number };
}

/** Collapses repeats of a key inside a window into one emit. */
export class Collapser<T> {
  readonly windowMs: number;
  readonly mode: CollapseMode;
  readonly #emit: CollapserOptions<T>['emit'];
  readonly #timers: Timers;
  /** Keys inside a window (emitted or waiting), in the order their window opened. */
  readonly #windows = new Map<string, Window<T>>();
  #pending = 0;

  /** @throws {RangeError} when `windowMs` is negative or not finite, or `mode` is unknown. */
  constructor(options: CollapserOptions<T>) {
    if (!(Number.isFinite(options.windowMs) && options.windowMs >= 0)) {
      throw new RangeError('collapse windowMs must be a finite number >= 0');
    }
    const mode = options.mode ?? 'leading-trailing';
    if (!COLLAPSE_MODES.includes(mode))
      throw new RangeError(`collapse mode must be one of ${COLLAPSE_MODES}`);
    this.windowMs = options.windowMs;
    this.mode = mode;
    this.#emit = options.emit;
    this.#timers = options.timers ?? systemTimers;
  }

  /**
   * Adds a key. `id` identifies the key (e.g. its ordering key); `item` is what is emitted. A repeat
   * that collapses keeps the waiting item and its add time.
   * @returns `true` when the add causes an emit (at once, or at the window's end), `false` when it
   *   collapsed into an emit already waiting.
   */
  add(id: string, item: T): boolean {
    const now = this.#timers.now();
    const window = this.#windows.get(id);
    if (window) {
      if (window.pending) return false;
      window.pending = { item, firstAddedAt: now };
      this.#pending++;
      return true;
    }
    const opened: Window<T> = { handle: this.#timers.setTimeout(() => this.#close(id), this.windowMs) };
    this.#windows.set(id, opened);
    if (this.mode === 'trailing') {
      opened.pending = { item, firstAddedAt: now };
      this.#pending++;
    } else {
      this.#emit(id, item, now, 'leading');
    }
    return true;
  }

  /** Keys waiting to be emitted (at their window's end). */
  get size(): number {
    return this.#pending;
  }

  /** Emits every waiting key now, in the order their windows opened, and forgets every window (shutdown). */
  flush(): void {
    const windows = [...this.#windows];
    this.clear();
    for (const [id, w] of windows)
      if (w.pending) this.#emit(id, w.pending.item, w.pending.firstAddedAt, 'trailing');
  }

  /** Drops every window and waiting key without emitting. */
  clear(): void {
    for (const w of this.#windows.values()) this.#timers.clearTimeout(w.handle);
    this.#windows.clear();
    this.#pending = 0;
  }

  /** End of a key's window: emit its waiting repeat and open a new window, or let the key go quiet. */
  #close(id: string): void {
    const w = this.#windows.get(id);
    if (!w) return;
    const pending = w.pending;
    if (!pending) {
      this.#windows.delete(id);
      return;
    }
    this.#pending--;
    w.pending = undefined;
    if (this.mode === 'trailing') this.#windows.delete(id);
    else w.handle = this.#timers.setTimeout(() => this.#close(id), this.windowMs);
    this.#emit(id, pending.item, pending.firstAddedAt, 'trailing');
  }
}
