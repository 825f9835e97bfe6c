/**
 * Children in other namespaces than their owner's (a Secret copied into every namespace, a
 * ConfigMap per team namespace). Owner references cannot cross namespaces (Kubernetes, "Owners and
 * dependents": the garbage collector ignores them), so such a child is tracked by **labels** that
 * list the children of one owner across namespaces and an **annotation** naming the owner
 * `<namespace>/<name>`; an object is the owner's only when it carries both. Without garbage
 * collection, the kit prunes them itself, also once the owner is gone.
 *
 * The rules (written whole, conditional PUTs, delete-and-create for immutable fields, someone
 * else's object never touched, each namespace's write standing alone): docs/writing-a-controller.md,
 * "Children in other namespaces". In other clusters too, with a `clusterAnnotation`
 * ({@link trackingInCluster}). An owned kind declares it with child-sets.ts `acrossNamespaces` or
 * `acrossClusters` and a {@link CrossNamespaceTracking}.
 */
import { isDeepStrictEqual } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ResourceType } from '../../core/contract/controller.ts';
import { type Key, keyString } from '../../core/contract/key.ts';
import { isDNS1123Label } from '../../core/contract/names.ts';
import { FIELD_MANAGER } from '../../core/k8s/custom-resource.ts';
import { apiStatusOf, type FailedWrite, isConflict, isNotFound } from '../../core/k8s/errors.ts';
import { selectorOf } from './children.ts';
import type { ResourceClient } from './client.ts';
import { forEachLimit, mapLimit } from './concurrency.ts';
import { isEmptyValue } from './managed-fields.ts';
import type { MapFunction } from './map.ts';

/** How children in other namespaces are found and told apart. */
export interface CrossNamespaceTracking {
  /**
   * The labels every child of the owner `owner` carries, by which they are listed across
   * namespaces (valid label values: at most 63 characters). A function of the owner's key, not of
   * the object: the children of an owner that is gone are still found.
   */
  labels(owner: Key): Record<string, string>;
  /** The annotation whose value is the owner's `<namespace>/<name>` on each child. */
  ownerAnnotation: string;
  /** Top-level members the API server refuses to change (a Secret's `type`): a change recreates the child. */
  immutableFields?: readonly string[];
  /**
   * An annotation the owner sets on every desired child whose value changes whenever the child's
   * content (its members besides `metadata`) does, e.g. a sha256 of it. With it, the kit lists the
   * children as metadata only (`PartialObjectMetadataList`: no Secret data crosses the wire or sits
   * in memory) and takes a child whose annotation equals the desired one for converged, unless a
   * field manager other than the kit's owns one of its fields outside `metadata` (its
   * `managedFields`: someone else wrote its content since), in which case that child alone is read
   * whole and compared. A child whose annotation differs is updated from its metadata (a PUT
   * conditional on its resourceVersion); one the API server refuses so (422: an `immutable` child)
   * is read whole and recreated. Omitted: children are listed whole and compared member by member.
   */
  contentHashAnnotation?: string;
  /**
   * Children in other clusters too (child-sets.ts `acrossClusters`; docs/architecture.md
   * "Clusters"): the annotation whose value is the owner's cluster id on each child the kit writes
   * in another cluster than its owner's. Such a child is the owner's only when it carries that
   * annotation with the owner's cluster; a child in the owner's own cluster carries none, so a child
   * made for an owner of another cluster is never taken for one of a same-named owner of this cluster
   * (nor the other way round). Omitted: children in the owner's cluster alone.
   */
  clusterAnnotation?: string;
}

/**
 * A tracking as the kit applies it: with `ownerCluster`, the owner's cluster id, while it tracks the
 * owner's children in another cluster ({@link trackingInCluster}); without, in the owner's own.
 */
export type AppliedTracking = CrossNamespaceTracking & { readonly ownerCluster?: string };

/** Requests in flight at once for one reconcile's children of one type in other namespaces (writes; reads by name). */
export const CROSS_NAMESPACE_CONCURRENCY = 8;

/**
 * True when `object` is a child of `owner`: the owner's labels and its annotation, both; with a
 * `clusterAnnotation`, also that annotation equal to `tracking.ownerCluster` (a child in another
 * cluster than its owner's), or absent when `ownerCluster` is (a child in the owner's cluster).
 */
