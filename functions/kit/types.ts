/**
 * The kit's public types in one place: what a reconcile receives and returns
 * ({@link ReconcileInput}, {@link Desired}), what `finalize` does, and how owned kinds of children
 * are declared and kept ({@link OwnedType}, {@link ChildStrategy}: child-sets.ts has the three
 * strategies). Types only: no module of the kit is imported for its values.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { z } from 'zod';
import type {
  EventRecorder,
  ExternalChange,
  ReconcileContext,
  ResourceType,
  Verb,
  WatchEvent,
} from '../../core/contract/controller.ts';
import type { Key } from '../../core/contract/key.ts';
import type { ConditionInput } from '../../core/k8s/conditions.ts';
import type { namespacedCustomObjectSchema } from '../../core/k8s/custom-resource.ts';
import type { Logger } from '../../core/log.ts';
import type { ResourceClient } from './client.ts';
import type { MapFunction } from './map.ts';
import type { Reads } from './reads.ts';

/**
 * The primary object as a reconcile sees it: metadata validated, `spec` as stored, `status` as stored.
 * `metadata.namespace` is `""` for a cluster-scoped primary (as its key's).
 */
export type PrimaryObject = z.infer<typeof namespacedCustomObjectSchema>;

/** The `Ready` condition a reconcile reports; `observedGeneration` is added by the kit. */
export interface ReadyInput {
  status: boolean;
  /** UpperCamelCase, e.g. `DeploymentAvailable`. */
  reason: string;
  message: string;
}

/** What a reconcile returns: the desired state. Every member is optional. */
export interface Desired {
  /**
   * Every child the primary should have now, of the owned types (apiVersion, kind, metadata.name,
   * spec…). The kit sets namespace, labels and the controller reference, creates the missing, applies
   * the changed, and prunes the owned children not listed. Omitted: children are left alone.
   */
  children?: KubernetesObject[];
  /** Status fields besides `conditions` and `observedGeneration` (merge-patched when changed). */
  status?: Record<string, unknown>;
  /** The `Ready` condition; default `True`/`Reconciled`. */
  ready?: ReadyInput;
  /** Other conditions, set idempotently like `Ready`. */
  conditions?: Omit<ConditionInput, 'observedGeneration'>[];
  /** Ask for the key to come back after this many ms. */
  requeueAfterMs?: number;
  /**
   * The reconcile set back a change made outside Kubernetes (`Result.driftCorrected`: counted as
   * drift with its source). Set by the kit's external resources (functions/kit/external.ts).
   */
  driftCorrected?: boolean;
  /**
   * Children in other namespaces only (`acrossNamespaces`, `acrossClusters`): namespaces whose children are left as they are, neither
   * written nor pruned (e.g. namespaces being deleted, which take their objects with them).
   */
  retainNamespaces?: readonly string[];
  /**
   * Children in other clusters (kinds owned `acrossClusters`), by cluster id (one of `ReconcileInput.clusters.others`): every child the
   * primary should have in that cluster, each with its namespace, and that cluster's namespaces to
   * leave alone. A cluster of the registry absent here is left as it is (e.g. unreachable now);
   * `{children: []}` prunes every child of the primary there. Ignored for a cluster outside the
   * reconcile's {@link Scope} (`scope.otherClusters`: none for a key naming one namespace, in a
   * plan, in the in-process mode). When the primary is gone or being deleted, the kit prunes its children in every other
   * cluster whatever this says.
   */
  otherClusters?: Readonly<Record<string, OtherClusterChildren>>;
}

/** The children a primary should have in one other cluster ({@link Desired.otherClusters}). */
export interface OtherClusterChildren {
  children: readonly KubernetesObject[];
  /** Namespaces of that cluster whose children are neither written nor pruned. */
  retainNamespaces?: readonly string[];
}

/** The other clusters a reconcile may read, for children in other clusters ({@link Desired.otherClusters}). */
export interface ClustersInput {
  /** The reconcile's own cluster id (the key's). */
  self: string;
  /** The other clusters of this reconcile's {@link Scope} (`scope.otherClusters`), in configuration order. */
  others: readonly string[];
  /**
   * The reads of the controller in cluster `id` (one of `others`), checked against its RBAC as
   * the reads of its own cluster are (the functions' identity has the same rules in every cluster).
   * @throws {Error} when `id` is not one of `others`, or its KubeConfig cannot be made
   */
  reads(id: string): Reads;
}

