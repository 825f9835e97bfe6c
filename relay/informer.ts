/**
 * One metadata-only list+watch that never gives up (client-go's reflector with a metadata-only
 * `ListWatch`, as its `metadatainformer`): a paginated LIST, then WATCH from its resourceVersion
 * with bookmarks on (client-node's {@link MetadataWatch}), watched again from the last
 * resourceVersion after a clean close or a silent stream, listed again after 410 Gone, restarted
 * with a fresh LIST after any other error, and held back until its resource is served (a CRD
 * created later).
 *
 * A failed run (a failed LIST, a non-200 watch answer, a broken stream) starts again after an
 * exponential, capped, jittered backoff; its LIST is diffed against the cache, so objects created,
 * changed or deleted while nothing watched come out as ADDED / MODIFIED / DELETED (client-go's
 * reflector `Replace`, with the cached state as the tombstone).
 *
 * The cache keeps per object only what the relay reads of it (docs/architecture.md, decision 1):
 * its key, and one JSON string ({@link cacheEntryOf}) of its resourceVersion, uid, generation, and
 * the metadata the primary predicate compares and maps follow (labels, annotations,
 * deletionTimestamp, finalizers, ownerReferences). Events carry the
 * object as the API server sent it (metadata only); `oldObject`, a LIST's tombstones and
 * {@link MetadataInformer.get} are rebuilt from the cache with those fields. client-node's
 * `ListWatch` is not used: it keeps every object whole in a cache of its own.
 *
 * A watch that stays open but silent — no event and no BOOKMARK for `watchSilenceTimeoutMs` — is
 * aborted and watched again from the last resourceVersion (client-node's inactivity timeout, set
 * here): the classic "replication silently stopped" cannot last longer than that. A 429 answer to
 * a LIST waits at least its `Retry-After` before the next attempt.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig, KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';
import type { ResourceType, WatchEvent } from '../core/contract/controller.ts';
import { type Key, keyString, parseKeyString } from '../core/contract/key.ts';
import { apiVersionOf, resourcePath } from '../core/k8s/rest.ts';
import type { Logger } from '../core/log.ts';
import { Backoff, type BackoffOptions } from './backoff.ts';
import { ApiStatusError, isServed, listMetadata, MetadataWatch, resourceName } from './metadata.ts';
import { recordStatusRead, SIGNIFICANT_METADATA } from './predicate.ts';

export interface MetadataInformerOptions {
  kubeConfig: KubeConfig;
  resource: ResourceType;
  /** Restrict to one namespace; omitted: all namespaces. */
  namespace?: string;
  /** Server-side label selector. */
  labelSelector?: string;
  logger: Logger;
  /** Receives every change of the cache, in order. Objects are metadata only. Must not throw. */
  onEvent(event: WatchEvent): void;
  /**
   * Lists and watches whole objects and hands each one here before it is cut down to metadata
   * (the cache and the events stay metadata only); called before the event the object causes.
   * For the spec indexes (relay/spec-index.ts). Synchronous; must not throw.
   */
  onObject?(object: KubernetesObject): void;
  /**
   * What the watches served read of an object's status (their `Watch.readsStatus`, combined): with
   * it the informer lists and watches whole objects, keeps the JSON of this value per object beside
   * its cache entry, and records it (relay/predicate.ts `recordStatusRead`) on each event's object
   * and old object; the body is dropped at once. One that throws records nothing for the object
   * (its events then pass every status predicate).
   */
  readsStatus?(object: KubernetesObject): unknown;
  /** Called before each restart, with the error that ended the previous run. */
  onRestart?(err: unknown): void;
  /** Restart backoff; default 500 ms doubling up to 30 s, 20 % jitter. */
  backoff?: BackoffOptions;
  /** A run that lasted at least this long (ms) restarts from the initial backoff again; default 60 000. */
  resetBackoffAfterMs?: number;
  /** While the resource is not served (CRD missing), how often discovery is asked again, in ms; default 5 000. */
  discoveryIntervalMs?: number;
  /**
   * ms an open watch may stay silent (no event, no BOOKMARK) before it is aborted and watched again
   * from its last resourceVersion; default {@link DEFAULT_WATCH_SILENCE_TIMEOUT_MS}.
   */
  watchSilenceTimeoutMs?: number;
  /** Called for every event or BOOKMARK received on a watch, and after each successful LIST. */
  onActivity?(): void;
  /** Called when a watch was aborted for silence (it is watched again at once). */
  onSilentWatch?(): void;
  /** Called when a watch stream opens (`true`) or ends (`false`). */
  onWatching?(watching: boolean): void;
  /** Called after each discovery of whether the resource is served (`false`: waiting for it, its CRD absent). */
  onServed?(served: boolean): void;
}

