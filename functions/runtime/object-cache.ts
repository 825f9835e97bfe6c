/**
 * The in-process mode's reads from a cache (docs/architecture.md decision 56), as
 * controller-runtime's client reads from its informers: the relay's informers of the kinds the
 * controllers read whole ({@link Controller.cachedReads}: the primary, and children kept in the
 * primary's namespace) list and watch whole objects and hand each one to an {@link ObjectStore};
 * the kit's GET of the primary and LIST of its children are answered from those stores
 * ({@link ReconcileContext.cache}) instead of the API server.
 *
 * Read-your-writes: every write a reconcile makes of a cached kind is recorded (the
 * resourceVersion it answered; for a delete, the uid deleted) until the informer has delivered it.
 * Until then a read that could see the object (its GET; a LIST whose selector matches the labels
 * it had or has) is not answered, and the kit reads live: the next reconcile of a key never acts
 * on a cache older than its own last write (a create is seen, no second create; a status written
 * is seen, no second status patch). A write the informer has not delivered after
 * {@link PENDING_WRITE_TTL_MS} is forgotten: reads are then the informer's, as controller-runtime's
 * always are, which a stale read tolerates (children are applied, a create of a name taken is read
 * live). The informer shows a write when it holds the object at that resourceVersion or a later one
 * (core/k8s/resource-version.ts, as apimachinery's `CompareResourceVersion`: another writer, such
 * as kube-controller-manager updating a Deployment's status, may have followed it before a relist);
 * resourceVersions that cannot be ordered count only when equal.
 *
 * Never cached: core Secrets (their reads stay live: no Secret data is held in memory), a kind no
 * controller reads whole, an informer with a label selector (it does not hold every object a read
 * may ask for), and anything before the informer's first LIST.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import rfdc from 'rfdc';
import type { Controller, ObjectCache, ResourceType } from '../../core/contract/controller.ts';
import { isAtOrAfter } from '../../core/k8s/resource-version.ts';

/**
 * A deep copy of a JSON object (what an informer holds), as controller-runtime's cache reader
 * deep-copies what it answers, so that a reconcile changing its object never changes the cache.
 * rfdc, not `structuredClone`: a Deployment with its managedFields (≈ 7 kB) copies in ≈ 5–10 µs
 * instead of ≈ 40–130 µs on this project's 2-core machine.
 */
const deepCopy = rfdc();

/** ms a write is awaited in the informer before reads of it are the informer's again. */
export const PENDING_WRITE_TTL_MS = 30_000;

/** Where the relay's informer of one plan hands whole objects (relay/relay.ts `RelayOptions.objectStores`). */
export interface ObjectSink {
  /** Whole `object`, before the event it causes is handled. */
  put(object: KubernetesObject): void;
  /** The object of `key` (`namespace/name`) is gone (a DELETED event, or absent from a relist). */
  remove(key: string): void;
  /** The informer's first LIST is in. */
  synced(): void;
}

/** What informer a sink is asked for. */
export interface PlanScope {
  resource: ResourceType;
  namespace?: string;
  labelSelector?: string;
}

const kindOf = (r: Pick<ResourceType, 'group' | 'plural'>) => `${r.plural}.${r.group}`;
const isSecrets = (r: ResourceType) => r.group === '' && r.plural === 'secrets';

/** One term of an equality-based label selector. */
type Term = { op: 'eq' | 'ne'; key: string; value: string } | { op: 'exists' | 'absent'; key: string };

/**
 * An equality-based label selector (`k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated).
 * @returns its terms, or `undefined` for a set-based one (`in`, `notin`), which is answered live
 */
export function parseSelector(selector: string | undefined): Term[] | undefined {
  if (!selector?.trim()) return [];
  const terms: Term[] = [];
  for (const raw of selector.split(',')) {
    const t = raw.trim();
    if (!t || /[()\s]/.test(t)) return undefined;
    const ne = t.indexOf('!=');
    if (ne > 0) terms.push({ op: 'ne', key: t.slice(0, ne), value: t.slice(ne + 2) });
    else if (t.startsWith('!')) terms.push({ op: 'absent', key: t.slice(1) });
    else if (t.includes('=')) {
      const i = t.indexOf('=');
      terms.push({ op: 'eq', key: t.slice(0, i), value: t.slice(t.startsWith('=', i + 1) ? i + 2 : i + 1) });
    } else terms.push({ op: 'exists', key: t });
  }
  return terms;
}