export function isOwnedAcross(object: KubernetesObject, owner: Key, tracking: AppliedTracking): boolean {
  const md = object.metadata;
  return (
    Object.entries(tracking.labels(owner)).every(([k, v]) => md?.labels?.[k] === v) &&
    md?.annotations?.[tracking.ownerAnnotation] === keyString(owner) &&
    (tracking.clusterAnnotation === undefined ||
      md?.annotations?.[tracking.clusterAnnotation] === tracking.ownerCluster)
  );
}

/**
 * `child` with the owner's labels and annotation added (what the kit writes), and the owner's
 * cluster in `clusterAnnotation` when it is written in another cluster (`tracking.ownerCluster`).
 */
export function markedChild(
  child: KubernetesObject,
  owner: Key,
  tracking: AppliedTracking,
): KubernetesObject {
  const cluster =
    tracking.clusterAnnotation !== undefined && tracking.ownerCluster !== undefined
      ? { [tracking.clusterAnnotation]: tracking.ownerCluster }
      : {};
  return {
    ...child,
    metadata: {
      ...child.metadata,
      labels: { ...child.metadata?.labels, ...tracking.labels(owner) },
      annotations: {
        ...child.metadata?.annotations,
        [tracking.ownerAnnotation]: keyString(owner),
        ...cluster,
      },
    },
  };
}

/**
 * The tracking of `owner`'s children in another cluster than the owner's own, `ownerCluster`:
 * `tracking` with `ownerCluster` set, so that {@link isOwnedAcross} and {@link markedChild} read
 * and write `clusterAnnotation`.
 * @throws {Error} when `tracking` declares no `clusterAnnotation` (children in its owner's cluster alone)
 */
export function trackingInCluster(tracking: CrossNamespaceTracking, ownerCluster: string): AppliedTracking {
  if (tracking.clusterAnnotation === undefined)
    throw new Error('children in other clusters need a clusterAnnotation in their tracking');
  return { ...tracking, ownerCluster };
}

/** `undefined`, `null`, `{}` and `[]` all mean "none" (a Secret without data is stored without `data`). */
const none = (v: unknown) => v === undefined || v === null || isEmptyValue(v);
const same = (a: unknown, b: unknown) => (none(a) && none(b)) || isDeepStrictEqual(a, b);
const members = (o: KubernetesObject) =>
  Object.keys(o).filter((k) => k !== 'apiVersion' && k !== 'kind' && k !== 'metadata');

/**
 * True for an item of a metadata-only LIST (`kind: PartialObjectMetadata`, Kubernetes API concepts:
 * "Receiving resources as Tables or metadata only"): its members besides `metadata` are unknown.
 */
export function isPartialMetadata(object: KubernetesObject): boolean {
  return object.kind === 'PartialObjectMetadata';
}

/**
 * True when `object`'s `managedFields` show its content (the fields outside `metadata`) as the
 * kit's ({@link FIELD_MANAGER}) alone: the kit's entry owns some of it and no other manager's owns
 * any (server-side field management: a manager owns the fields it last changed). False when someone
 * else wrote the content after the kit did, and when the managedFields were cleared (a write with
 * `managedFields: [{}]` strips them all, kube-apiserver's managedfields reset): then nothing says
 * who wrote it.
 */
export function contentWrittenByKitAlone(object: KubernetesObject): boolean {
  const entries = (object.metadata?.managedFields ?? []) as { manager?: string; fieldsV1?: object }[];
  const ownsContent = (e: { fieldsV1?: object }) =>
    Object.keys(e.fieldsV1 ?? {}).some((f) => f !== 'f:metadata');
  return (
    entries.some((e) => e.manager === FIELD_MANAGER && ownsContent(e)) &&
    !entries.some((e) => e.manager !== FIELD_MANAGER && ownsContent(e))
  );
}

/**
 * How an owned child differs from `desired` (already {@link markedChild}): `unchanged`, `update`
 * (a member, a label or a desired annotation differs) or `recreate` (an immutable field differs, or
 * the child is `immutable: true` and a member differs). A child known by its metadata alone
 * ({@link isPartialMetadata}) is compared by its labels and annotations, the
 * {@link CrossNamespaceTracking.contentHashAnnotation} standing for its content.
 */
