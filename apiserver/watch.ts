/**
 * Watch streams as kube-apiserver serves them: a chunked `application/json` stream of
 * newline-delimited `{"type","object"}` events in resourceVersion order, synthetic ADDED events for the
 * current state when no resourceVersion is given, selector transitions (an object leaving the selector
 * is DELETED carrying its last matching state, entering it ADDED), BOOKMARKs, `timeoutSeconds`, and
 * `410 Expired` as an ERROR event when the requested resourceVersion is older than the kept history
 * (cacher: newErrWatcher).
 */
import type { ServerResponse } from 'node:http';
import type { Registry } from './registry.ts';
import { groupVersion, type KubeObject, type ResourceType } from './resources.ts';
import { type ApiError, badRequest, tooOldResourceVersion } from './status.ts';
import type { Store, StoreEvent } from './store.ts';

export interface WatchRequest {
  type: ResourceType;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  allowWatchBookmarks: boolean;
  sendInitialEvents?: boolean;
  timeoutSeconds?: number;
  /** Converts an object (at the type's version) to what the client asked for (e.g. PartialObjectMetadata). */
  render(obj: KubeObject): unknown;
  /** Kind/apiVersion of BOOKMARK objects. */
  bookmarkType: { kind: string; apiVersion: string };
}

export interface WatchHubOptions {
  /** Interval between BOOKMARK events, ms; default 60 000 (kube-apiserver: about once a minute). */
  bookmarkIntervalMs?: number;
  /** Timeout of a watch without `timeoutSeconds`, ms; default 1 800 000 (kube-apiserver's minRequestTimeout). */
  defaultTimeoutMs?: number;
}

interface ActiveWatch {
  res: ServerResponse;
  type: ResourceType;
  close(): void;
  /** From now on sends nothing (no event, no bookmark, no timeout close) while the connection stays open. */
  silence(): void;
  onEvent(e: StoreEvent): void;
}

/** Which objects' watch events {@link WatchHub.dropNextEvents} drops. */
export interface WatchEventMatch {
  /** The resource's storage, `<group>/<plural>` (`/<plural>` for core: `apps/deployments`, `/secrets`). */
  storage: string;
  namespace?: string;
  name?: string;
}

/** The open watches of one server. */
export class WatchHub {
  private readonly watches = new Set<ActiveWatch>();
  private readonly store: Store;
  private readonly registry: Registry;
  private readonly options: Required<WatchHubOptions>;
  private readonly unsubscribe: () => void;

  constructor(store: Store, registry: Registry, options: WatchHubOptions = {}) {
    this.store = store;
    this.registry = registry;
    this.options = {
      bookmarkIntervalMs: options.bookmarkIntervalMs ?? 60_000,
      defaultTimeoutMs: options.defaultTimeoutMs ?? 1_800_000,
    };
    this.unsubscribe = store.subscribe((e) => {
      if (this.takeDrop(e)) return;
      for (const w of this.watches) w.onEvent(e);
      // A deleted CRD takes its custom resources' watches with it.
      if (e.type === 'DELETED' && e.storage === 'apiextensions.k8s.io/customresourcedefinitions') {
        for (const w of this.watches) if (w.type.custom?.crdName === e.object.metadata.name) w.close();
      }
    });
  }

  private dropRules: { match: WatchEventMatch; remaining: number }[] = [];

  /**
   * Drops the next `count` changes of the objects `match` names from every open watch: no event is
   * sent for them, while each watch stays open and healthy (its later events and BOOKMARKs are sent
   * as usual) — an event lost between storage and the client, which only a re-list or a resync can
   * find. The change itself is stored; a LIST or GET shows it.
   * @returns a function removing the rule
   */
  dropNextEvents(match: WatchEventMatch, count: number): () => void {
    const rule = { match, remaining: count };
    this.dropRules.push(rule);
    return () => {
      this.dropRules = this.dropRules.filter((r) => r !== rule);
    };
  }

  private takeDrop(e: StoreEvent): boolean {
    const { namespace, name } = e.object.metadata;
    const rule = this.dropRules.find(
      (r) =>
        r.remaining > 0 &&
        e.storage === r.match.storage &&
        (r.match.namespace === undefined || r.match.namespace === (namespace ?? '')) &&
        (r.match.name === undefined || r.match.name === name),
    );
    if (!rule) return false;
    rule.remaining--;
    if (rule.remaining <= 0) this.dropRules = this.dropRules.filter((r) => r !== rule);
    return true;
  }

  /** Number of open watches. */
  get size(): number {
    return this.watches.size;
  }

  /** Ends every open watch (the stream closes cleanly, as when kube-apiserver drops watches); returns how many. */
  dropAll(mode: 'close' | 'reset' = 'close'): number {
    const all = [...this.watches];
    for (const w of all) {
      if (mode === 'reset') w.res.socket?.destroy();
      w.close();
    }
    return all.length;
  }