/** What a reconcile receives. */
export interface ReconcileInput<Spec> {
  key: Key;
  /** The primary, as just read from the API server. */
  object: PrimaryObject;
  /** Its spec, parsed by the controller's schema. */
  spec: Spec;
  /**
   * Which of the primary's children this reconcile converges ({@link Scope}): with `scope.namespace`
   * set (a key naming the children in one namespace of a primary pinned to another, `defineController`'s
   * `namespace`), return the children of that namespace; children elsewhere are left as they are.
   */
  scope: Scope;
  /**
   * `true` when the object is being deleted (`deletionTimestamp` set: another party's finalizer holds
   * it) and the controller declares no `finalize`: the kit then writes no children (garbage
   * collection removes them) but still writes the status the reconcile returns.
   */
  deleting: boolean;
  /** The live children, of each owned type, that this object controls (listed before the reconcile). */
  owned<T extends KubernetesObject>(resource: ResourceType<T>): T[];
  /**
   * LISTs a resource in the object's namespace (or `namespace`, or `allNamespaces`): one request.
   * @throws {Error} when the controller's RBAC does not grant `list` on it (functions/kit/reads.ts)
   */
  list: Reads['list'];
  /** GETs an object, in the object's namespace or `namespace`; `undefined` when absent. Needs `get` in the RBAC. */
  get: Reads['get'];
  /** Merge-patches the labels/annotations of an object the controller does not own. Needs `patch` in the RBAC. */
  patchMetadata: Reads['patchMetadata'];
  /** Logger labelled with controller and key. */
  log: Logger;
  events: EventRecorder;
  kubeConfig: KubeConfig;
  /**
   * `true` in a plan (`levelset plan`): every Kubernetes write through `kubeConfig` is a server-side
   * dry-run; write nothing outside the cluster (read, and log what you would do).
   */
  dryRun: boolean;
  /**
   * In a plan (`dryRun`), reports a change the reconcile would make outside the cluster; `levelset
   * plan` lists it as a planned change. A no-op outside a plan. (The kit's external resources call
   * it: functions/kit/external.ts.)
   */
  planExternal(change: ExternalChange): void;
  /** The other clusters of the deployment, for children in other clusters ({@link Desired.otherClusters}). */
  clusters: ClustersInput;
}

/** What `finalize` receives: the object being deleted, still carrying the controller's finalizer. */
export interface FinalizeInput<Spec>
  extends Pick<
    ReconcileInput<Spec>,
    'key' | 'list' | 'get' | 'patchMetadata' | 'log' | 'events' | 'kubeConfig' | 'dryRun' | 'planExternal'
  > {
  /** The primary, as just read (`deletionTimestamp` set). */
  object: PrimaryObject;
  /** Its spec parsed by the schema, or `undefined` when the stored spec fails it (finalize anyway: use `status`). */
  spec: Spec | undefined;
}

/**
 * What `finalize` returns: nothing when done (the kit then removes the finalizer), or
 * `{ requeueAfterMs }` when not done yet (e.g. a long-running cloud operation): the finalizer stays
 * and the key comes back after that many ms.
 */
export type FinalizeResult = { requeueAfterMs: number } | undefined;

/** The children of one owned type, as listed by its labels before the reconcile. */
export interface ChildListing {
  type: OwnedType;
  listed: KubernetesObject[];
}

/** The primary object a child belongs to: what a controller reference needs. */
export interface Owner {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; uid: string };
}

/** What converging a reconcile's children changed, for logs and the `Synced` Event: `created Deployment x`, … */
export type ChildChange = `${'created' | 'updated' | 'adopted' | 'pruned' | 'orphaned'} ${string}`;

/**
 * Which of a primary's children one reconcile converges, resolved once at the top of the
 * reconcile (steps.ts `resolveScope`) and passed to every child set and to the controller's reconcile.
 */
export interface Scope {
  /** The primary's key. */
  key: Key;
  /**
   * The one namespace whose children the key names (a primary pinned to a namespace,
   * `defineController`'s `namespace`: a key in another namespace names the children there);
   * `undefined`: every namespace.
   */
  namespace?: string;
  /**
   * The other clusters (ids) whose children are converged, in configuration order: `[]` for a key
   * naming one namespace, in a plan, and where the runtime gives no clusters (single cluster, the
   * in-process mode).
   */
  otherClusters: readonly string[];
}