/**
 * Default {@link MetadataInformerOptions.watchSilenceTimeoutMs}: 90 s. kube-apiserver's watch cache
 * sends each watcher that allows them a BOOKMARK about once a minute (the cacher's
 * `defaultBookmarkFrequency`), even when nothing changes; 1.5 periods tolerates a late bookmark on a
 * busy server without restarting healthy watches, and bounds how long a stuck watch goes unnoticed.
 */
export const DEFAULT_WATCH_SILENCE_TIMEOUT_MS = 90_000;

/**
 * A watch open at least this long (ms) before a clean close was healthy: the next one starts at once
 * (client-go's reflector backs off only after a watch that ended within about a second).
 */
const HEALTHY_WATCH_MS = 1_000;

/** The first wait (ms) after a watch the server closed within {@link HEALTHY_WATCH_MS}; doubles on each repeat. */
const CLOSE_BACKOFF_MS = 1_000;
/** The longest such wait (ms): client-node's `ListWatch.MAX_RECONNECT_DELAY_MS`. */
const CLOSE_BACKOFF_MAX_MS = 30_000;

/** The error a watch ends with after an ERROR event of status 410 (its resourceVersion was compacted). */
const GONE = Object.assign(new Error('resourceVersion too old (410 Gone)'), { statusCode: 410 });

/** Whether a watch ended with 410 Gone: as an ERROR event (then closed) or as its HTTP answer. */
function isGone(err: unknown): boolean {
  const e = err as { statusCode?: number; code?: number } | null | undefined;
  return e?.statusCode === 410 || e?.code === 410;
}

/**
 * The metadata fields a cache entry keeps, in this order: the resourceVersion (an event with the
 * cached one is a repeat, dropped), the uid (MapContext.get callers compare it with owner
 * references), the generation, and {@link SIGNIFICANT_METADATA} (what the primary predicate
 * compares, and what maps read besides identity).
 */
export const CACHED_FIELDS = ['resourceVersion', 'uid', 'generation', ...SIGNIFICANT_METADATA] as const;

/**
 * What the informer's cache keeps of one object besides its key: `JSON.stringify` of the values of
 * {@link CACHED_FIELDS} as an array (`null` for one not set, trailing ones left out). One flat
 * string, about 70 bytes for an object with a uid and one label (`npm run bench`, relay memory):
 * never the body (metadata-only LIST and WATCH), never `managedFields`, `creationTimestamp` or the
 * last-applied annotation. Two states of one object have equal entries only when their
 * resourceVersions are equal.
 */
export function cacheEntryOf(obj: KubernetesObject): string {
  const m = (obj.metadata ?? {}) as Record<string, unknown>;
  const values = CACHED_FIELDS.map((field) => m[field] ?? null);
  while (values.length > 0 && values.at(-1) === null) values.pop();
  return JSON.stringify(values);
}

/**
 * The object as the cache knows it: `apiVersion` and `kind` of `resource`, and `metadata` with the
 * name and namespace of `key` and the {@link CACHED_FIELDS} of `entry` that are set. A new object on
 * each call.
 * @param entry a {@link cacheEntryOf} string
 */
