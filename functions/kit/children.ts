/**
 * Owned children, the way the field manages them: a reconcile returns the desired children, the kit
 * creates or updates them under Levelset's field manager with a controller reference to their owner
 * (controller-runtime's `SetControllerReference`), never touches an object someone else controls
 * (sample-controller's `ErrResourceExists`), and prunes the children it finds by label and controller
 * reference that are no longer desired ("apply is easy, prune is hard": found, never guessed).
 *
 * Cost: one LIST by label per owned type (made before the reconcile, which reads it), and no write
 * when every desired child is converged: its values are live ({@link isSubset}) and Levelset's
 * field manager owns exactly its fields ({@link ownsExactly}), or the child was created from a body
 * of the desired shape, which the create recorded on it ({@link CREATED_SHAPE_ANNOTATION}), and
 * still has the create's `Update` entry ({@link createdAsDesired}). A created child costs a POST alone;
 * a changed one an apply (after a PATCH of its managedFields once, for a child a create or an older
 * Levelset left with an `Update` entry, when the apply leaves the created shape, so that it still
 * prunes the fields the reconcile stopped setting; an apply in the created shape prunes nothing and
 * needs no PATCH).
 */
import { createHash } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../../core/k8s/custom-resource.ts';
import { isConflict, isNamespaceTerminating, TerminalError } from '../../core/k8s/errors.ts';
import {
  controllerRefOf,
  type GroupVersionKind,
  isControlledBy,
  newControllerRef,
} from '../../core/k8s/owner.ts';
import { apiVersionOf } from '../../core/k8s/rest.ts';
import { ATTR, type ChildOperation, inSpan } from '../../core/k8s/tracing.ts';
import type { ResourceClient } from './client.ts';
import {
  coversFields,
  entriesOf,
  holdsExactly,
  isEmptyValue,
  ownsExactly,
  upgradeManagedFieldsPatch,
} from './managed-fields.ts';
import { quantitiesEqual } from './quantity.ts';
import type { ChildChange, OwnedType, Owner } from './types.ts';

/** Label naming the controller whose child an object is: `levelset.dev/controller=<controller name>`. */
export const CONTROLLER_LABEL = 'levelset.dev/controller';
/** Label carrying the owner's UID (a UID is a valid label value; a name may not be): `levelset.dev/owner=<uid>`. */
export const OWNER_LABEL = 'levelset.dev/owner';
/**
 * Annotation a created child carries: the shape ({@link shapeOf}) of the body it was created from,
 * so that any process, the stateless serverless one included, knows what the create's `Update`
 * entry holds beyond the server's defaults ({@link createdAsDesired}). The first apply in another
 * shape removes it (the managedFields upgrade before that apply makes it an applied field).
 */
export const CREATED_SHAPE_ANNOTATION = 'levelset.dev/created-shape';

/** Reason of the condition and Warning Event when a desired child's name is taken (sample-controller). */
export const ERR_RESOURCE_EXISTS = 'ErrResourceExists';

/** A label value: at most 63 characters, alphanumeric at both ends, `-`, `_`, `.` inside (apimachinery `validation.IsValidLabelValue`). */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/**
 * The labels of `labels` whose values Kubernetes would refuse (apimachinery
 * `validation.IsValidLabelValue`), each as `key=value: why`; `[]` when all are valid.
 */
export function invalidLabelValues(labels: Record<string, string>): string[] {
  return Object.entries(labels).flatMap(([k, v]) =>
    v.length > 63
      ? [`${k}=${v}: longer than 63 characters`]
      : LABEL_VALUE.test(v)
        ? []
        : [`${k}=${v}: not a valid label value`],
  );
}

