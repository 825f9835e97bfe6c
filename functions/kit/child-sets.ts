/**
 * The strategies of owned kinds, one per kind of child set: a controller declares each kind it owns
 * as a value that carries its strategy (`owns: [deployments, acrossNamespaces(secrets, tracking)]`),
 * and the strategy gives the kind's RBAC verbs, the default map of its watch, the labels its children
 * carry and its child sets ({@link ChildStrategy}); the reconcile (define.ts, steps.ts) runs every
 * set the same way and never names a kind: it observes them before its reconcile and converges them
 * after, within the one {@link Scope} it resolved for the key.
 *
 * - {@link inNamespace} (the default, `owns: [deployments]`): children in the primary's namespace,
 *   listed by label and controlled through owner references, server-side applied (children.ts);
 *   garbage collection removes them with the primary.
 * - {@link acrossNamespaces}: children tracked by label and annotation across namespaces, written
 *   whole with conditional PUTs (cross-namespace.ts); no garbage collector removes them, so they are
 *   pruned also when the primary is gone or being deleted.
 * - {@link acrossClusters}: the same, and in each other cluster of the deployment too, marked with
 *   the primary's cluster (docs/writing-a-controller.md, "Children in other clusters").
 *
 * Why two write paths (docs/architecture.md, "Children"): children in the owner's namespace are
 * shared with other field managers (an autoscaler's `replicas`), which server-side apply keeps;
 * children in other namespaces are the kit's alone, known by their labels and annotation, written
 * whole under a resourceVersion precondition, and someone else's object at a child's place is never
 * written (the replicator's "never overwrite what is not ours").
 *
 * Building a set sends nothing; {@link ChildSet.observeKey} sends the reads that need the key alone
 * (beside the primary's GET), {@link ChildSet.observe} those that need the primary.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ResourceType } from '../../core/contract/controller.ts';
import { keyString } from '../../core/contract/key.ts';
import { type FailedWrite, FailedWritesError } from '../../core/k8s/errors.ts';
import { childLabels, ERR_RESOURCE_EXISTS, reconcileChildren, selectorOf } from './children.ts';
import { type ResourceClient, resourceClient } from './client.ts';
import {
  type CrossNamespaceTracking,
  listOwnedAcross,
  mapToOwnerAnnotation,
  observeCrossNamespaceChildren,
  planCrossNamespaceChildren,
  trackingInCluster,
  writeCrossNamespaceChildren,
} from './cross-namespace.ts';
import { mapThroughControllers } from './map.ts';
import { isOfType, regardingOf } from './resources.ts';
import type {
  ChildContext,
  ChildListing,
  ChildSet,
  ChildStrategy,
  Converged,
  Desired,
  OwnedType,
  PrimaryObject,
} from './types.ts';

/** The watch of an owned kind, as {@link OwnedType} declares it (options of {@link acrossNamespaces} and {@link acrossClusters}). */
export type OwnedWatch = Pick<OwnedType, 'watchSelector' | 'map' | 'predicate' | 'readsStatus'>;

/** An owned kind whose children live in other namespaces, with its tracking. */
export interface TrackedType extends OwnedType {
  tracking: CrossNamespaceTracking;
}

/**
 * Children in the primary's namespace, through owner references (the default strategy): RBAC
 * `get`/`list`/`create`/`patch`/`delete` (apply is `patch`), watched through controller references.
 */
export const inNamespace: ChildStrategy = {
  verbs: ['get', 'list', 'create', 'patch', 'delete'],
  map: (_type, primary) => mapThroughControllers(primary),
  labels: (controller, type, object) => childLabels(controller, type, object),
  childSets: (context, types) => [ownedChildren(context, types)],
};