export function compareChild(
  live: KubernetesObject,
  desired: KubernetesObject,
  tracking: Pick<CrossNamespaceTracking, 'immutableFields'>,
): 'unchanged' | 'update' | 'recreate' {
  const at = (o: KubernetesObject, k: string) => (o as unknown as Record<string, unknown>)[k];
  const differ = isPartialMetadata(live)
    ? []
    : members(desired).filter((k) => !same(at(live, k), at(desired, k)));
  if (differ.some((k) => tracking.immutableFields?.includes(k))) return 'recreate';
  if (differ.length > 0 && at(live, 'immutable') === true) return 'recreate';
  const labelsDiffer = !same(live.metadata?.labels, desired.metadata?.labels);
  const annotations = live.metadata?.annotations ?? {};
  const annotationsDiffer = Object.entries(desired.metadata?.annotations ?? {}).some(
    ([k, v]) => annotations[k] !== v,
  );
  return differ.length > 0 || labelsDiffer || annotationsDiffer ? 'update' : 'unchanged';
}

/**
 * The PUT body bringing `live` to `desired`: `desired`'s members, labels and annotations on
 * `live`'s metadata (resourceVersion for optimistic concurrency, uid, annotations of others,
 * finalizers); `live`'s other members (`immutable`) kept. `managedFields` are left to the server,
 * except on an object that has none (someone cleared them): kube-apiserver records no update of
 * such an object (managedfields `skipNonAppliedManager`), so nothing would ever show the content
 * as the kit's again ({@link contentWrittenByKitAlone}) and every reconcile would read it whole.
 * The body then carries the kit's `Update` entry for the members it sets, which the server takes
 * as the object's managedFields and adds this update's fields to (managedfields: "directly
 * updating managed fields").
 */
export function updateBody(live: KubernetesObject, desired: KubernetesObject): KubernetesObject {
  const { managedFields, ...metadata } = live.metadata ?? {};
  const set = Object.fromEntries(members(desired).map((k) => [k, (desired as never)[k]]));
  const untracked = (managedFields ?? []).length === 0;
  return {
    ...live,
    ...set,
    apiVersion: desired.apiVersion,
    kind: desired.kind,
    metadata: {
      ...metadata,
      labels: desired.metadata?.labels,
      annotations: { ...live.metadata?.annotations, ...desired.metadata?.annotations },
      ...(untracked
        ? {
            managedFields: [
              {
                manager: FIELD_MANAGER,
                operation: 'Update',
                apiVersion: desired.apiVersion,
                fieldsType: 'FieldsV1',
                fieldsV1: Object.fromEntries(Object.keys(set).map((k) => [`f:${k}`, {}])),
              },
            ],
          }
        : {}),
    },
  };
}

/** The step one desired child needs; see {@link planChild}. */
export type ChildStep =
  | { op: 'create'; desired: KubernetesObject }
  | { op: 'conflict'; current: KubernetesObject }
  | { op: 'unchanged'; current: KubernetesObject }
  | { op: 'update' | 'recreate'; current: KubernetesObject; desired: KubernetesObject };

/**
 * The step that brings the place of `desired` (already {@link markedChild}) to it, given the object
 * observed there (`undefined`: none). For `update`, `desired` is the PUT body ({@link updateBody});
 * for `recreate`, the fresh body.
 */
export function planChild(
  owner: Key,
  tracking: AppliedTracking,
  desired: KubernetesObject,
  current: KubernetesObject | undefined,
): ChildStep {
  if (!current) return { op: 'create', desired };
  if (!isOwnedAcross(current, owner, tracking)) return { op: 'conflict', current };
  const change = compareChild(current, desired, tracking);
  if (change === 'unchanged') return { op: 'unchanged', current };
  if (change === 'update') return { op: 'update', current, desired: updateBody(current, desired) };
  return { op: 'recreate', current, desired };
}

/** A place (namespace and name) holding an object the owner does not own. */
export interface CrossNamespaceConflict {
  namespace: string;
  name: string;
}