/** `k=v,k=v`: a label selector matching every label of `labels`. */
export function selectorOf(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** The labels of `owner`'s children of `type` for `controller`. */
export function childLabels(controller: string, type: OwnedType, owner: Owner): Record<string, string> {
  return type.labels?.(owner) ?? { [CONTROLLER_LABEL]: controller, [OWNER_LABEL]: owner.metadata.uid };
}

/**
 * Whether `desired` is a subset of `live`: every member `desired` sets has the same value in `live`
 * (objects member by member, arrays element by element with equal length, scalars equal). Members
 * `desired` leaves out (server defaults, other managers' fields) are ignored. Half of the kit's
 * no-op rule (the other half: {@link ownsExactly}, so that a field the controller stops setting is
 * applied away): whether an apply would change an object's values after defaulting is not knowable
 * client-side, so what the controller sets is compared. A value the API server normalises (a
 * quantity `2000m` stored as `2`) compares by value where the built-in types hold quantities
 * (`resources.limits`, a quota's `hard`, … : {@link QUANTITY_MAPS}), so a converged child stays a
 * no-op; elsewhere a value must be written as the server stores it. An empty map or list matches an absent member
 * ({@link isEmptyValue}).
 */
export function isSubset(desired: unknown, live: unknown, parent?: string, key?: string): boolean {
  if (desired === undefined) return true;
  if ((live === undefined || live === null) && isEmptyValue(desired)) return true;
  if (desired === null) return live === null || live === undefined;
  if (Array.isArray(desired)) {
    return (
      Array.isArray(live) &&
      live.length === desired.length &&
      desired.every((d, i) => isSubset(d, live[i], parent, key))
    );
  }
  if (typeof desired === 'object') {
    if (typeof live !== 'object' || live === null || Array.isArray(live)) return false;
    const have = live as Record<string, unknown>;
    return Object.entries(desired).every(([k, v]) => isSubset(v, have[k], key, k));
  }
  if (desired === live) return true;
  // A quantity the API server stored in canonical form (`cpu: 2000m` read back as `2`).
  const quantity = QUANTITY_MAPS.has(parent ?? '') || key === 'sizeLimit';
  return (
    quantity && typeof desired === 'string' && typeof live === 'string' && quantitiesEqual(desired, live)
  );
}

/**
 * The members of the built-in types that map resource names to quantities (core/v1
 * `ResourceRequirements`, `ResourceQuotaSpec`/`Status`, `LimitRangeItem`, `PersistentVolumeSpec`,
 * `NodeStatus`, `Overhead`); with `sizeLimit`, where {@link isSubset} compares values as quantities.
 */
const QUANTITY_MAPS = new Set([
  'limits',
  'requests',
  'hard',
  'used',
  'capacity',
  'allocatable',
  'max',
  'min',
  'default',
  'defaultRequest',
  'maxLimitRequestRatio',
  'podFixed',
]);

/** `Resource "<name>" already exists and is not managed by <Kind>`, as sample-controller says it (Go's `%q`). */
export function messageResourceExists(name: string, ownerKind: string): string {
  return `Resource ${JSON.stringify(name)} already exists and is not managed by ${ownerKind}`;
}

/**
 * Where a child is, as its change says it: its name beside a namespaced owner (its namespace is the
 * owner's); `namespace/name` beside a cluster-scoped owner, whose children of one name may stand in
 * many namespaces.
 */
function childPlace(owner: Owner, namespace: string | undefined, name: string | undefined): string {
  return owner.metadata.namespace || !namespace ? `${name}` : `${namespace}/${name}`;
}

/** Runs one child write under a `child create|apply|prune` span (its API calls are the span's children). */
function childSpan<T>(operation: ChildOperation, child: string, fn: () => Promise<T>): Promise<T> {
  return inSpan(`child ${operation}`, { [ATTR.child]: child }, fn);
}

/**
 * The paths `value` sets, without their values, as a digest: objects member by member (sorted;
 * `null` and `undefined` members left out); a list whole, values included (its items' identity is
 * their key values, e.g. a container's `name`, which no schema tells here). Two bodies of one shape
 * make an apply own the same fields.
 */
export function shapeOf(value: unknown): string {
  const shape = (v: unknown): unknown =>
    Array.isArray(v)
      ? ['list', v]
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .filter(([, m]) => m !== null && m !== undefined)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, m]) => [k, shape(m)]),
          )
        : 1;
  return createHash('sha256')
    .update(JSON.stringify(shape(value)))
    .digest('base64url')
    .slice(0, 22);
}

/**
 * Whether `live` is a child created from a body of `body`'s shape ({@link shapeOf}, recorded on it:
 * {@link CREATED_SHAPE_ANNOTATION}) and nobody applied since in another shape: Levelset's manager
 * has the create's `Update` entry on it (and at most the `Apply` entry of applies in the created
 * shape), and it still holds every field `body` sets. Its fields beyond `body`'s are what the server
 * defaulted and the annotation (the create set `body`'s paths and the annotation, no more), so
 * Levelset's manager owns, in effect, exactly `body`'s fields: converged when its values are live,
 * without the managedFields PATCH that would make them its `Apply` fields (made lazily, before the
 * first apply in another shape). A child created in another shape, or by an older Levelset (no
 * annotation), may hold a field the reconcile stopped setting among them, and is not converged until
 * upgraded and applied.
 */
export function createdAsDesired(live: KubernetesObject, manager: string, body: KubernetesObject): boolean {
  if (!createdInShapeOf(live, body)) return false;
  const entries = entriesOf(live, manager);
  const updates = entries.filter((e) => e.operation === 'Update');
  const applies = entries.filter((e) => e.operation === 'Apply');
  const [update] = updates;
  const [apply] = applies;
  if (
    !update ||
    updates.length !== 1 ||
    applies.length > 1 ||
    entries.length !== updates.length + applies.length
  )
    return false;
  // Applied since in the created shape ({@link createdInShapeOf}): the Apply entry holds the desired
  // fields, the Update entry what the create set beside them (defaults, the same paths).
  return apply ? holdsExactly(apply, body) : coversFields(update.fieldsV1 ?? {}, body);
}

