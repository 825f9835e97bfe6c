/**
 * The controller module contract (docs/architecture.md "Contracts"): what a controller declares so that the
 * relay knows what to watch, `resync` knows what to enumerate and `reconcile` knows what to run.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type * as z from 'zod';
import type { Key, MappedKey } from './key.ts';

/** A Kubernetes resource type: the group/version/resource triple plus its kind and scope. `group` is `""` for core. */
export interface ResourceType<T extends KubernetesObject = KubernetesObject> {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /**
   * `false` when the type has no `status` subresource (Secrets, ConfigMaps): the kit then writes no
   * status or conditions for such a primary. Default `true` (custom resources, Deployments, Pods).
   */
  statusSubresource?: boolean;
  /**
   * Never set: the type of the resource's objects (a `@kubernetes/client-node` model such as
   * `V1ResourceQuota` for the kit's built-in resources), so that the kit's reads of it are typed.
   */
  readonly objectType?: T;
}

/** A watch event as the relay sees it. For `DELETED`, `object` is the last known state (the tombstone). */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KubernetesObject;
  /** The previous state of the object in the relay's cache, for `MODIFIED` events. */
  oldObject?: KubernetesObject;
}

/** What a {@link Watch.map} may read besides the event: the relay's caches, never the API server. */
export interface MapContext {
  /**
   * The id of the cluster the relay watches (`RELAY_CLUSTER`, `default` in a single-cluster
   * deployment): the cluster of every key the map returns without its own `cluster`. Optional:
   * absent where no relay runs (a map called by a test).
   */
  cluster?: string;
  /** Every primary key currently in the relay's cache of the controller's primary resource. */
  primaryKeys(): Key[];
  /**
   * The cached metadata of the object `key` of a resource this same controller watches (by group and
   * kind), or `undefined` when not cached (or not watched). Lets a map follow controller references
   * through intermediate objects (Pod → ReplicaSet → Deployment), as the relay's metadata allows.
   * Optional: absent where no cache exists.
   */
  get?(resource: Pick<ResourceType, 'group' | 'kind'>, key: Key): KubernetesObject | undefined;
  /**
   * The primaries whose index `index` (one of the controller's {@link Controller.indexes}) has
   * `value`, from the relay's spec indexes (controller-runtime's field indexer). Optional: absent
   * where no index is kept.
   */
  byIndex?(index: string, value: string): Key[];
}

/**
 * One list+watch the relay runs for a controller, and how its events map to primary keys
 * (controller-runtime's `EnqueueRequestsFromMapFunc`).
 */
export interface Watch {
  resource: ResourceType;
  /** Restrict list+watch to one namespace; omitted: all namespaces. */
  namespace?: string;
  /** Kubernetes label selector applied server-side (e.g. `levelset.dev/replica-of`). */
  labelSelector?: string;
  /**
   * Drops events before the map (controller-runtime's `WithPredicates`): `false` enqueues nothing.
   * Pure and cheap, like the map; counted in the relay's filtered events.
   */
  predicate?(event: WatchEvent): boolean;
  /**
   * What the controller's reconcile reads of an object's `status` (a Deployment's
   * `availableReplicas`), for a secondary watch (a child or another resource): the relay then lists
   * and watches whole objects of this resource, keeps the JSON of this value beside the cached
   * metadata (never the body), and drops a `MODIFIED` event that changes neither the generation,
   * the significant metadata (watch-predicates.ts `SIGNIFICANT_METADATA`, where
   * kube-controller-manager's rollout annotations, `STATUS_ANNOTATIONS`, count as status) nor this
   * value (`statusEventPasses`): status updates that change nothing the reconcile reads. Pure and
   * cheap; one that throws lets every event pass. Omitted: every event of the watch passes.
   */
  readsStatus?(object: KubernetesObject): unknown;
  /**
   * Maps an event to the primary keys it affects; `[]` drops it. Must be pure and cheap. A key is in
   * the relay's own cluster unless it names another (`cluster`, {@link MappedKey}): a child in
   * another cluster maps back to its owner's key in the owner's cluster.
   */
  map(event: WatchEvent, ctx: MapContext): MappedKey[];
}

/** A Kubernetes API verb, as RBAC spells it. */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

/**
 * One RBAC rule a controller's reconcile needs, in Kubernetes' own shape (rbac.authorization.k8s.io/v1
 * `PolicyRule`; `""` is the core group). Validated by `parsePolicyRules` (functions/kit/rbac.ts).
 */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: Verb[];
}

/** The type of a Kubernetes Event: `Normal` or `Warning`. */
export type EventType = 'Normal' | 'Warning';