const trackingOf = (type: OwnedType) => (type as TrackedType).tracking;
const acrossStrategy = {
  verbs: ['get', 'list', 'create', 'update', 'delete'],
  map: (type: OwnedType) => mapToOwnerAnnotation(trackingOf(type)),
  labels: (_controller: string, type: OwnedType, object: PrimaryObject) =>
    trackingOf(type).labels({ namespace: object.metadata.namespace, name: object.metadata.name }),
} as const;
const acrossNamespacesStrategy: ChildStrategy = {
  ...acrossStrategy,
  childSets: (context, types) => [childrenInOtherNamespaces(context, types as TrackedType[])],
};
const acrossClustersStrategy: ChildStrategy = {
  ...acrossStrategy,
  childSets: (context, types) => [
    childrenInOtherNamespaces(context, types as TrackedType[]),
    childrenInOtherClusters(context, types as TrackedType[]),
  ],
};

/**
 * Children of `resource` in other namespaces than their owner's (a Secret copied into every
 * namespace), tracked by `tracking`'s labels and annotation because owner references cannot cross
 * namespaces (cross-namespace.ts): RBAC `get`/`list`/`create`/`update`/`delete` (written whole with
 * PUT), watched through the owner annotation ({@link mapToOwnerAnnotation}) unless `watch.map` says
 * otherwise. A `clusterAnnotation` in `tracking` keeps children made for an owner of another
 * cluster apart; writing children there too is {@link acrossClusters}.
 */
export function acrossNamespaces(
  resource: ResourceType,
  tracking: CrossNamespaceTracking,
  watch: OwnedWatch = {},
): TrackedType {
  return { ...watch, resource, tracking, strategy: acrossNamespacesStrategy };
}

/**
 * {@link acrossNamespaces}, and in each other cluster of the deployment too: the reconcile returns
 * them by cluster in `Desired.otherClusters`, and the kit marks each with the owner's cluster in
 * `tracking.clusterAnnotation` (docs/writing-a-controller.md, "Children in other clusters").
 */
export function acrossClusters(
  resource: ResourceType,
  tracking: CrossNamespaceTracking & { clusterAnnotation: string },
  watch: OwnedWatch = {},
): TrackedType {
  return { ...watch, resource, tracking, strategy: acrossClustersStrategy };
}

/** The strategy of an owned kind: its own, else {@link inNamespace}. */
export function strategyOf(type: OwnedType): ChildStrategy {
  return type.strategy ?? inNamespace;
}

/**
 * The child sets of a controller's `owns` for one reconcile, one group of kinds per strategy in the
 * order of the first kind of each; building them sends nothing.
 */
export function childSetsOf(owns: readonly OwnedType[]): (context: ChildContext) => ChildSet[] {
  const groups = new Map<ChildStrategy, OwnedType[]>();
  for (const type of owns) {
    const strategy = strategyOf(type);
    groups.set(strategy, [...(groups.get(strategy) ?? []), type]);
  }
  return (context) => [...groups].flatMap(([strategy, types]) => strategy.childSets(context, types));
}

const nothing = (): Converged => ({ changes: [], pruning: false });
/** Adds `done` to `all`: its changes after those of `all`, the first failure kept. */
function add(all: Converged, done: Converged): void {
  all.changes.push(...done.changes);
  all.pruning ||= done.pruning;
  if (done.failed) all.failed ??= done.failed;
}
const going = (object: PrimaryObject | undefined) => !object || Boolean(object.metadata.deletionTimestamp);

/**
 * Converges each set in turn ({@link ChildSet.converge}); a failure returned by one does not stop
 * the next.
 * @returns every change, in order; `failed`: the first set's failure
 */
export async function convergeChildren(
  sets: readonly ChildSet[],
  object: PrimaryObject | undefined,
  desired: Desired | undefined,
): Promise<Converged> {
  const all = nothing();
  for (const set of sets) add(all, await set.converge(object, desired));
  return all;
}

/**
 * Children in the primary's namespace, one LIST by label per type (in parallel; the default labels
 * carry the owner's UID, so the LIST waits for the GET); converged by {@link reconcileChildren} to
 * the desired children of these types; none written while the primary is being deleted, and none
 * when the reconcile returned no `children` (left alone).
 */
