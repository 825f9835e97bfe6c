/**
 * What Levelset's field manager owns on a live object (`metadata.managedFields`, the `FieldsV1`
 * sets of server-side apply), and the comparison that decides whether a child needs an apply: an
 * apply happens exactly when the applied configuration changed, so that server-side apply removes
 * the fields a reconcile stopped setting (structured-merge-diff's `Updater.Apply` prunes what the
 * manager applied last time and no longer applies), while a converged object costs no write.
 *
 * The comparison reads the list keys from the server's own `FieldsV1` (`k:{"name":"x"}`,
 * `v:"a"`, `i:0`), so it needs no schema: a list whose node has no children is atomic and owned
 * as a whole.
 *
 * A created child keeps the create's `Update` entry until its first apply in another shape
 * (children.ts `createdAsDesired`: the entry counts as owning exactly the desired fields while the
 * child says it was created from a body of the same shape); {@link upgradeManagedFieldsPatch}
 * then precedes that apply, so that it prunes a field the reconcile stopped setting.
 *
 * Sources: k8s.io/apimachinery `metav1.ManagedFieldsEntry` and `FieldsV1` (the wire form of a
 * `fieldpath.Set`); client-go `util/csaupgrade.UpgradeManagedFieldsPatch` (moving the fields of a
 * manager's `Update` entry to its `Apply` entry with a JSON patch of `managedFields`, conditional on
 * `resourceVersion`).
 */
import { isDeepStrictEqual } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';

/** A `FieldsV1` node: keys `f:<field>`, `k:<json>`, `v:<json>`, `i:<index>`, and `.` (the path itself). */
export type FieldsV1 = { [element: string]: FieldsV1 };

/** One `metadata.managedFields` entry (metav1.ManagedFieldsEntry), as the wire carries it. */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: 'Apply' | 'Update';
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: FieldsV1;
  subresource?: string;
}

/** One JSON patch operation (RFC 6902), the ones used here. */
export interface JsonPatchOperation {
  op: 'replace' | 'test';
  path: string;
  value: unknown;
}

/**
 * Metadata fields the server owns and strips from every managed set (managedfields `stripMeta`:
 * name, namespace, uid, resourceVersion, generation, creationTimestamp, selfLink, managedFields).
 */
const STRIPPED_METADATA = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'selfLink',
  'managedFields',
]);

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** The entries of `object`'s managedFields written by `manager` to the main resource (not a subresource). */
export function entriesOf(object: KubernetesObject, manager: string): ManagedFieldsEntry[] {
  const entries = (object.metadata?.managedFields ?? []) as ManagedFieldsEntry[];
  return entries.filter((e) => e.manager === manager && !e.subresource);
}

/** The union of two field sets. */
export function unionFields(a: FieldsV1, b: FieldsV1): FieldsV1 {
  const out: FieldsV1 = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = k in out ? unionFields(out[k] as FieldsV1, v) : v;
  return out;
}

/** The JSON value a `k:`/`v:` element names, or `undefined` when it does not parse. */
function parseElement(element: string): unknown {
  try {
    return JSON.parse(element.slice(2));
  } catch {
    return undefined;
  }
}

/**
 * The list item of `items` that `element` (`k:{...}`, `v:...`, `i:N`) names. A `k:` key missing from
 * the item matches (a key default, e.g. a container port's `protocol: TCP`).
 */
function itemOf(items: unknown[], element: string): unknown {
  if (element.startsWith('i:')) return items[Number(element.slice(2))];
  const value = parseElement(element);
  if (element.startsWith('v:')) return items.find((item) => isDeepStrictEqual(item, value));
  if (element.startsWith('k:') && isObject(value))
    return items.find(
      (item) =>
        isObject(item) &&
        Object.entries(value).every(([k, v]) => !(k in item) || isDeepStrictEqual(item[k], v)),
    );
  return undefined;
}

/**
 * Whether `value` is an empty map or list: the same as no value at all once it has been stored, since
 * Go serializes a map or slice field tagged `omitempty` (a ConfigMap's `data`, most of the API's
 * optional lists and maps) not at all when it is empty: kube-apiserver answers a ConfigMap created with
 * `data: {}` without `data` (k8s.io/api core/v1 types.go).
 */
export function isEmptyValue(value: unknown): boolean {
  return Array.isArray(value) ? value.length === 0 : isObject(value) && Object.keys(value).length === 0;
}

/** The members of `value` that an object sets: non-null, and not stripped (apiVersion, kind, server-owned metadata). */
function members(value: Record<string, unknown>, path: readonly string[]): [string, unknown][] {
  return Object.entries(value).filter(([k, v]) => {
    if (v === null || v === undefined) return false;
    if (path.length === 0) return k !== 'apiVersion' && k !== 'kind';
    if (path.length === 1 && path[0] === 'metadata') return !STRIPPED_METADATA.has(k);
    return true;
  });
}

/**
 * The part of `fields` that `value` sets: what `fields` would be if `value` were the whole applied
 * configuration (e.g. the set a create recorded, less the fields the server defaulted).
 */