/**
 * Records Kubernetes Events about the objects a controller reconciles (client-go's `EventRecorder`);
 * implemented by core/k8s/events.ts. A failed write is logged and swallowed: an Event is never
 * worth a retry.
 */
export interface EventRecorder {
  /**
   * @param object the regarding object (needs apiVersion, kind, metadata.name/namespace/uid)
   * @param reason UpperCamelCase, e.g. `Synced`, `ErrResourceExists`
   * @param message human-readable; never include Secret data
   */
  record(object: KubernetesObject, type: EventType, reason: string, message: string): Promise<void>;
}

/**
 * The clusters one deployment of the functions serves (functions/runtime/clusters.ts, `LEVELSET_CLUSTERS`),
 * as a reconcile may reach them: for children in other clusters (the kit's `acrossClusters`
 * kinds).
 */
export interface ClusterDirectory {
  /** Every cluster id, the reconcile's own included, in configuration order. */
  readonly ids: readonly string[];
  /**
   * The KubeConfig of cluster `id`, `undefined` when the registry has no such cluster.
   * @throws {Error} when the cluster's configuration cannot be loaded
   */
  kubeConfig(id: string): KubeConfig | undefined;
}

/** The Kubernetes clients a reconcile uses; all share one KubeConfig, that of the key's cluster. */
export interface ReconcileContext {
  /**
   * The id of the cluster this reconcile runs for (a DNS-1123 label; `default` in a single-cluster
   * deployment): `kubeConfig` reaches that cluster and no other. Controllers that do not care ignore it.
   */
  cluster: string;
  kubeConfig: KubeConfig;
  /**
   * Every cluster of the deployment (the runtime's registry), for a controller with children in
   * other clusters. Absent (a plan, a test, the in-process mode): the reconcile reaches its own
   * cluster alone, and the kit leaves children in other clusters as they are.
   */
  clusters?: ClusterDirectory;
  /** Logger labelled with controller and key (Cloud Logging labels). Never log Secret data. */
  log: Logger;
  /** Records Kubernetes Events about an object (`reportingController` = `levelset.dev/<controller>`). */
  events: EventRecorder;
  /**
   * `true` in a plan (`levelset plan`): `kubeConfig` sends every Kubernetes write as a server-side
   * dry-run (core/k8s/dry-run.ts) and `events` records nothing; a reconcile that writes outside
   * the cluster must then write nothing there (read, and log what it would do).
   */
  dryRun?: boolean;
  /**
   * In a plan: receives each change a reconcile would make outside the cluster (a cloud resource it
   * would create, update or delete), which `levelset plan` reports beside the Kubernetes writes.
   * Absent outside a plan.
   */
  planExternal?(change: ExternalChange): void;
  /**
   * The in-process mode's informer cache (functions/runtime/object-cache.ts): whole objects of the
   * kinds the controller declares it reads cached ({@link Controller.cachedReads}), for the kit's
   * GET of the primary and LIST of its children; every other read stays live. Absent in the
   * serverless mode, a plan and tests (every read live).
   */
  cache?: ObjectCache;
  /**
   * The primary's `resourceVersion` as the relay's informer (or the resync's LIST) last saw it, from
   * the key message's `resourceVersion` attribute (core/message.ts): the kit's GET of the primary
   * asks for a state not older than it, which the API server answers from its watch cache rather
   * than from etcd (Kubernetes API concepts, "Resource versions": a GET's `resourceVersion` is
   * "not older than"). At least as fresh as the event that enqueued the key, as controller-runtime's
   * cached read is; never older. Absent (every read consistent, from etcd) for a key no informer saw
   * (a manual or requeued key, one of another cluster), in the in-process mode, and after a conflict.
   */
  primaryResourceVersion?: string;
}

/**
 * Reads answered from informers, with read-your-writes ({@link ReconcileContext.cache}). A read it
 * cannot answer (a kind it does not cache, a namespace or selector its informer does not cover, an
 * informer not synced yet, a write of the reconcile's not yet seen by its informer) answers
 * `undefined`: the caller reads live. Objects answered are copies, the caller's to change.
 */
export interface ObjectCache {
  /**
   * @returns `{ object }` (`object` undefined: the object does not exist), or `undefined` when the
   *   cache cannot answer
   */
  get(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
  ): { object: KubernetesObject | undefined } | undefined;
  /**
   * The objects of `resource` in `namespace` matching `labelSelector` (equality terms: `k=v`,
   * `k==v`, `k!=v`, `k`, `!k`, comma-separated; set terms are not answered); `''` names no
   * namespace of a namespaced kind (every namespace) and is not answered.
   * @returns the objects (in no set order), or `undefined` when the cache cannot answer
   */
  list(resource: ResourceType, namespace: string, labelSelector?: string): KubernetesObject[] | undefined;
  /** A write answered `object` (create, apply, update, patch, status patch): reads of it stay live until the informer has seen it. */
  wrote(resource: ResourceType, object: KubernetesObject): void;
  /** `object` was deleted: reads of it stay live until the informer has seen it gone or being deleted. */
  deleted(resource: ResourceType, object: KubernetesObject): void;
}