  /**
   * Makes every open watch silent: its connection stays open but it sends nothing more — no event,
   * no BOOKMARK, not even the close at its timeout — as a watch stuck in a broken proxy or watch
   * cache. Only the client can notice (an inactivity timeout) and watch again. New watches are normal.
   * @returns how many
   */
  silenceAll(): number {
    for (const w of this.watches) w.silence();
    return this.watches.size;
  }

  stop(): void {
    this.dropAll();
    this.unsubscribe();
  }

  /**
   * Serves a watch on `res`. Validation errors (bad selectors) throw before the stream starts.
   * @throws ApiError 400 for bad selectors or resourceVersion
   */
  serve(req: WatchRequest, res: ServerResponse): void {
    const { type: t } = req;
    const match = this.registry.matcher(t, req.labelSelector, req.fieldSelector);
    const rvText = req.resourceVersion ?? '';
    if (rvText !== '' && !/^\d+$/.test(rvText)) throw badRequest(`invalid resource version: ${rvText}`);
    const inNamespace = (o: KubeObject) =>
      !t.namespaced || !req.namespace || o.metadata.namespace === req.namespace;
    const visible = (o: KubeObject | undefined) => o !== undefined && inNamespace(o) && match(o);

    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-cache, private',
      'Transfer-Encoding': 'chunked',
    });
    res.flushHeaders();

    let closed = false;
    let silent = false;
    let lastRv = this.store.currentRv();
    const send = (type: string, object: unknown) => {
      if (closed || silent) return;
      res.write(`${JSON.stringify({ type, object })}\n`);
    };
    const sendObject = (type: string, stored: KubeObject) => {
      send(type, req.render(this.registry.toVersion(t, stored)));
    };
    const bookmark = (annotations?: Record<string, string>) => {
      if (!req.allowWatchBookmarks) return;
      // Every event up to the store's current resourceVersion has been delivered (synchronously).
      lastRv = Math.max(lastRv, this.store.currentRv());
      const metadata: Record<string, unknown> = { resourceVersion: String(lastRv), creationTimestamp: null };
      if (annotations) metadata.annotations = annotations;
      send('BOOKMARK', { ...req.bookmarkType, metadata });
    };
    const timers: NodeJS.Timeout[] = [];
    const watch: ActiveWatch = {
      res,
      type: t,
      close: () => {
        if (closed) return;
        closed = true;
        for (const tm of timers) clearTimeout(tm);
        this.watches.delete(watch);
        if (!res.writableEnded) res.end();
      },
      silence: () => {
        silent = true;
        for (const tm of timers) clearTimeout(tm);
      },
      onEvent: (e) => {
        if (e.storage !== t.storage || closed) return;
        lastRv = e.rv;
        const now = visible(e.object);
        const before = e.type !== 'ADDED' && visible(e.prev);
        if (e.type === 'ADDED') {
          if (now) sendObject('ADDED', e.object);
        } else if (e.type === 'DELETED') {
          if (before) sendObject('DELETED', e.object);
        } else if (now && before) sendObject('MODIFIED', e.object);
        else if (now) sendObject('ADDED', e.object);
        // Leaving the selector: DELETED with the last state that matched, at the event's
        // resourceVersion (apiserver cacheWatcher.convertToWatchEvent; etcd3 watcher alike).
        else if (before && e.prev)
          sendObject('DELETED', {
            ...e.prev,
            metadata: { ...e.prev.metadata, resourceVersion: String(e.rv) },
          });
      },
    };
    res.on('close', () => watch.close());

    if (rvText === '' || rvText === '0' || req.sendInitialEvents) {
      const items: KubeObject[] = [];
      this.store.walk(t.storage, { namespace: t.namespaced ? req.namespace : undefined }, (o) => {
        if (visible(o as KubeObject)) items.push(structuredClone(o) as KubeObject);
      });
      for (const o of items) sendObject('ADDED', o);
      lastRv = this.store.currentRv();
      if (req.sendInitialEvents) bookmark({ 'k8s.io/initial-events-end': 'true' });
    } else {
      const rv = Number(rvText);
      const events = this.store.eventsSince(t.storage, rv);
      if (!events) {
        const err: ApiError = tooOldResourceVersion(rv, this.store.oldestAvailable(t.storage));
        send('ERROR', err.status);
        closed = true;
        res.end();
        return;
      }
      for (const e of events) watch.onEvent(e);
      lastRv = Math.max(lastRv, rv);
    }
    this.watches.add(watch);

    if (req.allowWatchBookmarks) {
      const tick = () => {
        if (silent) return;
        bookmark();
        timers[0] = setTimeout(tick, this.options.bookmarkIntervalMs);
      };
      timers[0] = setTimeout(tick, this.options.bookmarkIntervalMs);
    }
    const timeoutMs =
      req.timeoutSeconds !== undefined ? req.timeoutSeconds * 1000 : this.options.defaultTimeoutMs;
    timers[1] = setTimeout(() => {
      bookmark();
      watch.close();
    }, timeoutMs);
  }
}

/** The BOOKMARK object type for a resource served as-is. */
export function bookmarkTypeOf(t: ResourceType): { kind: string; apiVersion: string } {
  return { kind: t.kind, apiVersion: groupVersion(t) };
}