/** Whether `labels` satisfy every term. */
export function matches(terms: readonly Term[], labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  return terms.every((t) => {
    const has = Object.hasOwn(l, t.key);
    if (t.op === 'exists') return has;
    if (t.op === 'absent') return !has;
    if (t.op === 'eq') return has && l[t.key] === t.value;
    if (t.op === 'ne') return !has || l[t.key] !== t.value;
    return false;
  });
}

/** `key=value` of each label of `object`. */
function labelPairs(object: KubernetesObject): string[] {
  const labels = object.metadata?.labels;
  return labels ? Object.entries(labels).map(([k, v]) => `${k}=${v}`) : [];
}

/** The whole objects of one informer, by namespace then name. */
export class ObjectStore implements ObjectSink {
  readonly #byNamespace = new Map<string, Map<string, KubernetesObject>>();
  /** namespace → `key=value` of a label → names of the objects labelled so. */
  readonly #byLabel = new Map<string, Map<string, Set<string>>>();
  #synced = false;
  readonly resource: ResourceType;
  /** The informer's namespace; undefined: every namespace. */
  readonly namespace: string | undefined;
  readonly #onPut: (store: ObjectStore, object: KubernetesObject) => void;
  /** @param onPut called after each {@link put} */
  constructor(
    resource: ResourceType,
    namespace: string | undefined,
    onPut: (store: ObjectStore, object: KubernetesObject) => void,
  ) {
    this.resource = resource;
    this.namespace = namespace;
    this.#onPut = onPut;
  }

  put(object: KubernetesObject): void {
    const ns = object.metadata?.namespace ?? '';
    const name = object.metadata?.name ?? '';
    const names = this.#byNamespace.get(ns) ?? new Map<string, KubernetesObject>();
    this.#byNamespace.set(ns, names);
    this.#unindex(ns, name, names.get(name));
    names.set(name, object);
    for (const pair of labelPairs(object)) {
      const byPair = this.#byLabel.get(ns) ?? new Map<string, Set<string>>();
      this.#byLabel.set(ns, byPair);
      const named = byPair.get(pair) ?? new Set<string>();
      byPair.set(pair, named);
      named.add(name);
    }
    this.#onPut(this, object);
  }

  remove(key: string): void {
    const slash = key.indexOf('/');
    const ns = slash < 0 ? '' : key.slice(0, slash);
    const name = slash < 0 ? key : key.slice(slash + 1);
    const names = this.#byNamespace.get(ns);
    this.#unindex(ns, name, names?.get(name));
    names?.delete(name);
    if (names?.size === 0) this.#byNamespace.delete(ns);
  }

  #unindex(ns: string, name: string, object: KubernetesObject | undefined): void {
    if (!object) return;
    const byPair = this.#byLabel.get(ns);
    if (!byPair) return;
    for (const pair of labelPairs(object)) {
      const named = byPair.get(pair);
      named?.delete(name);
      if (named?.size === 0) byPair.delete(pair);
    }
    if (byPair.size === 0) this.#byLabel.delete(ns);
  }

  synced(): void {
    this.#synced = true;
  }

  covers(namespace: string): boolean {
    return this.#synced && (this.namespace === undefined || this.namespace === namespace);
  }

  get(namespace: string, name: string): KubernetesObject | undefined {
    return this.#byNamespace.get(namespace)?.get(name);
  }

  in(namespace: string): Iterable<KubernetesObject> {
    return this.#byNamespace.get(namespace)?.values() ?? [];
  }

  /**
   * The objects of `namespace` that may match `terms`: those labelled with the `key=value` of its
   * most selective equality term (the one fewest objects carry: an index kept on every put and
   * remove, as client-go's indexers; a controller's children share its controller label, and only
   * one owner's carry its UID), or every object of the namespace when it has no equality term. The
   * caller still checks every term.
   */
  candidates(namespace: string, terms: readonly Term[]): Iterable<KubernetesObject> {
    let names: Set<string> | undefined;
    const byPair = this.#byLabel.get(namespace);
    for (const t of terms) {
      if (t.op !== 'eq') continue;
      const named = byPair?.get(`${t.key}=${t.value}`);
      if (!named) return [];
      if (!names || named.size < names.size) names = named;
    }
    if (!names) return this.in(namespace);
    const objects = this.#byNamespace.get(namespace);
    const out: KubernetesObject[] = [];
    for (const name of names) {
      const o = objects?.get(name);
      if (o) out.push(o);
    }
    return out;
  }
}