export function ownedChildren(context: ChildContext, types: readonly OwnedType[]): ChildSet {
  const { client, controller } = context;
  const reader = context.reader ?? client;
  let listings: ChildListing[] = [];
  return {
    async observe(object) {
      listings = await Promise.all(
        types.map(async (type) => ({
          type,
          listed: await reader.list(type.resource, object.metadata.namespace, {
            labelSelector: selectorOf(childLabels(controller, type, object)),
          }),
        })),
      );
      return listings;
    },
    async converge(object, desired) {
      // Gone or being deleted: garbage collection removes them.
      if (!object || going(object)) return nothing();
      const wanted = desired?.children?.filter((c) => types.some((t) => isOfType(c, t.resource)));
      if (!wanted) return nothing();
      const input = {
        client,
        controller,
        owner: object,
        owned: listings,
        desired: wanted,
      };
      const { changes, conflict } = await reconcileChildren(input);
      return { changes, pruning: false, ...(conflict ? { failed: conflict } : {}) };
    },
  };
}

/**
 * Children in other namespaces, in `scope.namespace` alone when the key names one. A type whose
 * tracking has a `contentHashAnnotation` is listed as metadata only whatever is desired, so its
 * LIST needs the key alone ({@link ChildSet.observeKey}, beside the primary's GET); the others are
 * listed after the reconcile (metadata only when none is desired). Without a reconcile, or with the
 * primary being deleted, none is desired and every one is pruned; a reconcile that returned no
 * `children` leaves them alone.
 */
export function childrenInOtherNamespaces(context: ChildContext, types: readonly TrackedType[]): ChildSet {
  const { client, scope } = context;
  const { key, namespace } = scope;
  const listed = new Map<TrackedType, Promise<KubernetesObject[]>>();
  return {
    observeKey() {
      for (const type of types) {
        if (type.tracking.contentHashAnnotation === undefined) continue;
        const listing = listOwnedAcross({ ...type, client, owner: key, namespace, metadataOnly: true });
        listing.catch(() => undefined); // read, and thrown, by `converge`; never unhandled
        listed.set(type, listing);
      }
    },
    async converge(object, desired) {
      if (object && !desired?.children) return nothing();
      const inScope = (c: KubernetesObject) => namespace === undefined || c.metadata?.namespace === namespace;
      const children = going(object) ? [] : (desired?.children ?? []).filter(inScope);
      const wanted = { children, retainNamespaces: desired?.retainNamespaces };
      const tracked = types.map((type) => ({ ...type, listed: listed.get(type) }));
      return convergeAcross(context, client, object, wanted, tracked);
    },
  };
}

/**
 * Children in each other cluster of `scope.otherClusters` in turn: those of
 * `desired.otherClusters[id]`; every one pruned when the primary is gone or being deleted (the LIST
 * by label in each other cluster finds them: level-driven, no finalizer); a cluster
 * `desired.otherClusters` leaves out is left alone, without a request. A cluster that fails (its
 * LIST, its KubeConfig, a write) does not stop the others.
 */
export function childrenInOtherClusters(context: ChildContext, types: readonly TrackedType[]): ChildSet {
  const { ctx, scope } = context;
  return {
    async converge(object, desired) {
      const all = nothing();
      for (const id of scope.otherClusters) {
        const there = desired?.otherClusters?.[id];
        if (!going(object) && !there) continue;
        try {
          const kubeConfig = ctx.clusters?.kubeConfig(id);
          if (!kubeConfig) throw new Error(`unknown cluster "${id}"`);
          const wanted = { ...there, children: going(object) ? [] : (there?.children ?? []) };
          const done = await convergeAcross(context, resourceClient(kubeConfig), object, wanted, types, id);
          add(all, done);
        } catch (err) {
          ctx.log.warn(
            { cluster: id, err: err instanceof Error ? err.message : String(err) },
            'children in another cluster not converged',
          );
          all.failed ??= err;
        }
      }
      return all;
    },
  };
}