export function restrictFields(fields: FieldsV1, value: unknown, path: readonly string[] = []): FieldsV1 {
  const out: FieldsV1 = {};
  if (Object.keys(fields).length === 0) return out;
  if ('.' in fields) out['.'] = {};
  if (Array.isArray(value)) {
    for (const [element, child] of Object.entries(fields)) {
      if (element === '.') continue;
      const item = itemOf(value, element);
      if (item !== undefined) out[element] = restrictFields(child, item, [...path, element]);
    }
  } else if (isObject(value)) {
    for (const [k, v] of members(value, path)) {
      const child = fields[`f:${k}`];
      if (child) out[`f:${k}`] = restrictFields(child, v, [...path, k]);
    }
  }
  return out;
}

/**
 * Whether every path `value` sets is in `fields`: each member has its `f:` element; each item of a
 * list whose node has children has its `k:`/`v:`/`i:` element. A node without children is a leaf
 * (a scalar, an atomic list or map, an empty map): covered as a whole.
 */
export function coversFields(fields: FieldsV1, value: unknown, path: readonly string[] = []): boolean {
  const children = Object.keys(fields).filter((k) => k !== '.');
  if (children.length === 0) return true;
  if (Array.isArray(value)) {
    return value.every((item) =>
      children.some(
        (element) =>
          itemOf([item], element) !== undefined &&
          coversFields(fields[element] as FieldsV1, item, [...path, element]),
      ),
    );
  }
  if (isObject(value)) {
    return members(value, path).every(([k, v]) => {
      const child = fields[`f:${k}`];
      // A create records no field for an empty map or list ({@link isEmptyValue}); an apply does.
      return child !== undefined ? coversFields(child, v, [...path, k]) : isEmptyValue(v);
    });
  }
  return true;
}

/**
 * Whether `manager` owns exactly the fields of `applied` on `live`: it has one entry on the main
 * resource, an `Apply` entry, whose set holds every path of `applied` and nothing else. When
 * false, applying `applied` would change what `manager` owns (take new fields, or drop fields it no
 * longer sets), so an apply is due even if every applied value is already live.
 */
export function ownsExactly(live: KubernetesObject, manager: string, applied: KubernetesObject): boolean {
  const entries = entriesOf(live, manager);
  const [entry] = entries;
  if (entries.length !== 1 || entry?.operation !== 'Apply') return false;
  return holdsExactly(entry, applied);
}

/** Whether `entry`'s set holds every path of `applied` and nothing else. */
export function holdsExactly(entry: ManagedFieldsEntry, applied: KubernetesObject): boolean {
  const fields = entry.fieldsV1 ?? {};
  return coversFields(fields, applied) && isDeepStrictEqual(restrictFields(fields, applied), fields);
}

/** `YYYY-MM-DDTHH:MM:SSZ`: metav1.Time's wire form (seconds). */
const metaTime = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)}Z`;

/**
 * The JSON patch that moves `manager`'s `Update` entries on `live` into its `Apply` entry
 * (client-go `csaupgrade.UpgradeManagedFieldsPatch`): afterwards an apply by `manager` removes
 * those fields when it stops setting them (an `Update` entry's fields are never pruned by an apply,
 * being another manager's). The patch replaces `metadata.resourceVersion` too, so it fails with 409
 * Conflict when the object changed since `live` was read. The fields the server defaulted at the
 * create join the `Apply` entry too: the apply that follows releases them, and the server defaults
 * them again.
 * @returns `undefined` when `manager` has no `Update` entry (nothing to move)
 */
export function upgradeManagedFieldsPatch(
  live: KubernetesObject,
  manager: string,
): JsonPatchOperation[] | undefined {
  const all = (live.metadata?.managedFields ?? []) as ManagedFieldsEntry[];
  const mine = (e: ManagedFieldsEntry) => e.manager === manager && !e.subresource;
  const updates = all.filter((e) => mine(e) && e.operation === 'Update');
  if (updates.length === 0) return undefined;
  const applied = all.find((e) => mine(e) && e.operation === 'Apply');
  const fields = [applied, ...updates].reduce<FieldsV1>((set, e) => unionFields(set, e?.fieldsV1 ?? {}), {});
  const others = all.filter((e) => !(mine(e) && (e.operation === 'Update' || e.operation === 'Apply')));
  const entry: ManagedFieldsEntry = {
    manager,
    operation: 'Apply',
    apiVersion: applied?.apiVersion ?? live.apiVersion ?? updates[0]?.apiVersion,
    time: applied?.time ?? metaTime(Date.now()),
    fieldsType: 'FieldsV1',
    fieldsV1: fields,
  };
  const managedFields = Object.keys(fields).length > 0 ? [...others, entry] : others;
  return [
    // An empty list leaves the live managedFields as they are (managedfields); `[{}]` resets them.
    {
      op: 'replace',
      path: '/metadata/managedFields',
      value: managedFields.length > 0 ? managedFields : [{}],
    },
    // "replace" rather than "test": the API server answers 409 Conflict instead of 422 (csaupgrade).
    { op: 'replace', path: '/metadata/resourceVersion', value: live.metadata?.resourceVersion },
  ];
}
