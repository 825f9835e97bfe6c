/**
 * A primary's children, by the kind of set they form; each kind is one {@link ChildSet}, chosen
 * once from the controller's declaration ({@link childSetsOf}), so that the reconcile (define.ts)
 * runs every set the same way: it observes them before its reconcile and converges them after.
 *
 * - {@link ownedChildren}: children in the primary's namespace, listed by label and controlled
 *   through owner references (children.ts); garbage collection removes them with the primary.
 * - {@link childrenInOtherNamespaces}: children tracked by label and annotation across namespaces
 *   (owned `inOtherNamespaces`, cross-namespace.ts); no garbage collector removes them, so they are
 *   pruned also when the primary is gone or being deleted.
 * - {@link childrenInOtherClusters}: the same in each other cluster of the deployment, marked with
 *   the primary's cluster (a tracking with a `clusterAnnotation`; docs/writing-a-controller.md,
 *   "Children in other clusters").
 *
 * A set's reads that need the key alone are sent when the set is made for the key, so that they go
 * out with the primary's GET; a read that needs the primary (the owner's UID in its children's
 * labels) waits for it.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ReconcileContext } from '../../core/contract/controller.ts';
import { type Key, keyString } from '../../core/contract/key.ts';
import { type FailedWrite, FailedWritesError } from '../../core/k8s/errors.ts';
import {
  type ChildChange,
  type CrossNamespaceTracking,
  childLabels,
  ERR_RESOURCE_EXISTS,
  type OwnedType,
  reconcileChildren,
  selectorOf,
} from './children.ts';
import { type ResourceClient, resourceClient } from './client.ts';
import {
  listOwnedAcross,
  observeCrossNamespaceChildren,
  planCrossNamespaceChildren,
  trackingInCluster,
  writeCrossNamespaceChildren,
} from './cross-namespace.ts';
import { type ChildListing, type Desired, isOfType, type PrimaryObject, regardingOf } from './steps.ts';

/** The key whose children a reconcile converges, and what it reaches them and reports with. */
export interface ChildScope {
  /** The primary's cluster. */
  client: ResourceClient;
  controller: string;
  key: Key;
  /**
   * The one namespace whose children the key names (a primary pinned to a namespace,
   * `ReconcileInput.onlyNamespace`); `undefined`: every namespace, and every cluster.
   */
  onlyNamespace?: string;
  ctx: Pick<ReconcileContext, 'cluster' | 'clusters' | 'dryRun' | 'log' | 'events'>;
}

/** What converging children did. */
export interface Converged {
  changes: ChildChange[];
  /** Whether some child was found to prune: a primary that is gone is not done (`notFound`) until none is left. */
  pruning: boolean;
  /** The first failure of a write that did not stop the others; the reconcile throws it once it has reported the rest (retried). */
  failed?: unknown;
}

