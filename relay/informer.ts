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
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type KubeConfig, type KubernetesObject, ListWatch } from '@kubernetes/client-node';
import type { Key, ResourceType, WatchEvent } from '../functions/controllers/types.ts';
import type { Logger } from '../functions/log.ts';
import { keyString } from '../functions/message.ts';
import { Backoff, type BackoffOptions } from './backoff.ts';
import { collectionPath, isServed, listMetadata, MetadataWatch, resourceName } from './metadata.ts';

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
  /** Called before each restart, with the error that ended the previous run. */
  onRestart?(err: unknown): void;
  /** Restart backoff; default 500 ms doubling up to 30 s, 20 % jitter. */
  backoff?: BackoffOptions;
  /** A run that lasted at least this long (ms) restarts from the initial backoff again; default 60 000. */
  resetBackoffAfterMs?: number;
  /** While the resource is not served (CRD missing), how often discovery is asked again, in ms; default 5 000. */
  discoveryIntervalMs?: number;
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
      if (waitingLogged) this.#log.info('resource served now: starting list+watch');
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
    const delayMs = this.#backoff.next();
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
      const informer: ListWatch<KubernetesObject> = new ListWatch(
        collectionPath(resource, namespace),
        new MetadataWatch(kubeConfig, resource, (kind) => {
          if (this.#warnedWholeObjects) return;
          this.#warnedWholeObjects = true;
          this.#log.warn({ kind }, 'API server sent whole objects on a metadata watch: stripped on arrival');
        }),
        async () => {
          const list = await listMetadata(kubeConfig, resource, { namespace, labelSelector });
          if (this.#current !== informer) throw new Error('informer stopped');
          this.#replace(list.items);
          this.#setSynced();
          return list;
        },
        false,
        labelSelector,
      );
      const end = (err: unknown) => {
        if (this.#current !== informer) return;
        this.#current = undefined;
        this.#endRun = undefined;
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
