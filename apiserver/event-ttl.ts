/**
 * Events expire, as kube-apiserver's do: each write of an Event (create, update, patch) gives its
 * etcd key a lease of `--event-ttl` (default 1 h; the event registry's `TTLFunc`), and an Event not
 * written again within it is deleted when the lease expires (a DELETED watch event). Without it, the
 * Events a controller records (one per object uid, reason and message) pile up for the server's
 * life: the soak's namespace churn and recreated objects made about 40 new Events a minute
 * (docs/architecture.md, decision 71).
 */
import type { Store, StoreEvent } from './store.ts';

/** The storage of core/v1 and events.k8s.io/v1 Events (one storage, as in kube-apiserver). */
export const EVENTS_STORAGE = '/events';

/** kube-apiserver's `--event-ttl` default, ms. */
export const DEFAULT_EVENT_TTL_MS = 60 * 60_000;

export class EventExpiry {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** Event key → its last write, ms since the epoch; in the order of those writes (a write moves its key last). */
  readonly #writtenAt = new Map<string, number>();

  /**
   * @param ttlMs how long an Event lives after its last write, ms (> 0)
   * @param now the clock, ms since the epoch (tests)
   */
  constructor(store: Store, ttlMs: number, now: () => number = Date.now) {
    if (!(ttlMs > 0)) throw new RangeError(`event TTL ${ttlMs} ms: must be positive`);
    this.#store = store;
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  /** Notes each write of an Event (the store's listener). */
  onEvent(e: StoreEvent): void {
    if (e.storage !== EVENTS_STORAGE) return;
    this.#writtenAt.delete(e.key);
    if (e.type !== 'DELETED') this.#writtenAt.set(e.key, this.#now());
  }

  /** Events whose lease runs. */
  get size(): number {
    return this.#writtenAt.size;
  }

  /** Deletes every Event last written at least the TTL ago; returns how many. */
  expire(): number {
    const cutoff = this.#now() - this.#ttlMs;
    let n = 0;
    for (const [key, at] of this.#writtenAt) {
      if (at > cutoff) break; // the rest were written later
      this.#writtenAt.delete(key);
      if (this.#store.get(EVENTS_STORAGE, key)) {
        this.#store.delete(EVENTS_STORAGE, key);
        n++;
      }
    }
    return n;
  }
}