/**
 * A change outside the cluster that a reconcile would make (reported in a plan, {@link
 * ReconcileContext.planExternal}): `create`, `update`, `delete` a cloud resource; `mark` (take it
 * over: the owner mark added, functions/kit/external.ts) or `unmark` (abandon it: the mark removed).
 */
export interface ExternalChange {
  action: 'create' | 'update' | 'delete' | 'mark' | 'unmark';
  /** The resource's full name, e.g. `projects/p/topics/t`. */
  resource: string;
  /** The Google API, e.g. `pubsub.googleapis.com`. */
  service: string;
}

/** What `listKeys` may use: the same clients as a reconcile, without a key. */
export type ResyncContext = Omit<ReconcileContext, 'events'>;

/** A quota or rate-limit answer ({@link Result.rateLimited}): the delay it asks for, ms, when it names one. */
export interface RateLimit {
  retryAfterMs?: number;
}

/**
 * The outcome of a successful reconcile. `requeueAfterMs` asks for the key to come back later
 * (published with a delay by the caller's mechanism: the next resync at the latest).
 */
export interface Result {
  requeueAfterMs?: number;
  /**
   * A quota or rate limit refused the reconcile (a Kubernetes `429`, Google's `RESOURCE_EXHAUSTED`:
   * the kit's rate-limits.ts). The runtime brings the key back after `retryAfterMs` when the answer
   * named a delay, else after the key's backoff, counted in its message apart from its failed
   * attempts (functions/runtime/retry.ts `nextRetry`); never dead-lettered, never terminal. The
   * outcome is `requeue`; `requeueAfterMs` is then ignored.
   */
  rateLimited?: RateLimit;
  /**
   * The primary does not exist, so the reconcile had nothing to converge (controller-runtime's
   * `client.IgnoreNotFound`): still a success, whose outcome line says `notFound: true`, so that
   * `levelset reconcile --wait` can tell a key naming nothing from a converged one.
   */
  notFound?: boolean;
  /**
   * The reconcile wrote something (a child created, applied or pruned, the status written): the
   * state was not converged. When the key came from a resync (`reason: "resync"`), that is drift no
   * watch event announced, counted by the runtime (functions/runtime/drift.ts).
   */
  changed?: boolean;
  /**
   * The reconcile set back a change made outside Kubernetes (a cloud resource recreated after it
   * was deleted out of band, or corrected after it was changed): drift, counted by the runtime
   * with the source that brought the key (functions/runtime/drift.ts), whatever that source was.
   */
  driftCorrected?: boolean;
  /**
   * Objects that reference this primary (another controller's primaries: the kit's `referencedBy`,
   * functions/kit/references.ts), to be reconciled now: this reconcile set back something outside
   * the cluster they depend on (a topic recreated after it was deleted out of band, which detached
   * the Subscriptions of it), and no watch event announces that. The runtime enqueues each for every
   * controller whose primary is its resource, in this key's cluster, with this delivery's reason
   * (drift they correct is counted with the same source).
   */
  referrers?: readonly Referrer[];
}

/** An object that references a primary ({@link Result.referrers}): its resource, namespace (`""` when cluster-scoped) and name. */
export interface Referrer extends Key {
  /** The referrer's resource (its controllers are those whose primary has this group and kind). */
  resource: Pick<ResourceType, 'group' | 'kind'>;
}

/**
 * How a delivery ended; logged as `outcome` on the final line of every delivery (Terraform's
 * log-based metrics count them): `success`, `requeue` (success, asked to come back: the
 * requeuer (functions/runtime/requeue.ts) delivers it again after `requeueAfterMs`, else the next
 * resync; or {@link Result.rateLimited}), `terminal`, `malformed` → 204; `transient` (409, 429, 5xx, network), `error`
 * (unexpected, e.g. 403 from missing RBAC) → 500.
 */
export type Outcome = 'success' | 'requeue' | 'terminal' | 'malformed' | 'transient' | 'error';

/**
 * The cloud resources a controller of external resources owns, as Cloud Audit Logs name them, and
 * how a resource's name leads back to the keys of the objects that own it: the `auditLog` function
 * (functions/runtime/audit-log.ts) publishes those keys when an Admin Activity entry reports a change made
 * outside Levelset, and the manifest generator builds the log sink's filter from it. Declared with
 * the kit (functions/kit/audit-log.ts, `defineController`'s `auditLog`).
 */