/** A write not yet delivered by the informer. */
interface Pending {
  /** The resourceVersion the write answered; absent for a delete. */
  resourceVersion?: string;
  /** The uid deleted (a delete). */
  deletedUid?: string;
  /** The controller whose reconcile wrote it, when known ({@link InformerObjectCache.forController}). */
  writer?: string;
  /** The labels the object had in the cache and has now: a LIST matching either waits for it. */
  labels: (Record<string, string> | undefined)[];
  at: number;
}

/** Echoes remembered at most, the oldest forgotten first (an echo is looked up as its event is handled, at once). */
const ECHOES_REMEMBERED = 10_000;

/**
 * The {@link ObjectCache} of the in-process mode over the relay's informers (see the module
 * comment). Made from the controllers' {@link Controller.cachedReads}; the relay asks it for a sink
 * per informer ({@link sinkFor}).
 */
export class InformerObjectCache implements ObjectCache {
  readonly #kinds: Set<string>;
  readonly #stores = new Map<string, ObjectStore[]>();
  /** `kind|namespace` → name → the write awaited. */
  readonly #pending = new Map<string, Map<string, Pending>>();
  /** `kind|namespace|name` → the version a controller's write answered, delivered, and that controller. */
  readonly #echoes = new Map<string, { resourceVersion: string; writer: string }>();
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(controllers: readonly Controller[], options: { ttlMs?: number; now?: () => number } = {}) {
    this.#kinds = new Set(
      controllers
        .flatMap((c) => c.cachedReads ?? [])
        .filter((r) => !isSecrets(r))
        .map(kindOf),
    );
    this.#ttlMs = options.ttlMs ?? PENDING_WRITE_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Whether reads of `resource` may be cached at all. */
  caches(resource: ResourceType): boolean {
    return this.#kinds.has(kindOf(resource));
  }

  /** A store for the informer of `plan`, or `undefined` when it keeps no whole objects (see the module comment). */
  sinkFor(plan: PlanScope): ObjectSink | undefined {
    if (plan.labelSelector || !this.caches(plan.resource)) return undefined;
    const store = new ObjectStore(plan.resource, plan.namespace, (s, o) => this.#delivered(s, o));
    const kind = kindOf(plan.resource);
    this.#stores.set(kind, [...(this.#stores.get(kind) ?? []), store]);
    return store;
  }

  /** Writes awaited in the informers (for tests and debugging). */
  get pendingWrites(): number {
    let n = 0;
    for (const names of this.#pending.values()) n += names.size;
    return n;
  }

  #store(resource: ResourceType, namespace: string): ObjectStore | undefined {
    return this.#stores.get(kindOf(resource))?.find((s) => s.covers(namespace));
  }

  /** The informer delivered `object`: a write it answers is awaited no more. */
  #delivered(store: ObjectStore, object: KubernetesObject): void {
    const at = `${kindOf(store.resource)}|${object.metadata?.namespace ?? ''}`;
    const names = this.#pending.get(at);
    const name = object.metadata?.name ?? '';
    const p = names?.get(name);
    if (!(p && this.#seen(p, object))) return;
    // The very version the write answered: the echo of that write.
    const resourceVersion = object.metadata?.resourceVersion;
    if (p.writer !== undefined && resourceVersion !== undefined && p.resourceVersion === resourceVersion) {
      const id = `${at}|${name}`;
      this.#echoes.delete(id);
      this.#echoes.set(id, { resourceVersion, writer: p.writer });
      if (this.#echoes.size > ECHOES_REMEMBERED) {
        const oldest = this.#echoes.keys().next().value;
        if (oldest !== undefined) this.#echoes.delete(oldest);
      }
    }
    this.#forget(at, name);
  }

  /**
   * The controller whose own write `object` (of `resource`, an informer's object whose event is being
   * handled, after its store has it) is the echo of: exactly the version that controller's write
   * answered, which its reconcile already acted on, so the event need not enqueue that controller
   * again (relay/relay.ts `echoOf`). Any other change comes as a later version, with an event of its
   * own. `undefined` for anything else. Each echo is answered once.
   */
  echoOf(resource: ResourceType, object: KubernetesObject): string | undefined {
    const id = `${kindOf(resource)}|${object.metadata?.namespace ?? ''}|${object.metadata?.name ?? ''}`;
    const echo = this.#echoes.get(id);
    if (!echo) return undefined;
    this.#echoes.delete(id);
    return echo.resourceVersion === object.metadata?.resourceVersion ? echo.writer : undefined;
  }

  /**
   * The cache as one controller's reconciles use it: its writes are recorded as that controller's,
   * so that the informer's event of exactly the version a write answered is known as its echo
   * ({@link echoOf}).
   */
  forController(controller: string): ObjectCache {
    return {
      get: (resource, namespace, name) => this.get(resource, namespace, name),
      list: (resource, namespace, labelSelector) => this.list(resource, namespace, labelSelector),
      wrote: (resource, object) => this.#wrote(resource, object, controller),
      deleted: (resource, object) => this.deleted(resource, object),
    };
  }

  /** Whether `cached` (the informer's object of that name, or none) shows the write `p`. */
  #seen(p: Pending, cached: KubernetesObject | undefined): boolean {
    if (p.deletedUid !== undefined)
      return cached?.metadata?.uid !== p.deletedUid || Boolean(cached?.metadata?.deletionTimestamp);
    return isAtOrAfter(cached?.metadata?.resourceVersion, p.resourceVersion ?? '');
  }

  #forget(at: string, name: string): void {
    const names = this.#pending.get(at);
    names?.delete(name);
    if (names?.size === 0) this.#pending.delete(at);
  }