/**
 * Whether `live` was created from a body of `body`'s shape ({@link CREATED_SHAPE_ANNOTATION}): then
 * an apply of `body` stops owning none of the fields the create set, and needs no managedFields
 * upgrade before it (nothing to prune); a change of shape (a field dropped, a list changed) does.
 */
function createdInShapeOf(live: KubernetesObject, body: KubernetesObject): boolean {
  return live.metadata?.annotations?.[CREATED_SHAPE_ANNOTATION] === shapeOf(body);
}

export interface ChildrenInput {
  client: ResourceClient;
  controller: string;
  owner: Owner;
  /** The owned types, each with the children listed for it before the reconcile (by label). */
  owned: readonly { type: OwnedType; listed: readonly KubernetesObject[] }[];
  /** Every desired child (apiVersion, kind, metadata.name, …); namespace, labels and controller reference are set here. */
  desired: readonly KubernetesObject[];
}

/**
 * Converges `owner`'s children to `desired`: each desired child missing from its listing is created
 * (POST: atomic, so an object that appeared meanwhile under that name is never adopted unasked),
 * carrying the shape of the body it was created from ({@link CREATED_SHAPE_ANNOTATION}); the fields
 * it set are made the `Apply` fields of Levelset's manager (a JSON patch of `managedFields`,
 * client-go's `csaupgrade`; a create records an `Update` entry, whose fields an apply would never
 * remove) just before its first apply in another shape, the create's `Update` entry counting as
 * owning exactly the desired fields until then ({@link createdAsDesired}); each listed one whose values differ
 * ({@link isSubset}) or whose fields Levelset's manager owns differ from the desired ones
 * ({@link ownsExactly}) is server-side applied (conditional on the listed `resourceVersion`: a 409
 * retries the reconcile from a fresh read), so that a field the reconcile stopped setting is
 * removed; and every listed child controlled by
 * `owner` that is not desired is pruned: deleted with a UID precondition, or, for a type that says
 * `prune: 'orphan'`, let go (its controller reference and Levelset's labels removed, the object left).
 * An object already holding a desired child's name that no controller owns is adopted when its type
 * says `adopt: true` (controller-runtime's `CreateOrUpdate` with `SetControllerReference`, Kopf's
 * `adopt()`): applied with the controller reference and labels, conditional on the resourceVersion
 * read. One held by someone else is never written, and does not stop the other children. A create
 * refused because its namespace is terminating (403, cause `NamespaceTerminating`) is not an error:
 * no further child is created in that namespace, and nothing is retried (the owner goes with it).
 * @returns the changes made (`[]`: nothing written), and `conflict`: the `ErrResourceExists`
 *   {@link TerminalError} naming every desired child whose name is taken by an object `owner` does
 *   not control (the caller reports it once the others converged)
 * @throws {Error} when a desired child's type is not among the owned types, or is cluster-scoped
 *   beside a namespaced owner (Kubernetes, "Owners and dependents": programming errors); API errors
 *   as thrown (retried)
 */