/** One key's children of one kind (see the module comment). */
export interface ChildSet {
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

const nothing = (): Converged => ({ changes: [], pruning: false });
/** Adds `done` to `all`: its changes after those of `all`, the first failure kept. */
function add(all: Converged, done: Converged): void {
  all.changes.push(...done.changes);
  all.pruning ||= done.pruning;
  if (done.failed) all.failed ??= done.failed;
}
const going = (object: PrimaryObject | undefined) => !object || Boolean(object.metadata.deletionTimestamp);

/**
 * The child sets of a controller's `owns`, each a function of the key's scope, in the order they
 * are converged: in the primary's namespace, in other namespaces, in other clusters.
 */
export function childSetsOf(owns: readonly OwnedType[]): ((scope: ChildScope) => ChildSet)[] {
  const inNamespace = owns.filter((o) => !o.inOtherNamespaces);
  const across = owns.flatMap((o) => (o.inOtherNamespaces ? [{ ...o, tracking: o.inOtherNamespaces }] : []));
  const inClusters = across.filter((o) => o.tracking.clusterAnnotation !== undefined);
  return [
    ...(inNamespace.length > 0 ? [(scope: ChildScope) => ownedChildren(scope, inNamespace)] : []),
    ...(across.length > 0 ? [(scope: ChildScope) => childrenInOtherNamespaces(scope, across)] : []),
    ...(inClusters.length > 0 ? [(scope: ChildScope) => childrenInOtherClusters(scope, inClusters)] : []),
  ];
}

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
export function ownedChildren(scope: ChildScope, types: readonly OwnedType[]): ChildSet {
  const { client, controller } = scope;
  let listings: ChildListing[] = [];
  return {
    async observe(object) {
      listings = await Promise.all(
        types.map(async (type) => ({
          type,
          listed: await client.list(type.resource, object.metadata.namespace, {
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
      const input = { client, controller, owner: object, owned: listings, desired: wanted };
      return { changes: await reconcileChildren(input), pruning: false };
    },
  };
}

/** A type whose children live in other namespaces, its tracking (`inOtherNamespaces`), and its LIST if sent already. */
type TrackedType = OwnedType & { tracking: CrossNamespaceTracking; listed?: Promise<KubernetesObject[]> };

/**
 * Children in other namespaces, in `scope.onlyNamespace` alone when the key names one. A type whose
 * tracking has a `contentHashAnnotation` is listed as metadata only whatever is desired, so its
 * LIST is sent at once, with the primary's GET; the others after the reconcile (metadata only when
 * none is desired). Without a reconcile, or with the primary being deleted, none is desired and
 * every one is pruned; a reconcile that returned no `children` leaves them alone.
 */
export function childrenInOtherNamespaces(scope: ChildScope, types: readonly TrackedType[]): ChildSet {
  const { client, key, onlyNamespace: namespace } = scope;
  const tracked = types.map((type) => {
    if (type.tracking.contentHashAnnotation === undefined) return type;
    const listed = listOwnedAcross({ ...type, client, owner: key, namespace, metadataOnly: true });
    listed.catch(() => undefined); // read, and thrown, by `converge`; never unhandled
    return { ...type, listed };
  });
  return {
    async converge(object, desired) {
      if (object && !desired?.children) return nothing();
      const inScope = (c: KubernetesObject) => namespace === undefined || c.metadata?.namespace === namespace;
      const children = going(object) ? [] : (desired?.children ?? []).filter(inScope);
      const wanted = { children, retainNamespaces: desired?.retainNamespaces };
      return convergeAcross(scope, client, object, wanted, tracked);
    },
  };
}

/**
 * Children in each other cluster of `scope.ctx.clusters` in turn: those of
 * `desired.otherClusters[id]`; every one pruned when the primary is gone or being deleted (the LIST
 * by label in each other cluster finds them: level-driven, no finalizer); a cluster
 * `desired.otherClusters` leaves out is left alone, without a request. Nothing without
 * `ctx.clusters` (single cluster, a plan, the in-process mode) or for a key naming one namespace.
 * A cluster that fails (its LIST, its KubeConfig, a write) does not stop the others.
 */
export function childrenInOtherClusters(scope: ChildScope, types: readonly TrackedType[]): ChildSet {
  const { ctx } = scope;
  return {
    async converge(object, desired) {
      const all = nothing();
      if (!ctx.clusters || ctx.dryRun || scope.onlyNamespace !== undefined) return all;
      for (const id of ctx.clusters.ids) {
        const there = desired?.otherClusters?.[id];
        if (id === ctx.cluster || (!going(object) && !there)) continue;
        try {
          const kubeConfig = ctx.clusters.kubeConfig(id);
          if (!kubeConfig) throw new Error(`unknown cluster "${id}"`);
          const wanted = { ...there, children: going(object) ? [] : (there?.children ?? []) };
          const done = await convergeAcross(scope, resourceClient(kubeConfig), object, wanted, types, id);
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
 * Converges `scope.key`'s children of each tracked type through `client` (another cluster's for
 * `cluster`, marked with the primary's: {@link trackingInCluster}) to `wanted.children` of that type (cross-namespace.ts: observe, plan, write), and
 * reports: a conflict (an object of a child's name that the owner does not own) is an ERROR log
 * line per place and one Warning `ErrResourceExists` Event on the primary naming the namespaces;
 * the other namespaces still converge, and it is not retried.
 * @returns the changes, whether some child was found to prune, and the {@link FailedWritesError}
 *   of the failed writes
 * @throws API errors of the LISTs (retried)
 */
async function convergeAcross(
  scope: ChildScope,
  client: ResourceClient,
  object: PrimaryObject | undefined,
  wanted: { children: readonly KubernetesObject[]; retainNamespaces?: readonly string[] },
  types: readonly TrackedType[],
  cluster?: string,
): Promise<Converged> {
  const { key, ctx } = scope;
  const { log } = ctx;
  const namespace = scope.onlyNamespace; // never set for other clusters
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