/** What must be written for one owner's children in other namespaces; every list sorted by namespace. */
export interface CrossNamespacePlan {
  create: KubernetesObject[];
  /** `desired` is the PUT body, carrying `current`'s resourceVersion. */
  update: {
    current: KubernetesObject;
    desired: KubernetesObject;
    /** The desired child itself (marked), before it was laid on `current`'s metadata: what a re-plan starts from. */
    fresh?: KubernetesObject;
  }[];
  /** Delete `current` (UID + resourceVersion preconditions), then create `desired`. */
  recreate: { current: KubernetesObject; desired: KubernetesObject }[];
  /** Owned children no longer desired (UID + resourceVersion preconditions). */
  delete: KubernetesObject[];
  /** Places of desired children held by objects the owner does not own: reported, never touched. */
  conflicts: CrossNamespaceConflict[];
  /** Namespaces whose child is converged. */
  unchanged: string[];
}

const placeOf = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
const byNamespace = (a: KubernetesObject, b: KubernetesObject) => {
  const [x, y] = [placeOf(a), placeOf(b)];
  return x < y ? -1 : x > y ? 1 : 0;
};

/**
 * The diff of desired children against observed objects (pure).
 * @param input.desired every desired child, each with its namespace (marked here)
 * @param input.observed the objects listed by the owner's labels, plus any object found at a desired
 *   child's place; duplicates of a place collapse (the first wins)
 * @param input.retainNamespaces namespaces whose owned children are neither pruned nor written (e.g.
 *   namespaces being deleted, which take their objects with them)
 */
export function planCrossNamespaceChildren(input: {
  owner: Key;
  tracking: AppliedTracking;
  desired: readonly KubernetesObject[];
  observed: readonly KubernetesObject[];
  retainNamespaces?: readonly string[];
}): CrossNamespacePlan {
  const { owner, tracking } = input;
  const observed = new Map<string, KubernetesObject>();
  for (const o of input.observed) if (!observed.has(placeOf(o))) observed.set(placeOf(o), o);
  const plan: CrossNamespacePlan = {
    create: [],
    update: [],
    recreate: [],
    delete: [],
    conflicts: [],
    unchanged: [],
  };
  const wanted = new Set<string>();
  for (const child of [...input.desired].sort(byNamespace)) {
    const desired = markedChild(child, owner, tracking);
    const place = placeOf(desired);
    wanted.add(place);
    const step = planChild(owner, tracking, desired, observed.get(place));
    const namespace = desired.metadata?.namespace ?? '';
    if (step.op === 'create') plan.create.push(step.desired);
    else if (step.op === 'conflict') plan.conflicts.push({ namespace, name: desired.metadata?.name ?? '' });
    else if (step.op === 'unchanged') plan.unchanged.push(namespace);
    else if (step.op === 'update')
      plan.update.push({ current: step.current, desired: step.desired, fresh: desired });
    else plan.recreate.push({ current: step.current, desired: step.desired });
  }
  const retained = new Set(input.retainNamespaces ?? []);
  for (const o of [...observed.values()].sort(byNamespace)) {
    if (wanted.has(placeOf(o)) || retained.has(o.metadata?.namespace ?? '')) continue;
    if (isOwnedAcross(o, owner, tracking)) plan.delete.push(o);
  }
  return plan;
}

/** What {@link writeCrossNamespaceChildren} did, as `namespace/name` places; logged (never an object's data). */
export interface CrossNamespaceChanges {
  created: string[];
  updated: string[];
  recreated: string[];
  deleted: string[];
  conflicts: string[];
  /** Creates skipped because the namespace is gone or being deleted. */
  skipped: string[];
  failures: FailedWrite[];
}

/** A create refused because the namespace is gone (404) or being deleted (403 from kube-apiserver's NamespaceLifecycle admission). */
function namespaceUnavailable(err: unknown): boolean {
  const status = apiStatusOf(err);
  if (status === 404) return true;
  return status === 403 && /being terminated/.test(err instanceof Error ? err.message : String(err));
}

/**
 * Performs the writes of `plan`, at most {@link CROSS_NAMESPACE_CONCURRENCY} at once; every
 * failure is recorded in the result, none is thrown. A create answered 409 AlreadyExists (someone
 * created the object since the LIST) re-reads it and decides by ownership, once.
 */
