/**
 * Generic object storage, as etcd + the watch cache behind kube-apiserver: one global, increasing
 * resourceVersion; objects keyed by storage (`<group>/<plural>`) and `namespace/name`; a bounded event
 * history per storage (the watch cache window) from which watches resume and continued lists read
 * their snapshot. Objects are copied in and out, never shared.
 */
import type { KubeObject } from './resources.ts';

export type StoreEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One committed change. `object` carries the new resourceVersion (also for DELETED, as etcd3 watch). */
export interface StoreEvent {
  type: StoreEventType;
  storage: string;
  key: string;
  rv: number;
  object: KubeObject;
  /** The state before the change (absent for ADDED). */
  prev?: KubeObject;
}

export type StoreListener = (event: StoreEvent) => void;

/** The storage key of an object: `namespace/name`, or `name` when cluster-scoped. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** The index of the first of the sorted `keys` that is `>= key`. */
function lowerBound(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((keys[mid] as string) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Replaces, in `next`, every string equal to the one at the same path of `prev` by `prev`'s: the
 * same characters, one copy. `structuredClone` copies every string, so without this each version
 * the history keeps (and the latest) held its own copy of every field no write changed: a 900 KiB
 * Secret's data is 1.2 MB a version, and the soak's 5 minutes of history held 260 copies of its
 * two such Secrets' data, 305 of the 420 MiB its heap held (decision 71). Strings are immutable:
 * which copy an object holds is invisible to its readers.
 */
function shareUnchangedStrings(next: unknown, prev: unknown): void {
  if (typeof next !== 'object' || next === null || typeof prev !== 'object' || prev === null) return;
  const n = next as Record<string, unknown>;
  const p = prev as Record<string, unknown>;
  for (const k of Object.keys(n)) {
    const value = n[k];
    if (typeof value === 'string') {
      const before = p[k];
      if (value === before) n[k] = before;
    } else shareUnchangedStrings(value, p[k]);
  }
}

export interface StoreOptions {
  /** Events kept per storage for watch resumption and continue tokens; default 1000. */
  historySize?: number;
  /**
   * Events older than this, ms, are dropped from a storage's history at its next change (as etcd's
   * periodic compaction, kube-apiserver's `--etcd-compaction-interval`, 5 minutes by default, drops
   * older revisions); default none: the history is bounded by {@link historySize} alone. With large
   * objects a history of thousands of events holds their copies for as long as the storage takes to
   * change that often (the soak's 900 KiB Secrets, decision 68).
   */
  historyMs?: number;
  /** The clock, ms since the epoch; default `Date.now` (tests). */
  now?: () => number;
}

export class Store {
  private rv = 0;
  private readonly data = new Map<string, Map<string, KubeObject>>();
  private readonly history = new Map<string, StoreEvent[]>();
  /** Per storage: when each event of {@link history} was committed, ms since the epoch. */
  private readonly historyAt = new Map<string, number[]>();
  /** Per storage: events with rv <= this value are no longer kept. */
  private readonly compactedAt = new Map<string, number>();
  private compactedAll = 0;
  /** Per storage: its keys sorted, until an object is added or removed. */
  private readonly sortedKeys = new Map<string, string[]>();
  private readonly listeners = new Set<StoreListener>();
  readonly historySize: number;
  readonly historyMs: number | undefined;
  private readonly now: () => number;

  constructor(options: StoreOptions = {}) {
    this.historySize = options.historySize ?? 1000;
    this.historyMs = options.historyMs;
    this.now = options.now ?? Date.now;
  }

  /** The latest committed resourceVersion. */
  currentRv(): number {
    return this.rv;
  }

  subscribe(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(storage: string, key: string): KubeObject | undefined {
    const obj = this.data.get(storage)?.get(key);
    return obj ? structuredClone(obj) : undefined;
  }

  /** Objects of a storage in key order (etcd key order), optionally of one namespace; copies. */
  list(storage: string, namespace?: string): KubeObject[] {
    const out: KubeObject[] = [];
    this.walk(storage, { namespace }, (o) => {
      out.push(structuredClone(o));
    });
    return out;
  }

  /**
   * Visits the stored objects of a storage in key order without copying them (an etcd range read):
   * of one namespace when given (a key prefix), from key `from` on (inclusive). `visit` must not
   * mutate or keep the objects, and returns `false` to stop. Cost: the objects visited, plus a sort
   * of the storage's keys after an object was added or removed.
   */
  walk(
    storage: string,
    range: { namespace?: string; from?: string },
    visit: (obj: Readonly<KubeObject>, key: string) => unknown,
  ): void {
    const m = this.data.get(storage);
    if (!m) return;
    const keys = this.keysInOrder(storage, m);
    const prefix = range.namespace ? `${range.namespace}/` : '';
    const from = range.from && range.from > prefix ? range.from : prefix;
    for (let i = lowerBound(keys, from); i < keys.length; i++) {
      const k = keys[i] as string;
      if (prefix && !k.startsWith(prefix)) break;
      const o = m.get(k);
      if (o && visit(o, k) === false) return;
    }
  }

  private keysInOrder(storage: string, m: Map<string, KubeObject>): string[] {
    let keys = this.sortedKeys.get(storage);
    if (!keys) {
      keys = [...m.keys()].sort();
      this.sortedKeys.set(storage, keys);
    }
    return keys;
  }

  /**
   * Visits the stored objects of a storage without copying them, in no particular order (the
   * garbage collector's full scan: unlike {@link walk}, it never sorts the keys); `visit` must not
   * mutate or keep them.
   */
  scan(storage: string, visit: (obj: Readonly<KubeObject>) => void): void {
    for (const o of this.data.get(storage)?.values() ?? []) visit(o);
  }

  /** Number of objects in a storage (of one namespace when given). */
  count(storage: string, namespace?: string): number {
    const m = this.data.get(storage);
    if (!m) return 0;
    if (!namespace) return m.size;
    let n = 0;
    for (const o of m.values()) if (o.metadata.namespace === namespace) n++;
    return n;
  }

  /** Stores a new object; assigns its resourceVersion. */
  create(storage: string, key: string, obj: KubeObject): KubeObject {
    return this.commit('ADDED', storage, key, obj);
  }

  /** Replaces an object; assigns its resourceVersion. */
  update(storage: string, key: string, obj: KubeObject): KubeObject {
    return this.commit('MODIFIED', storage, key, obj);
  }

  /** Removes an object; `last` (default: the stored object) is the DELETED event's object. */
  delete(storage: string, key: string, last?: KubeObject): KubeObject {
    const current = this.data.get(storage)?.get(key);
    if (!current) throw new Error(`store: ${storage} ${key} does not exist`);
    return this.commit('DELETED', storage, key, last ?? structuredClone(current));
  }

  private commit(type: StoreEventType, storage: string, key: string, obj: KubeObject): KubeObject {
    let m = this.data.get(storage);
    if (!m) {
      m = new Map();
      this.data.set(storage, m);
    }
    const prev = m.get(key);
    const rv = ++this.rv;
    const stored = structuredClone(obj);
    if (prev) shareUnchangedStrings(stored, prev);
    stored.metadata.resourceVersion = String(rv);
    if (type === 'DELETED') m.delete(key);
    else m.set(key, stored);
    if (!prev || type === 'DELETED') this.sortedKeys.delete(storage);
    const event: StoreEvent = { type, storage, key, rv, object: stored, ...(prev ? { prev } : {}) };
    let h = this.history.get(storage);
    let at = this.historyAt.get(storage);
    if (!h || !at) {
      h = [];
      at = [];
      this.history.set(storage, h);
      this.historyAt.set(storage, at);
    }
    const now = this.now();
    h.push(event);
    at.push(now);
    let drop = Math.max(0, h.length - this.historySize);
    if (this.historyMs !== undefined)
      while (drop < h.length - 1 && (at[drop] as number) < now - this.historyMs) drop++;
    if (drop > 0) {
      const dropped = h.splice(0, drop);
      at.splice(0, drop);
      const last = dropped[dropped.length - 1];
      if (last) this.compactedAt.set(storage, Math.max(this.compactedAt.get(storage) ?? 0, last.rv));
    }
    for (const l of this.listeners) l(event);
    return structuredClone(stored);
  }

  /** The oldest resourceVersion a watch or continued list of this storage can start from. */
  oldestAvailable(storage: string): number {
    return Math.max(this.compactedAt.get(storage) ?? 0, this.compactedAll);
  }

  /** Events of a storage with rv > `after`, or `undefined` when `after` is older than the kept history. */
  eventsSince(storage: string, after: number): StoreEvent[] | undefined {
    if (after < this.oldestAvailable(storage)) return undefined;
    return (this.history.get(storage) ?? []).filter((e) => e.rv > after);
  }

  /**
   * The objects of a storage as they were at resourceVersion `rv` (etcd MVCC read), in key order;
   * `undefined` when `rv` is older than the kept history (compacted). Copies.
   */
  snapshot(storage: string, rv: number, namespace?: string): KubeObject[] | undefined {
    const out: KubeObject[] = [];
    const kept = this.walkAt(storage, rv, { namespace }, (o) => {
      out.push(structuredClone(o));
    });
    return kept ? out : undefined;
  }

  /**
   * {@link walk} over the objects as they were at resourceVersion `rv` (etcd MVCC range read).
   * @returns `false`, visiting nothing, when `rv` is older than the kept history (compacted).
   */
  walkAt(
    storage: string,
    rv: number,
    range: { namespace?: string; from?: string },
    visit: (obj: Readonly<KubeObject>, key: string) => unknown,
  ): boolean {
    const later = this.eventsSince(storage, rv);
    if (!later) return false;
    if (later.length === 0) {
      this.walk(storage, range, visit);
      return true;
    }
    // The state at rv: the live objects, with each key changed since rv undone to its earliest prev.
    const undone = new Map<string, KubeObject | undefined>();
    for (let i = later.length - 1; i >= 0; i--) {
      const e = later[i] as StoreEvent;
      undone.set(e.key, e.prev);
    }
    const live = this.data.get(storage) ?? new Map<string, KubeObject>();
    const prefix = range.namespace ? `${range.namespace}/` : '';
    const from = range.from && range.from > prefix ? range.from : prefix;
    const inRange = (k: string) => k >= from && (!prefix || k.startsWith(prefix));
    const keys = this.keysInOrder(storage, live);
    const gone = [...undone.keys()].filter((k) => !live.has(k) && inRange(k));
    const ordered = gone.length ? [...keys.filter(inRange), ...gone].sort() : keys;
    for (let i = gone.length ? 0 : lowerBound(ordered, from); i < ordered.length; i++) {
      const k = ordered[i] as string;
      if (!inRange(k)) {
        if (k >= from) break;
        continue;
      }
      const o = undone.has(k) ? undone.get(k) : live.get(k);
      if (o && visit(o, k) === false) break;
    }
    return true;
  }

  /** Drops all kept history (etcd compaction): older resourceVersions now answer 410 Expired. */
  compact(): number {
    this.compactedAll = this.rv;
    for (const [storage, h] of this.history) {
      h.length = 0;
      const at = this.historyAt.get(storage);
      if (at) at.length = 0;
      this.compactedAt.set(storage, this.rv);
    }
    return this.rv;
  }
}