export function objectOfCacheEntry(key: string, entry: string, resource: ResourceType): KubernetesObject {
  const { namespace, name } = parseKeyString(key);
  const metadata: Record<string, unknown> = { name, ...(namespace ? { namespace } : {}) };
  const values = JSON.parse(entry) as unknown[];
  CACHED_FIELDS.forEach((field, i) => {
    if (values[i] !== undefined && values[i] !== null) metadata[field] = values[i];
  });
  return { apiVersion: apiVersionOf(resource), kind: resource.kind, metadata: metadata as V1ObjectMeta };
}

/**
 * The resourceVersion of a {@link cacheEntryOf} string (its first value), read without parsing the
 * rest; `undefined` when the object had none. kube-apiserver's versions are decimal digits, which
 * JSON writes unescaped.
 */
export function resourceVersionOfCacheEntry(entry: string): string | undefined {
  if (!entry.startsWith('["')) return undefined;
  const end = entry.indexOf('"', 2);
  return end > 2 ? entry.slice(2, end) : undefined;
}

/** What an informer is doing now. */
export type InformerState = 'idle' | 'waiting-for-resource' | 'running' | 'backing-off' | 'stopped';

/** A restarting, metadata-only informer with its own cache of the current objects (by `namespace/name`). */
export class MetadataInformer {
  /** `v1/secrets`, plus `@namespace` and `?labelSelector` when set: names this informer in logs and metrics. */
  readonly id: string;
  readonly resource: ResourceType;
  readonly #options: MetadataInformerOptions;
  readonly #log: Logger;
  readonly #backoff: Backoff;
  /** `namespace/name` → {@link cacheEntryOf} the object. */
  readonly #cache = new Map<string, string>();
  /** `namespace/name` → the JSON of what the watches read of its status ({@link MetadataInformerOptions.readsStatus}). */
  readonly #statusReads = new Map<string, string>();
  /** `namespace/name` → the status read of the whole object just received, until its upsert takes it. */
  readonly #pendingReads = new Map<string, string>();
  readonly #abort = new AbortController();
  #state: InformerState = 'idle';
  #synced = false;
  #markSynced!: () => void;
  readonly #syncedPromise = new Promise<void>((resolve) => {
    this.#markSynced = resolve;
  });
  /** The open watch request, aborted by stop(). */
  #request: AbortController | undefined;
  #endRun: ((err: unknown) => void) | undefined;
  #loop: Promise<void> | undefined;
  #restarts = 0;
  #warnedWholeObjects = false;
  /** Since when (ms since the epoch) no watch stream has been open; undefined while watching. */
  #notWatchingSince: number | undefined = Date.now();

  constructor(options: MetadataInformerOptions) {
    this.#options = options;
    this.resource = options.resource;
    this.id =
      resourceName(options.resource) +
      (options.namespace ? `@${options.namespace}` : '') +
      (options.labelSelector ? `?${options.labelSelector}` : '');
    this.#log = options.logger.child({ informer: this.id });
    this.#backoff = new Backoff(options.backoff);
  }

  get state(): InformerState {
    return this.#state;
  }

  /** Restarts so far (each one after a failure). */
  get restarts(): number {
    return this.#restarts;
  }

  /**
   * Whether the first LIST has been applied to the cache (client-go's `HasSynced`); stays true across
   * restarts. A resource that is not served yet counts as synced with no objects.
   */
  hasSynced(): boolean {
    return this.#synced;
  }

  /** Resolves once {@link hasSynced} is true. */
  whenSynced(): Promise<void> {
    return this.#syncedPromise;
  }

  /** Whether a watch stream is open now. */
  get watching(): boolean {
    return this.#notWatchingSince === undefined;
  }

  /**
   * ms for which this informer has been unable to watch: 0 while a watch stream is open, and while
   * its resource is not served (nothing to watch); else the time since the last stream ended (or
   * since start).
   */
  notWatchingForMs(now = Date.now()): number {
    if (this.#state === 'waiting-for-resource' || this.#notWatchingSince === undefined) return 0;
    return now - this.#notWatchingSince;
  }

  #activity(): void {
    this.#options.onActivity?.();
  }

  #setWatching(watching: boolean): void {
    if (watching === this.watching) return;
    this.#notWatchingSince = watching ? undefined : Date.now();
    this.#options.onWatching?.(watching);
  }

  /** Objects in the cache. */
  get size(): number {
    return this.#cache.size;
  }

  /** The keys of the cached objects. */
  keys(): Key[] {
    return Array.from(this.#cache.keys(), parseKeyString);
  }

  /**
   * The cached state of `key` (what {@link objectOfCacheEntry} rebuilds: identity, generation,
   * labels, annotations, deletionTimestamp, finalizers, ownerReferences), or `undefined`.
   */
  get(key: Key): KubernetesObject | undefined {
    const k = keyString(key);
    const entry = this.#cache.get(k);
    return entry === undefined ? undefined : objectOfCacheEntry(k, entry, this.resource);
  }

  /**
   * The cached `resourceVersion` of `key`, or `undefined` when not cached: the first value of its
   * entry ({@link CACHED_FIELDS}), read without parsing the rest.
   */
  resourceVersionOf(key: Key): string | undefined {
    const entry = this.#cache.get(keyString(key));
    return entry === undefined ? undefined : resourceVersionOfCacheEntry(entry);
  }

  /** Starts list+watch in the background. Idempotent. */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops watching; no event is delivered once this resolves. */
  async stop(): Promise<void> {
    if (this.#state === 'stopped') return;
    this.#state = 'stopped';
    this.#abort.abort();
    this.#request?.abort();
    this.#endRun?.(undefined);
    await this.#loop;
  }

  #stopped(): boolean {
    return this.#abort.signal.aborted;
  }

  #setSynced(): void {
    if (this.#synced) return;
    this.#synced = true;
    this.#markSynced();
    this.#log.info({ objects: this.#cache.size }, 'informer synced');
  }

  async #pause(ms: number): Promise<void> {
    try {
      await sleep(ms, undefined, { signal: this.#abort.signal });
    } catch {
      // aborted by stop()
    }
  }

  async #run(): Promise<void> {
    let waitingLogged = false;
    while (!this.#stopped()) {
      let served: boolean;
      try {
        served = await isServed(this.#options.kubeConfig, this.resource);
      } catch (err) {
        if (this.#stopped()) break;
        await this.#restartAfter(err, 0);
        continue;
      }
      if (this.#stopped()) break;
      if (!served) {
        if (!waitingLogged) {
          this.#log.info('resource not served (CRD absent or not established): waiting for it');
          waitingLogged = true;
        }
        this.#state = 'waiting-for-resource';
        for (const key of [...this.#cache.keys()]) this.#removeKey(key); // a deleted CRD took its objects with it: their keys get tombstones
        this.#setSynced();
        this.#options.onServed?.(false);
        await this.#pause(this.#options.discoveryIntervalMs ?? 5_000);
        continue;
      }
      if (waitingLogged) {
        this.#log.info('resource served now: starting list+watch');
        this.#notWatchingSince = Date.now(); // it had nothing to watch until now
      }
      waitingLogged = false;
      this.#state = 'running';
      this.#options.onServed?.(true);
      const startedAt = Date.now();
      const err = await this.#runInformer();
      if (this.#stopped()) break;
      await this.#restartAfter(err, Date.now() - startedAt);
    }
    this.#state = 'stopped';
  }

  async #restartAfter(err: unknown, ranForMs: number): Promise<void> {
    this.#restarts++;
    if (ranForMs >= (this.#options.resetBackoffAfterMs ?? 60_000)) this.#backoff.reset();
    // A 429 says when to come back (Retry-After); client-go's rest client waits for it too.
    const retryAfterMs = (retryAfterSecondsOf(err) ?? 0) * 1000;
    const delayMs = Math.max(this.#backoff.next(), retryAfterMs);
    this.#state = 'backing-off';
    this.#log.warn(
      { err, delayMs, restarts: this.#restarts },
      'list+watch failed: restarting with a fresh list',
    );
    this.#options.onRestart?.(err);
    await this.#pause(delayMs);
  }

  /**
   * Runs one list+watch until it fails (resolved with the error) or stop() (undefined): client-go's
   * reflector `ListAndWatch`. A fresh LIST replaces the cache; each watch resumes from the last
   * resourceVersion seen (an event's or a BOOKMARK's). A watch that ends cleanly or goes silent
   * is watched again from there; 410 Gone (an ERROR event or answer: the resourceVersion was
   * compacted) lists again; any other error ends the run.
   */
  async #runInformer(): Promise<unknown> {
    const { kubeConfig, resource, namespace, labelSelector } = this.#options;
    const silenceTimeoutMs = this.#options.watchSilenceTimeoutMs ?? DEFAULT_WATCH_SILENCE_TIMEOUT_MS;
    const onObject =
      this.#options.onObject || this.#options.readsStatus
        ? (o: KubernetesObject) => this.#object(o)
        : undefined;
    const watch = new MetadataWatch(kubeConfig, resource, {
      silenceTimeoutMs,
      ...(onObject ? { onObject } : {}),
      onWholeObject: (kind) => {
        if (this.#warnedWholeObjects) return;
        this.#warnedWholeObjects = true;
        this.#log.warn({ kind }, 'API server sent whole objects on a metadata watch: stripped on arrival');
      },
      onActivity: () => this.#activity(),
      onWatching: (watching, err) => {
        this.#setWatching(watching);
        if ((err as { name?: string } | undefined)?.name === 'TimeoutError') {
          this.#log.warn(
            { silenceTimeoutMs },
            'watch silent too long (no event, no bookmark): watching again from the last resourceVersion',
          );
          this.#options.onSilentWatch?.();
        }
      },
    });
    const path = resourcePath(resource, namespace);
    let resourceVersion = '';
    let closeDelayMs = 0;
    while (!this.#stopped()) {
      if (!resourceVersion) {
        try {
          resourceVersion = await this.#list(onObject);
        } catch (err) {
          return err;
        }
        if (this.#stopped()) return undefined;
      }
      const openedAt = Date.now();
      const ended = await this.#watch(watch, path, resourceVersion, labelSelector);
      if (this.#stopped()) return undefined;
      const { err } = ended;
      resourceVersion = ended.resourceVersion;
      if (isGone(err)) resourceVersion = '';
      else if ((err as { name?: string } | undefined)?.name === 'TimeoutError') closeDelayMs = 0;
      else if (err) return err;
      else if (Date.now() - openedAt >= HEALTHY_WATCH_MS) closeDelayMs = 0;
      else {
        // A watch the server closes at once, again and again: wait 1 s, doubling up to 30 s,
        // before the next (client-node's ListWatch and client-go's reflector back off the same way).
        closeDelayMs = Math.min(closeDelayMs ? closeDelayMs * 2 : CLOSE_BACKOFF_MS, CLOSE_BACKOFF_MAX_MS);
        await this.#pause(closeDelayMs);
      }
    }
    return undefined;
  }

  /**
   * A paginated LIST applied to the cache page by page (ADDED / MODIFIED as each page arrives),
   * then DELETED for every cached key it did not list.
   * @returns the list's resourceVersion, to watch from
   */
  async #list(onObject: ((o: KubernetesObject) => void) | undefined): Promise<string> {
    const { kubeConfig, resource, namespace, labelSelector } = this.#options;
    const listed = new Set<string>();
    const list = await listMetadata(kubeConfig, resource, {
      namespace,
      labelSelector,
      ...(onObject ? { onObject } : {}),
      onPage: (items) => {
        if (this.#stopped()) return;
        for (const item of items) listed.add(this.#upsert(item));
      },
    });
    if (this.#stopped()) return '';
    for (const key of [...this.#cache.keys()]) if (!listed.has(key)) this.#removeKey(key);
    this.#setSynced();
    this.#activity();
    return list.metadata?.resourceVersion ?? '';
  }

  /** One watch from `resourceVersion` until it ends; resolves with its error and the last resourceVersion seen. */
  #watch(
    watch: MetadataWatch,
    path: string,
    resourceVersion: string,
    labelSelector: string | undefined,
  ): Promise<{ err: unknown; resourceVersion: string }> {
    return new Promise((resolve) => {
      let last = resourceVersion;
      let gone = false;
      const done = (err: unknown) => {
        this.#endRun = undefined;
        resolve({ err: err ?? (gone ? GONE : undefined), resourceVersion: last });
      };
      this.#endRun = () => done(undefined);
      watch
        .watch(
          path,
          { resourceVersion, ...(labelSelector ? { labelSelector } : {}) },
          (phase, obj: KubernetesObject & { code?: number }) => {
            if (this.#stopped()) return;
            if (phase === 'ERROR') {
              // A Status; 410: the resourceVersion is too old, the server closes the watch next.
              if (obj?.code === 410) gone = true;
              return;
            }
            if (phase === 'ADDED' || phase === 'MODIFIED') this.#upsert(obj);
            else if (phase === 'DELETED') this.#remove(obj);
            last = obj?.metadata?.resourceVersion || last;
          },
          (err) => done(err),
        )
        .then(
          (request) => {
            if (this.#stopped()) request.abort();
            else this.#request = request;
          },
          (err: unknown) => done(err),
        );
    });
  }

  #object(object: KubernetesObject): void {
    try {
      this.#options.onObject?.(object);
    } catch (err) {
      this.#log.error({ err }, 'whole-object handler failed');
    }
    const reads = this.#options.readsStatus;
    if (!reads) return;
    const key = keyString({ namespace: object.metadata?.namespace ?? '', name: object.metadata?.name ?? '' });
    try {
      this.#pendingReads.set(key, JSON.stringify(reads(object)) ?? 'undefined');
    } catch (err) {
      this.#pendingReads.delete(key);
      this.#log.error({ err }, "readsStatus threw: the object's events pass every status predicate");
    }
  }

  #emit(event: WatchEvent): void {
    try {
      this.#options.onEvent(event);
    } catch (err) {
      this.#log.error({ err }, 'event handler failed');
    }
  }

  /** Caches `obj` ({@link cacheEntryOf}) and emits ADDED, or MODIFIED unless it is the cached state. @returns its key */
  #upsert(obj: KubernetesObject): string {
    const key = keyString({ namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' });
    const read = this.#pendingReads.get(key);
    this.#pendingReads.delete(key);
    const old = this.#cache.get(key);
    const entry = cacheEntryOf(obj);
    if (old === entry) return key; // same resourceVersion: a repeat
    this.#cache.set(key, entry);
    const oldRead = this.#statusReads.get(key);
    if (read === undefined) this.#statusReads.delete(key);
    else {
      this.#statusReads.set(key, read);
      recordStatusRead(obj, read);
    }
    if (old === undefined) this.#emit({ type: 'ADDED', object: obj });
    else {
      const oldObject = objectOfCacheEntry(key, old, this.resource);
      if (oldRead !== undefined) recordStatusRead(oldObject, oldRead);
      this.#emit({ type: 'MODIFIED', object: obj, oldObject });
    }
    return key;
  }

  /** A DELETED watch event: forgets the key; the event carries the server's last state of the object. */
  #remove(obj: KubernetesObject): void {
    const key = keyString({ namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' });
    if (!this.#cache.delete(key)) return;
    this.#statusReads.delete(key);
    this.#emit({ type: 'DELETED', object: obj });
  }

  /** A key gone from a fresh LIST (or a CRD deleted): the tombstone is the cached state (client-go's `DeletedFinalStateUnknown`). */
  #removeKey(key: string): void {
    const cached = this.#cache.get(key);
    if (cached === undefined) return;
    this.#cache.delete(key);
    this.#statusReads.delete(key);
    this.#emit({ type: 'DELETED', object: objectOfCacheEntry(key, cached, this.resource) });
  }
}

/** `Retry-After` in seconds carried by an error of a LIST ({@link ApiStatusError}), if any. */
function retryAfterSecondsOf(err: unknown): number | undefined {
  return err instanceof ApiStatusError ? err.retryAfterSeconds : undefined;
}