export async function writeCrossNamespaceChildren(args: {
  client: ResourceClient;
  resource: ResourceType;
  owner: Key;
  tracking: AppliedTracking;
  plan: CrossNamespacePlan;
}): Promise<CrossNamespaceChanges> {
  const { client, resource, owner, tracking, plan } = args;
  const done: CrossNamespaceChanges = {
    created: [],
    updated: [],
    recreated: [],
    deleted: [],
    conflicts: plan.conflicts.map((c) => `${c.namespace}/${c.name}`),
    skipped: [],
    failures: [],
  };
  const fail = (o: KubernetesObject, op: FailedWrite['op'], error: unknown) =>
    done.failures.push({ op, target: o.metadata?.namespace ?? '', status: apiStatusOf(error), error });

  const create = async (desired: KubernetesObject, afterDelete: boolean): Promise<void> => {
    try {
      await client.create(resource, desired);
      (afterDelete ? done.recreated : done.created).push(placeOf(desired));
    } catch (err) {
      if (namespaceUnavailable(err)) done.skipped.push(placeOf(desired));
      else if (isConflict(err) && !afterDelete) await reread(desired, 'create', err);
      else fail(desired, afterDelete ? 'recreate' : 'create', err);
    }
  };
  const update = async (body: KubernetesObject, current?: KubernetesObject, fresh?: KubernetesObject) => {
    try {
      await client.replace(resource, body);
      done.updated.push(placeOf(body));
    } catch (err) {
      // Planned from its metadata alone, and refused as invalid (an `immutable` child whose content
      // must change): read it whole and plan again, once.
      if (current && isPartialMetadata(current) && apiStatusOf(err) === 422)
        await reread(fresh ?? body, 'update', err);
      else fail(body, 'update', err);
    }
  };
  /**
   * After a refused `op` of `desired` (a create answered 409 AlreadyExists: someone created the
   * object since the LIST; an update answered 422), reads the object whole and takes the step
   * planned from it, once. A child gone meanwhile fails the update with its refusal.
   */
  const reread = async (desired: KubernetesObject, op: 'create' | 'update', refused: unknown) => {
    let whole: KubernetesObject;
    try {
      whole = await client.get(resource, desired.metadata?.namespace, desired.metadata?.name ?? '');
    } catch (err) {
      fail(desired, op, op === 'update' && isNotFound(err) ? refused : err);
      return;
    }
    const step = planChild(owner, tracking, desired, whole);
    if (step.op === 'conflict') done.conflicts.push(placeOf(desired));
    else if (step.op === 'update') await update(step.desired);
    else if (step.op === 'recreate') await recreate(step.current, step.desired);
    // 'unchanged': converged by someone else (a concurrent reconcile); 'create' cannot happen (it exists).
  };
  const remove = async (current: KubernetesObject): Promise<boolean> => {
    try {
      await client.delete(resource, current, { resourceVersion: true }); // false: gone already
      return true;
    } catch (err) {
      if (isNotFound(err)) return true;
      fail(current, 'delete', err);
      return false;
    }
  };
  const recreate = async (current: KubernetesObject, desired: KubernetesObject): Promise<void> => {
    if (await remove(current)) await create(desired, true);
  };

  await forEachLimit(
    [
      ...plan.create.map((d) => () => create(d, false)),
      ...plan.update.map((c) => () => update(c.desired, c.current, c.fresh)),
      ...plan.recreate.map((c) => () => recreate(c.current, c.desired)),
      ...plan.delete.map((o) => async () => {
        if (await remove(o)) done.deleted.push(placeOf(o));
      }),
    ],
    CROSS_NAMESPACE_CONCURRENCY,
    (write) => write(),
  );
  return done;
}

/** LISTs `owner`'s children of `resource` by its labels, in `namespace` or all namespaces: one request. */
export function listOwnedAcross(args: {
  client: ResourceClient;
  resource: ResourceType;
  owner: Key;
  tracking: AppliedTracking;
  namespace?: string;
  metadataOnly: boolean;
}): Promise<KubernetesObject[]> {
  const { client, resource, owner, tracking, namespace, metadataOnly } = args;
  const labelSelector = selectorOf(tracking.labels(owner));
  return client.list(resource, namespace, { labelSelector, metadataOnly });
}