export async function reconcileChildren(
  input: ChildrenInput,
): Promise<{ changes: ChildChange[]; conflict?: TerminalError }> {
  const { client, owner } = input;
  const ref = newControllerRef(owner, owner satisfies GroupVersionKind);
  const changes: ChildChange[] = [];
  const taken: string[] = [];
  const wanted = new Set<string>();
  /** Namespaces whose create was refused as terminating: no further create is sent into them. */
  const terminating = new Set<string>();
  for (const child of input.desired) {
    const entry = input.owned.find(
      (o) => apiVersionOf(o.type.resource) === child.apiVersion && o.type.resource.kind === child.kind,
    );
    if (!entry) throw new Error(`${child.apiVersion} ${child.kind} is not among the owned types (owns)`);
    const name = child.metadata?.name;
    if (!name) throw new Error(`a desired ${child.kind} has no metadata.name`);
    const resource = entry.type.resource;
    if (owner.metadata.namespace && !resource.namespaced)
      throw new Error(
        `a ${child.kind} is cluster-scoped: no owner reference may point from it at a namespaced ${owner.kind}`,
      );
    wanted.add(`${child.kind}/${owner.metadata.namespace ? '' : (child.metadata?.namespace ?? '')}/${name}`);
    const body: KubernetesObject = {
      ...child,
      metadata: {
        ...child.metadata,
        // A cluster-scoped owner's namespaced children say their namespace themselves.
        ...(resource.namespaced ? { namespace: owner.metadata.namespace || child.metadata?.namespace } : {}),
        labels: { ...child.metadata?.labels, ...childLabels(input.controller, entry.type, owner) },
        ownerReferences: [ref],
      },
    };
    const namespace = body.metadata?.namespace;
    const label = `${child.kind} ${childPlace(owner, namespace, name)}`;
    let live = entry.listed.find((o) => o.metadata?.name === name && o.metadata?.namespace === namespace);
    if (!live) {
      if (terminating.has(namespace ?? '')) continue;
      try {
        await childSpan('create', label, () =>
          client.create(resource, {
            ...body,
            metadata: {
              ...body.metadata,
              annotations: { ...body.metadata?.annotations, [CREATED_SHAPE_ANNOTATION]: shapeOf(body) },
            },
          }),
        );
        changes.push(`created ${label}`);
        continue;
      } catch (err) {
        // A namespace being deleted takes no new object, and will not again: nothing to retry
        // (each retry was a refused POST per child), the namespace's deletion removes the owner.
        if (isNamespaceTerminating(err)) {
          terminating.add(namespace ?? '');
          continue;
        }
        if (!isConflict(err)) throw err;
        // AlreadyExists: someone's object, or ours without our labels (e.g. made before the kit).
        live = await client.get(resource, namespace, name);
      }
    }
    const adopting = entry.type.adopt === true && !controllerRefOf(live);
    if (!adopting && !isControlledBy(live, owner)) {
      taken.push(messageResourceExists(name, owner.kind));
      continue;
    }
    const { ownerReferences: _, ...metadata } = body.metadata ?? {};
    if (
      !adopting &&
      isSubset({ ...body, metadata }, live) &&
      (ownsExactly(live, FIELD_MANAGER, body) || createdAsDesired(live, FIELD_MANAGER, body))
    )
      continue;
    const listed = live;
    await childSpan('apply', label, async () => {
      // Not before an apply in the shape the child was created in: it prunes nothing.
      const upgrade = createdInShapeOf(listed, body)
        ? undefined
        : upgradeManagedFieldsPatch(listed, FIELD_MANAGER);
      const current = upgrade ? await client.patch(resource, namespace, name, upgrade, 'json') : listed;
      await client.apply(resource, {
        ...body,
        // An adopted object keeps the owner references it had (apply merges the list by uid).
        metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion },
      });
    });
    changes.push(`${adopting ? 'adopted' : 'updated'} ${label}`);
  }
  for (const { type, listed } of input.owned) {
    for (const child of listed) {
      const id = `${type.resource.kind}/${owner.metadata.namespace ? '' : (child.metadata?.namespace ?? '')}/${child.metadata?.name}`;
      if (!isControlledBy(child, owner) || wanted.has(id)) continue;
      if (child.metadata && 'deletionTimestamp' in child.metadata && child.metadata.deletionTimestamp)
        continue;
      const pruned = `${type.resource.kind} ${childPlace(owner, child.metadata?.namespace, child.metadata?.name)}`;
      if (type.prune === 'orphan') {
        await childSpan('prune', pruned, () => orphan(client, type, child, owner, input.controller));
        changes.push(`orphaned ${pruned}`);
      } else if (await childSpan('prune', pruned, () => client.delete(type.resource, child)))
        changes.push(`pruned ${pruned}`);
    }
  }
  return taken.length > 0
    ? { changes, conflict: new TerminalError(ERR_RESOURCE_EXISTS, taken.join('; ')) }
    : { changes };
}

/**
 * Lets `child` go (`prune: 'orphan'`): a JSON patch removing `owner`'s controller reference and the
 * labels the kit lists children by, tested against the reference's UID so that a child adopted by
 * another owner meanwhile is left as it is (a failed test is a 422: retried from a fresh read). The
 * object stays, with its other owners, labels and fields.
 */
async function orphan(
  client: ResourceClient,
  type: OwnedType,
  child: KubernetesObject,
  owner: Owner,
  controller: string,
): Promise<void> {
  const md = child.metadata ?? {};
  const at = (md.ownerReferences ?? []).findIndex((r) => r.uid === owner.metadata.uid);
  const pointer = (key: string) => `/metadata/labels/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
  const labels = Object.keys(childLabels(controller, type, owner)).filter(
    (k) => md.labels?.[k] !== undefined,
  );
  await client.patch(
    type.resource,
    md.namespace,
    md.name ?? '',
    [
      { op: 'test', path: `/metadata/ownerReferences/${at}/uid`, value: owner.metadata.uid },
      { op: 'remove', path: `/metadata/ownerReferences/${at}` },
      ...labels.map((k) => ({ op: 'remove', path: pointer(k) })),
    ],
    'json',
  );
}