/** A kind of child a controller owns (`owns`), the watch of it, and the strategy that keeps its children. */
export interface OwnedType {
  resource: ResourceType;
  /**
   * The labels every child of `owner` carries and is listed by (children in the owner's namespace);
   * default `{levelset.dev/controller: <controller>, levelset.dev/owner: <owner uid>}`.
   */
  labels?: (owner: Owner) => Record<string, string>;
  /**
   * Children in the owner's namespace: take an object already holding a desired child's name that no
   * controller owns (its controller reference and labels set, then managed), as controller-runtime's
   * `CreateOrUpdate` with `SetControllerReference` and Kopf's `adopt()` let a controller do; one
   * another controller owns stays `Ready=False/ErrResourceExists`. Default `false`: never adopted.
   */
  adopt?: boolean;
  /**
   * Children in the owner's namespace: what pruning does with a child the reconcile no longer
   * returns: `delete` it (default), or `orphan` it (its controller reference and Levelset's labels
   * removed, the object left: a Namespace kept once made). Deleting the owner still lets the garbage
   * collector delete the children it controls (Kubernetes API: owners and dependents).
   */
  prune?: 'delete' | 'orphan';
  /** Server-side label selector of the relay's watch of this type; default none (every object). */
  watchSelector?: string;
  /** The map of the relay's watch of this type; default the strategy's ({@link ChildStrategy.map}). */
  map?: MapFunction;
  /**
   * Drops events of this type's watch before the map (controller-runtime's `WithPredicates`), e.g.
   * `skipOwnCreates` (functions/kit/predicates.ts): the echo of the owner's own create, or
   * `skipOwnWrites`: the echoes of its own create and applies. Default: every event passes.
   */
  predicate?: (event: WatchEvent) => boolean;
  /**
   * What the reconcile reads of a child's `status` (`Watch.readsStatus`): a status update that
   * changes nothing of it (nor the generation, nor significant metadata) enqueues nothing.
   * Default: every status update enqueues the owner.
   */
  readsStatus?: (child: KubernetesObject) => unknown;
  /**
   * How its children are kept (child-sets.ts): default in the owner's namespace, through owner
   * references; `acrossNamespaces` and `acrossClusters` set their own.
   */
  strategy?: ChildStrategy;
}

/**
 * How the children of an owned kind are found, written and pruned: one value per kind of child set
 * (child-sets.ts: in the owner's namespace, across namespaces, across clusters), which gives the
 * kind's RBAC, the default map of its watch, the labels its children carry, and its child sets.
 */
export interface ChildStrategy {
  /** The RBAC verbs on the kind's resource (`patch` for server-side apply, `update` for PUT). */
  readonly verbs: readonly Verb[];
  /** The map of the kind's watch when it declares none, to keys of `primary`. */
  map(type: OwnedType, primary: ResourceType): MapFunction;
  /** The labels the children of `object` of `type` carry; checked as label values before the reconcile. */
  labels(controller: string, type: OwnedType, object: PrimaryObject): Record<string, string>;
  /** The child sets of `types`, this strategy's kinds, for one reconcile; building them sends nothing. */
  childSets(context: ChildContext, types: readonly OwnedType[]): ChildSet[];
}

/** What one reconcile's child sets reach the children with, and which of them they converge. */
export interface ChildContext {
  /** The primary's cluster. */
  client: ResourceClient;
  /**
   * The reads that may come from the in-process mode's informer cache (the LIST of children in the
   * primary's namespace: cached-client.ts `cachedReader`); default `client`.
   */
  reader?: ResourceClient;
  controller: string;
  scope: Scope;
  ctx: Pick<ReconcileContext, 'cluster' | 'clusters' | 'log' | 'events'>;
}

/** What converging children did. */
export interface Converged {
  changes: ChildChange[];
  /** Whether some child was found to prune: a primary that is gone is not done (`notFound`) until none is left. */
  pruning: boolean;
  /** The first failure of a write that did not stop the others; the reconcile throws it once it has reported the rest (retried). */
  failed?: unknown;
}

/** One key's children of one strategy's kinds: observed before the reconcile, converged after it. */
export interface ChildSet {
  /** Sends the reads that need the key alone, so that they go out beside the primary's GET; `converge` reads their answers. */
  observeKey?(): void;
  /** Reads the children that need the primary itself; returns what the reconcile reads through `owned`. */
  observe?(object: PrimaryObject): Promise<ChildListing[]>;
  /**
   * Converges the children to `desired` (the reconcile's result); `object` `undefined` when the
   * primary is gone (or the key names none), `desired` `undefined` when no reconcile ran.
   * @throws what stops the reconcile (an owned child's `ErrResourceExists`, API errors of the
   *   primary's cluster); a failed write that does not stop the others is returned in `failed`
   */
  converge(object: PrimaryObject | undefined, desired: Desired | undefined): Promise<Converged>;
}