/**
 * Observes `owner`'s children of `resource`: the listing by its labels ({@link listOwnedAcross}; or
 * `listed`, that LIST already sent: metadata only when `desired` is empty, since they can then only
 * be pruned, or when the tracking has a `contentHashAnnotation`, in which case an owned desired
 * child whose content is not the kit's alone ({@link contentWrittenByKitAlone}), or whose desired
 * child carries no such annotation, is read whole: one GET each) and, when some desired child is
 * missing from that listing, the objects of the missing names (one LIST by `metadata.name` field
 * selector per name, filtered client-side as well), so that an object the owner does not own is
 * found without a failed create. The GETs, then the LISTs by name, go out together, at most
 * {@link CROSS_NAMESPACE_CONCURRENCY} at once.
 * @returns the listing, then the objects found by name
 * @throws API errors as thrown (retried)
 */
export async function observeCrossNamespaceChildren(args: {
  client: ResourceClient;
  resource: ResourceType;
  owner: Key;
  tracking: AppliedTracking;
  desired: readonly KubernetesObject[];
  namespace?: string;
  listed?: Promise<KubernetesObject[]>;
}): Promise<KubernetesObject[]> {
  const { client, resource, owner, tracking, desired, namespace } = args;
  const hash = tracking.contentHashAnnotation;
  const metadataOnly = desired.length === 0 || hash !== undefined;
  let listed = await (args.listed ?? listOwnedAcross({ ...args, metadataOnly }));
  if (hash !== undefined && desired.length > 0) {
    const wanted = new Map(desired.map((d) => [placeOf(d), d]));
    const whole = await mapLimit(listed, CROSS_NAMESPACE_CONCURRENCY, async (item) => {
      const want = wanted.get(placeOf(item));
      const known =
        !want ||
        !isPartialMetadata(item) ||
        !isOwnedAcross(item, owner, tracking) ||
        (want.metadata?.annotations?.[hash] !== undefined && contentWrittenByKitAlone(item));
      if (known) return [item];
      try {
        return [await client.get(resource, item.metadata?.namespace, item.metadata?.name ?? '')];
      } catch (err) {
        if (!isNotFound(err)) throw err;
        return []; // gone since the LIST: looked up by name below
      }
    });
    listed = whole.flat();
  }
  const seen = new Set(listed.map(placeOf));
  const missing = new Set(desired.filter((d) => !seen.has(placeOf(d))).map((d) => d.metadata?.name ?? ''));
  const others = await mapLimit([...missing], CROSS_NAMESPACE_CONCURRENCY, async (name) => {
    const found = await client.list(resource, namespace, { fieldSelector: `metadata.name=${name}` });
    return found.filter((o) => o.metadata?.name === name);
  });
  return [...listed, ...others.flat()];
}

/**
 * The key an annotation of the event's object names, `<namespace>/<name>` (operator-lib's
 * `EnqueueRequestForAnnotation`): the owner of a child in another namespace, which no owner
 * reference can point at (cross-namespace.ts); with a `clusterAnnotation` on the object (a child
 * in another cluster than its owner's), the key is in that cluster ({@link ownerClusterOf}).
 * `[]` when absent or not a key.
 */
export function mapToOwnerAnnotation(
  tracking: Pick<CrossNamespaceTracking, 'ownerAnnotation' | 'clusterAnnotation'>,
): MapFunction {
  return ({ object }) => {
    const value = object.metadata?.annotations?.[tracking.ownerAnnotation];
    const slash = value?.indexOf('/') ?? -1;
    if (!value || slash <= 0 || slash === value.length - 1) return [];
    const cluster = ownerClusterOf(object, tracking);
    return [
      { namespace: value.slice(0, slash), name: value.slice(slash + 1), ...(cluster ? { cluster } : {}) },
    ];
  };
}

/**
 * The owner's cluster a child in another cluster names in `tracking.clusterAnnotation`, or
 * `undefined` when the object carries none (a child in its owner's cluster), or one that is not a
 * cluster id (a DNS-1123 label).
 */
export function ownerClusterOf(
  object: KubernetesObject,
  tracking: Pick<CrossNamespaceTracking, 'clusterAnnotation'>,
): string | undefined {
  if (tracking.clusterAnnotation === undefined) return undefined;
  const value = object.metadata?.annotations?.[tracking.clusterAnnotation];
  return value !== undefined && isDNS1123Label(value) ? value : undefined;
}
