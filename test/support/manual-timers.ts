/**
 * Timers whose clock only moves when the test says so: the shared test double of the injectable
 * {@link Timers} of `relay/collapse.ts` (collapse, key pipeline, workqueue tests).
 */
import type { Timers } from '../../relay/collapse.ts';

export class ManualTimers implements Timers {
  #now: number;
  #next = 1;
  readonly #due = new Map<number, { at: number; fn: () => void }>();
  /** @param start the clock's start, ms since the epoch. */
  constructor(start = 1_000_000) {
    this.#now = start;
  }
  now = (): number => this.#now;
  setTimeout = (fn: () => void, ms: number): unknown => {
    const id = this.#next++;
    this.#due.set(id, { at: this.#now + ms, fn });
    return id;
  };
  clearTimeout = (handle: unknown): void => {
    this.#due.delete(handle as number);
  };
  /** Timers scheduled and not yet fired or cleared. */
  get scheduled(): number {
    return this.#due.size;
  }
  /** Moves the clock forward by `ms`, firing due timers in time order (then scheduling order). */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      const next = [...this.#due]
        .filter(([, t]) => t.at <= end)
        .sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!next) break;
      this.#due.delete(next[0]);
      this.#now = next[1].at;
      next[1].fn();
    }
    this.#now = end;
  }
}
