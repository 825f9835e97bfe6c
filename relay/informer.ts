/**
 * One metadata-only list+watch that never gives up: client-node's informer (`ListWatch`, what
 * `makeInformer` builds) with a {@link MetadataWatch}, restarted with a fresh LIST after any error
 * it does not handle itself, and held back until its resource is served (a CRD created later).
 *
 * client-node's informer re-lists on 410 Gone and re-watches after a clean server-side close, but
 * on any other error (a failed LIST, a non-200 watch answer, a broken stream) it reports `error`
 * and stops for good. Here that starts a new informer after an exponential, capped, jittered
 * backoff; its LIST is diffed against the relay's cache, so objects created, changed or deleted
 * while nothing watched come out as ADDED / MODIFIED / DELETED (client-go's reflector `Replace`,
 * with the cached object as the tombstone).
 *
 * A watch that stays open but silent — no event and no BOOKMARK for `watchSilenceTimeoutMs` — is
 * aborted and watched again from the last resourceVersion (client-node's inactivity timeout, set
 * here): the classic "replication silently stopped" cannot last longer than that. A 429 answer to
 * a LIST waits at least its `Retry-After` before the next attempt.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type KubeConfig, type KubernetesObject, ListWatch } from '@kubernetes/client-node';
import type { ResourceType, WatchEvent } from '../functions/contract/controller.ts';
import { type Key, keyString } from '../functions/contract/key.ts';
import type { Logger } from '../functions/log.ts';
import { Backoff, type BackoffOptions } from './backoff.ts';
import {
  ApiStatusError,
  collectionPath,
  isServed,
  listMetadata,
  MetadataWatch,
  resourceName,
} from './metadata.ts';

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
  readonly #cache = new Map<string, KubernetesObject>();
  readonly #abort = new AbortController();
  #state: InformerState = 'idle';
  #synced = false;
  #markSynced!: () => void;
  readonly #syncedPromise = new Promise<void>((resolve) => {
    this.#markSynced = resolve;
  });
  #current: ListWatch<KubernetesObject> | undefined;
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

  /** The cached objects (metadata only). */
  list(): KubernetesObject[] {
    return [...this.#cache.values()];
  }

  /** The cached object of `key` (metadata only), or `undefined`. */
  get(key: Key): KubernetesObject | undefined {
    return this.#cache.get(keyString(key));
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
        this.#replace([]); // a deleted CRD took its objects with it: their keys get tombstones
        this.#setSynced();
        await this.#pause(this.#options.discoveryIntervalMs ?? 5_000);
        continue;
      }
      if (waitingLogged) {
        this.#log.info('resource served now: starting list+watch');
        this.#notWatchingSince = Date.now(); // it had nothing to watch until now
      }
      waitingLogged = false;
      this.#state = 'running';
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

  /** Runs one client-node informer until it reports an error (resolved with it) or stop() (undefined). */
  #runInformer(): Promise<unknown> {
    const { kubeConfig, resource, namespace, labelSelector } = this.#options;
    return new Promise<unknown>((resolve) => {
      let watchOpenedAt = 0;
      const informer: ListWatch<KubernetesObject> = new ListWatch(
        collectionPath(resource, namespace),
        new MetadataWatch(kubeConfig, resource, {
          silenceTimeoutMs: this.#options.watchSilenceTimeoutMs ?? DEFAULT_WATCH_SILENCE_TIMEOUT_MS,
          ...(this.#options.onObject ? { onObject: (o: KubernetesObject) => this.#object(o) } : {}),
          onWholeObject: (kind) => {
            if (this.#warnedWholeObjects) return;
            this.#warnedWholeObjects = true;
            this.#log.warn(
              { kind },
              'API server sent whole objects on a metadata watch: stripped on arrival',
            );
          },
          onActivity: () => {
            if (this.#current === informer) this.#activity();
          },
          onWatching: (watching, err) => {
            if (this.#current !== informer) return;
            if (watching) watchOpenedAt = Date.now();
            else if (!err && Date.now() - watchOpenedAt >= HEALTHY_WATCH_MS) {
              // client-node doubles its re-watch delay after every clean close (1 s … 30 s) and never
              // resets it, so after a few server-side closes each re-watch would wait 30 s. A watch
              // that stayed open a while was healthy: watch again at once, as client-go's reflector.
              (informer as unknown as { reconnectDelayMs: number }).reconnectDelayMs = 0;
            }
            this.#setWatching(watching);
            if ((err as { name?: string } | undefined)?.name === 'TimeoutError') {
              this.#log.warn(
                { silenceTimeoutMs: this.#options.watchSilenceTimeoutMs ?? DEFAULT_WATCH_SILENCE_TIMEOUT_MS },
                'watch silent too long (no event, no bookmark): watching again from the last resourceVersion',
              );
              this.#options.onSilentWatch?.();
            }
          },
        }),
        async () => {
          const list = await listMetadata(kubeConfig, resource, {
            namespace,
            labelSelector,
            ...(this.#options.onObject ? { onObject: (o: KubernetesObject) => this.#object(o) } : {}),
          });
          if (this.#current !== informer) throw new Error('informer stopped');
          this.#replace(list.items);
          this.#setSynced();
          this.#activity();
          return list;
        },
        false,
        labelSelector,
      );
      const end = (err: unknown) => {
        if (this.#current !== informer) return;
        this.#current = undefined;
        this.#endRun = undefined;
        this.#setWatching(false);
        void informer.stop();
        resolve(err);
      };
      const live = () => this.#current === informer;
      informer.on('add', (obj) => live() && this.#upsert(obj));
      informer.on('update', (obj) => live() && this.#upsert(obj));
      informer.on('delete', (obj) => live() && this.#remove(obj, obj));
      informer.on('error', (err) => end(err ?? new Error('informer error')));
      this.#current = informer;
      this.#endRun = end;
      informer.start().catch((err: unknown) => end(err));
    });
  }

  #object(object: KubernetesObject): void {
    try {
      this.#options.onObject?.(object);
    } catch (err) {
      this.#log.error({ err }, 'whole-object handler failed');
    }
  }

  #emit(event: WatchEvent): void {
    try {
      this.#options.onEvent(event);
    } catch (err) {
      this.#log.error({ err }, 'event handler failed');
    }
  }

  #upsert(obj: KubernetesObject): void {
    const key = keyString({ namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' });
    const old = this.#cache.get(key);
    if (old && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) return;
    this.#cache.set(key, obj);
    this.#emit(old ? { type: 'MODIFIED', object: obj, oldObject: old } : { type: 'ADDED', object: obj });
  }

  /** Removes `key`'s object; `tombstone` is the last state seen (the DELETED event's object). */
  #remove(obj: KubernetesObject, tombstone: KubernetesObject): void {
    const key = keyString({ namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' });
    if (!this.#cache.delete(key)) return;
    this.#emit({ type: 'DELETED', object: tombstone });
  }

  /** Makes the cache equal to a fresh LIST, emitting the difference. */
  #replace(items: KubernetesObject[]): void {
    const listed = new Set(
      items.map((o) => keyString({ namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '' })),
    );
    for (const [key, cached] of [...this.#cache]) if (!listed.has(key)) this.#remove(cached, cached);
    for (const item of items) this.#upsert(item);
  }
}

/** `Retry-After` in seconds carried by an error of a LIST ({@link ApiStatusError}), if any. */
function retryAfterSecondsOf(err: unknown): number | undefined {
  return err instanceof ApiStatusError ? err.retryAfterSeconds : undefined;
}