  /** Whether the write awaited for `name` is still not in `store` (forgotten when it is, or expired). */
  #awaiting(at: string, name: string, p: Pending, store: ObjectStore, namespace: string): boolean {
    if (this.#now() - p.at > this.#ttlMs || this.#seen(p, store.get(namespace, name))) {
      this.#forget(at, name);
      return false;
    }
    return true;
  }

  get(resource: ResourceType, namespace: string | undefined, name: string) {
    const ns = namespace ?? '';
    const store = this.#store(resource, ns);
    if (!store) return undefined;
    const at = `${kindOf(resource)}|${ns}`;
    const p = this.#pending.get(at)?.get(name);
    if (p && this.#awaiting(at, name, p, store, ns)) return undefined;
    const object = store.get(ns, name);
    return { object: object && deepCopy(object) };
  }

  list(resource: ResourceType, namespace: string, labelSelector?: string) {
    // `''` of a namespaced kind is every namespace (a cluster-scoped owner's children): read live.
    if (resource.namespaced && namespace === '') return undefined;
    const terms = parseSelector(labelSelector);
    const store = terms && this.#store(resource, namespace);
    if (!(terms && store)) return undefined;
    const at = `${kindOf(resource)}|${namespace}`;
    for (const [name, p] of this.#pending.get(at) ?? [])
      if (p.labels.some((l) => matches(terms, l)) && this.#awaiting(at, name, p, store, namespace))
        return undefined;
    const out: KubernetesObject[] = [];
    for (const o of store.candidates(namespace, terms))
      if (matches(terms, o.metadata?.labels)) out.push(deepCopy(o));
    return out;
  }

  #await(resource: ResourceType, object: KubernetesObject, p: Omit<Pending, 'labels' | 'at'>): void {
    if (!this.caches(resource)) return;
    const ns = object.metadata?.namespace ?? '';
    const name = object.metadata?.name ?? '';
    const stores = (this.#stores.get(kindOf(resource)) ?? []).filter((s) => s.covers(ns));
    const at = `${kindOf(resource)}|${ns}`;
    const pending: Pending = { ...p, labels: [object.metadata?.labels], at: this.#now() };
    // Seen already (the watch event came before the write's answer): nothing to await.
    if (stores.every((s) => this.#seen(pending, s.get(ns, name)))) {
      this.#forget(at, name);
      return;
    }
    for (const s of stores) pending.labels.push(s.get(ns, name)?.metadata?.labels);
    const before = this.#pending.get(at)?.get(name);
    if (before) pending.labels.push(...before.labels);
    const names = this.#pending.get(at) ?? new Map<string, Pending>();
    this.#pending.set(at, names);
    names.set(name, pending);
  }

  wrote(resource: ResourceType, object: KubernetesObject): void {
    this.#wrote(resource, object, undefined);
  }

  #wrote(resource: ResourceType, object: KubernetesObject, writer: string | undefined): void {
    const resourceVersion = object.metadata?.resourceVersion;
    if (resourceVersion) this.#await(resource, object, { resourceVersion, ...(writer ? { writer } : {}) });
  }

  deleted(resource: ResourceType, object: KubernetesObject): void {
    const uid = object.metadata?.uid;
    if (uid) this.#await(resource, object, { deletedUid: uid });
  }
}