export interface AuditLogSource {
  /** The Google service whose entries name the resources (`protoPayload.serviceName`), e.g. `pubsub.googleapis.com`. */
  serviceName: string;
  /**
   * The resource name patterns (Google's resource names, AIP-122: literal collection IDs and
   * `{variable}` segments), e.g. `projects/{project}/topics/{topic}`.
   */
  resourceNames: readonly string[];
  /**
   * The keys of the objects that own `resourceName` (one the patterns match) in the cluster `ctx`
   * reaches; `[]` when none does. May read the cluster (a LIST of the primary).
   * @throws the API error of a read (the entry is then retried)
   */
  keysOf(resourceName: string, ctx: ResyncContext): Promise<MappedKey[]>;
}

/** A controller module: one folder beside its project's registry (`controllers/<name>/`), one line in it. */
export interface Controller {
  /** Unique kebab-case name; the key message's `controller`. */
  name: string;
  /** The primary resource: keys are `namespace/name` of these objects. */
  primary: ResourceType;
  /**
   * Every list+watch the relay runs for this controller, the primary's included (its map is
   * usually the identity). Secondary resources map to primary keys.
   */
  watches: Watch[];
  /**
   * The child types the reconcile creates, updates and prunes (each child controlled by its primary
   * through a controller reference); set by the kit's `defineController`, shown by the command line.
   */
  owns?: ResourceType[];
  /**
   * The kinds whose whole objects the reconcile reads through {@link ReconcileContext.cache} when
   * one is given (the in-process mode): the primary and the children kept in the primary's
   * namespace, as the kit's `defineController` sets it. Omitted: none (every read live).
   */
  cachedReads?: ResourceType[];
  /**
   * `true` when the reconcile maintains a `Ready` condition (with `observedGeneration`) in the
   * primary's `status.conditions`, as every controller of the kit's `defineController` does whose
   * primary has a status subresource;
   * `levelset conditions` reads these controllers' objects.
   */
  readyCondition?: boolean;
  /**
   * Spec indexes over the primary: name → a function of the whole primary object returning its
   * values (e.g. the `namespace/name` of every ConfigMap it lists). The relay keeps only the values
   * (relay/spec-index.ts) and answers {@link MapContext.byIndex}. Pure, cheap, never throwing.
   */
  indexes?: Record<string, (object: KubernetesObject) => string[]>;
  /**
   * The cloud resources it owns, for drift seen in Cloud Audit Logs ({@link AuditLogSource});
   * omitted: none (drift outside the cluster is found by the resync alone).
   */
  auditLog?: AuditLogSource;
  /** RBAC rules the reconcile and `listKeys` need (the functions' identity); the relay needs only list/watch on `watches`. */
  rbac: PolicyRule[];
  /**
   * The zod schemas of the primary's `spec` and of the `status` fields the reconcile returns: the
   * primary's CRD `openAPIV3Schema` is generated from them (cli/build/generate-manifests.ts, with
   * functions/kit/crd-schema.ts), as controller-gen generates it from Go types. Set by the kit's
   * `defineController`.
   */
  schemas?: { spec?: z.ZodType; status?: z.ZodObject };
  /**
   * Every key the resync should publish; default: every primary object (paginated LIST).
   * Include keys implied by owned objects, so that a missed deletion is still cleaned up; a key of
   * another cluster (`cluster`, {@link MappedKey}: the owner of a child in this cluster) is
   * published for that cluster.
   */
  listKeys?(ctx: ResyncContext): AsyncIterable<MappedKey>;
  /**
   * Converges the world to the desired state of `key`. Idempotent; reads current state, never
   * trusts the event. Throw {@link TerminalError} for failures a retry cannot fix; any other
   * error is retried by Pub/Sub with backoff.
   */
  reconcile(key: Key, ctx: ReconcileContext): Promise<Result | undefined>;
}

/**
 * The identity of the list+watch a {@link Watch} runs, `<apiVersion>/<plural>[@<namespace>][?<labelSelector>]`
 * (`apps/v1/deployments`, `v1/configmaps`): watches with the same resource, namespace and label
 * selector share one list+watch (one relay informer), whatever their maps; `levelset controllers`
 * lists each once.
 */
export function listWatchId(watch: Pick<Watch, 'resource' | 'namespace' | 'labelSelector'>): string {
  const { group, version, plural } = watch.resource;
  return (
    `${group ? `${group}/` : ''}${version}/${plural}` +
    (watch.namespace ? `@${watch.namespace}` : '') +
    (watch.labelSelector ? `?${watch.labelSelector}` : '')
  );
}