/**
 * Converges `context.scope.key`'s children of each tracked type through `client` (another cluster's for
 * `cluster`, marked with the primary's: {@link trackingInCluster}) to `wanted.children` of that type (cross-namespace.ts: observe, plan, write), and
 * reports: a conflict (an object of a child's name that the owner does not own) is an ERROR log
 * line per place and one Warning `ErrResourceExists` Event on the primary naming the namespaces;
 * the other namespaces still converge, and it is not retried.
 * @returns the changes, whether some child was found to prune, and the {@link FailedWritesError}
 *   of the failed writes
 * @throws API errors of the LISTs (retried)
 */
async function convergeAcross(
  context: ChildContext,
  client: ResourceClient,
  object: PrimaryObject | undefined,
  wanted: { children: readonly KubernetesObject[]; retainNamespaces?: readonly string[] },
  types: readonly (TrackedType & { listed?: Promise<KubernetesObject[]> })[],
  cluster?: string,
): Promise<Converged> {
  const { scope, ctx } = context;
  const { key, namespace } = scope; // no namespace for other clusters: outside the scope of a key naming one
  const { log } = ctx;
  const out = nothing();
  const failures: FailedWrite[] = [];
  for (const { resource, listed, ...type } of types) {
    const tracking = cluster === undefined ? type.tracking : trackingInCluster(type.tracking, ctx.cluster);
    const desired = wanted.children.filter((c) => isOfType(c, resource));
    const common = { client, resource, owner: key, tracking };
    const observed = await observeCrossNamespaceChildren({ ...common, desired, namespace, listed });
    const plan = planCrossNamespaceChildren({
      owner: key,
      tracking,
      desired,
      observed,
      retainNamespaces: wanted.retainNamespaces,
    });
    out.pruning ||= plan.delete.length > 0;
    const done = await writeCrossNamespaceChildren({ ...common, plan });
    const kind = resource.kind;
    const inCluster = cluster ? { cluster } : {};
    for (const place of done.conflicts) {
      const [namespace, name] = place.split('/');
      log.error(
        { ...inCluster, namespace, name, eventReason: ERR_RESOURCE_EXISTS },
        `${kind} exists and is not managed by Levelset; not written`,
      );
    }
    if (object && done.conflicts.length > 0) {
      const namespaces = done.conflicts.map((p) => p.split('/')[0]);
      const shown = namespaces.slice(0, 10).join(', ');
      const more = namespaces.length > 10 ? ` and ${namespaces.length - 10} more` : '';
      const names = [...new Set(done.conflicts.map((p) => p.split('/')[1]))].join(', ');
      const where = cluster ? `in cluster ${cluster} ` : '';
      await ctx.events.record(
        regardingOf(object),
        'Warning',
        ERR_RESOURCE_EXISTS,
        `${kind} ${names} already exists and is not managed by Levelset ${where}in namespace(s) ${shown}${more}`,
      );
    }
    for (const [verb, places] of [
      ['created', done.created],
      ['updated', [...done.updated, ...done.recreated]],
      ['pruned', done.deleted],
    ] as const)
      for (const place of places) out.changes.push(`${verb} ${kind} ${cluster ? `${cluster}:` : ''}${place}`);
    const counts = {
      ...inCluster,
      kind,
      created: done.created.length,
      updated: done.updated.length,
      recreated: done.recreated.length,
      deleted: done.deleted.length,
      unchanged: plan.unchanged.length,
      conflicts: done.conflicts.length,
      skipped: done.skipped.length,
      failed: done.failures.length,
    };
    const what = cluster ? 'children in another cluster' : 'children in other namespaces';
    if (counts.created + counts.updated + counts.recreated + counts.deleted + counts.failed > 0)
      log.info(counts, `${what} converged`);
    else log.debug(counts, `${what} unchanged`);
    failures.push(...done.failures);
  }
  if (failures.length > 0)
    out.failed = new FailedWritesError(
      `children of ${keyString(key)} in ${cluster ? `cluster ${cluster}` : 'other namespaces'}`,
      failures,
    );
  return out;
}
