/**
 * Server-side apply and field management as kube-apiserver does it: the structured-merge-diff rules
 * (sigs.k8s.io/structured-merge-diff v4: fieldpath sets, typed merge/compare/remove, merge.Updater)
 * and k8s.io/apimachinery/pkg/util/managedfields (managedFields entries, strip of server-owned
 * metadata, the cap of 10 Update managers, `before-first-apply`, conflict errors).
 *
 * Field sets are kept in their wire form (`fieldsV1`): an object whose keys are path elements —
 * `f:<field>`, `k:<json of the list item's keys>`, `v:<json of a set item>`, `i:<index>` — with `.`
 * marking a path that is itself a member when it also has children.
 */
import { isDeepStrictEqual } from 'node:util';
import type { JSONSchemaProps } from './resources.ts';
import { ApiError, type StatusCause } from './status.ts';

// ---------------------------------------------------------------------------------------------
// Schemas (the subset of structured-merge-diff's schema the merge rules read)

/** How a value merges: the element relationships of structured-merge-diff's schema. */
export type MergeSchema =
  | { type: 'scalar' }
  | {
      type: 'map';
      /** Declared fields (struct fields); other keys are map elements of `elementType`. */
      fields?: Record<string, MergeSchema>;
      elementType?: MergeSchema;
      /** Undeclared keys are struct fields of unknown shape (a Go struct this table does not spell out). */
      open?: boolean;
      /** `x-kubernetes-map-type: atomic` / `+structType=atomic`: replaced as a whole. */
      atomic?: boolean;
    }
  | {
      type: 'list';
      elementType: MergeSchema;
      /** `x-kubernetes-list-type`; lists without one are atomic. */
      listType: 'atomic' | 'set' | 'map';
      /** `x-kubernetes-list-map-keys` (built-ins: patchMergeKey / listMapKey). */
      keys?: string[];
      /** Key defaults used to identify items that omit the key (`protocol: TCP` of ports). */
      keyDefaults?: Record<string, unknown>;
    }
  /** Deduced from the value: maps are granular maps of deduced elements, lists atomic. */
  | { type: 'deduced' }
  /** An open struct: maps are open structs, lists atomic. */
  | { type: 'open' };

type Json = unknown;
type JsonObject = Record<string, Json>;

const SCALAR: MergeSchema = { type: 'scalar' };
const DEDUCED: MergeSchema = { type: 'deduced' };
const OPEN: MergeSchema = { type: 'open' };
const ATOMIC_LIST: MergeSchema = { type: 'list', listType: 'atomic', elementType: OPEN };

function isObject(v: Json): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function struct(fields: Record<string, MergeSchema> = {}, atomic = false): MergeSchema {
  return { type: 'map', fields, open: true, atomic };
}
const ATOMIC_STRUCT = struct({}, true);
function listMap(
  keys: string[],
  elementType: MergeSchema,
  keyDefaults?: Record<string, unknown>,
): MergeSchema {
  return { type: 'list', listType: 'map', keys, elementType, keyDefaults };
}
const SET: MergeSchema = { type: 'list', listType: 'set', elementType: SCALAR };
const CONDITIONS = listMap(['type'], struct());

/** metav1.ObjectMeta (k8s.io/apimachinery types.go list markers). */
const OBJECT_META = struct({
  finalizers: SET,
  ownerReferences: listMap(['uid'], struct()),
  managedFields: ATOMIC_LIST,
});

const KEY_REF = ATOMIC_STRUCT; // SecretKeySelector, ConfigMapKeySelector, ObjectFieldSelector, ResourceFieldSelector
const CONTAINER = struct({
  ports: listMap(['containerPort', 'protocol'], struct(), { protocol: 'TCP' }),
  env: listMap(
    ['name'],
    struct({
      valueFrom: struct({
        secretKeyRef: KEY_REF,
        configMapKeyRef: KEY_REF,
        fieldRef: KEY_REF,
        resourceFieldRef: KEY_REF,
      }),
    }),
  ),
  volumeMounts: listMap(['mountPath'], struct()),
  volumeDevices: listMap(['devicePath'], struct()),
  resources: struct({ claims: listMap(['name'], struct()) }),
});
const POD_SPEC = struct({
  volumes: listMap(['name'], struct()),
  initContainers: listMap(['name'], CONTAINER),
  containers: listMap(['name'], CONTAINER),
  ephemeralContainers: listMap(['name'], CONTAINER),
  imagePullSecrets: listMap(['name'], ATOMIC_STRUCT),
  hostAliases: listMap(['ip'], struct()),
  topologySpreadConstraints: listMap(['topologyKey', 'whenUnsatisfiable'], struct()),
  schedulingGates: listMap(['name'], struct()),
  resourceClaims: listMap(['name'], struct()),
  affinity: struct({
    nodeAffinity: struct({ requiredDuringSchedulingIgnoredDuringExecution: ATOMIC_STRUCT }),
  }),
});
const POD_STATUS = struct({
  conditions: CONDITIONS,
  podIPs: listMap(['ip'], struct()),
  hostIPs: listMap(['ip'], struct()),
});
const POD_TEMPLATE = struct({ metadata: OBJECT_META, spec: POD_SPEC });

/** The list/map merge rules of the built-in types served, keyed by `group/Kind`. */
const BUILTIN: Record<string, Record<string, MergeSchema>> = {
  '/Pod': { spec: POD_SPEC, status: POD_STATUS },
  'apps/Deployment': {
    spec: struct({ selector: ATOMIC_STRUCT, template: POD_TEMPLATE }),
    status: struct({ conditions: CONDITIONS }),
  },
  '/Namespace': { status: struct({ conditions: CONDITIONS }) },
  '/Event': { involvedObject: ATOMIC_STRUCT, related: ATOMIC_STRUCT },
  'events.k8s.io/Event': { regarding: ATOMIC_STRUCT, related: ATOMIC_STRUCT },
  '/ServiceAccount': { secrets: listMap(['name'], ATOMIC_STRUCT), imagePullSecrets: ATOMIC_LIST },
  'apiextensions.k8s.io/CustomResourceDefinition': { status: struct({ conditions: CONDITIONS }) },
};

/**
 * Go's JSON for a new, empty object of a built-in kind (runtime.ObjectCreater.New): what a create is
 * compared against, so an Update manager owns `.` of the maps it adds but not of the structs Go
 * always serializes.
 */
const EMPTY: Record<string, JsonObject> = {
  '/Namespace': { spec: {}, status: {} },
  '/Pod': { spec: { containers: null }, status: {} },
  'apps/Deployment': {
    spec: {
      selector: null,
      template: { metadata: { creationTimestamp: null }, spec: { containers: null } },
      strategy: {},
    },
    status: {},
  },
  '/Event': {
    involvedObject: {},
    source: {},
    firstTimestamp: null,
    lastTimestamp: null,
    eventTime: null,
    reportingComponent: '',
    reportingInstance: '',
  },
  'events.k8s.io/Event': {
    eventTime: null,
    regarding: {},
    deprecatedSource: {},
    deprecatedFirstTimestamp: null,
    deprecatedLastTimestamp: null,
  },
  'coordination.k8s.io/Lease': { spec: {} },
  'apiextensions.k8s.io/CustomResourceDefinition': {
    spec: { group: '', names: { plural: '', kind: '' }, scope: '', versions: null },
    status: { acceptedNames: { plural: '', kind: '' }, storedVersions: null },
  },
  'rbac.authorization.k8s.io/Role': { rules: null },
  'rbac.authorization.k8s.io/ClusterRole': { rules: null },
  'rbac.authorization.k8s.io/RoleBinding': { roleRef: { apiGroup: '', kind: '', name: '' } },
  'rbac.authorization.k8s.io/ClusterRoleBinding': { roleRef: { apiGroup: '', kind: '', name: '' } },
};

/** The type a resource's objects have, as the merge rules need it. */
export interface TypeInfo {
  group: string;
  kind: string;
  /** `group/version` of the request. */
  apiVersion: string;
  /** The CRD's schema for this version, for custom resources. */
  customSchema?: JSONSchemaProps;
  custom: boolean;
}

const customSchemas = new WeakMap<JSONSchemaProps, MergeSchema>();

/** The merge schema of a type: the built-in table, or the CRD's OpenAPI v3 schema. */
export function schemaOf(t: TypeInfo): MergeSchema {
  if (t.custom) {
    if (!t.customSchema) return { type: 'map', fields: { metadata: OBJECT_META }, elementType: DEDUCED };
    let s = customSchemas.get(t.customSchema);
    if (!s) {
      const root = fromOpenApi(t.customSchema);
      s =
        root.type === 'map'
          ? { ...root, fields: { ...root.fields, apiVersion: SCALAR, kind: SCALAR, metadata: OBJECT_META } }
          : root;
      customSchemas.set(t.customSchema, s);
    }
    return s;
  }
  return struct({ metadata: OBJECT_META, ...BUILTIN[`${t.group}/${t.kind}`] });
}

/** A new, empty object of the type (the live object an apply creates from, a create compares to). */
export function emptyObject(t: TypeInfo): JsonObject {
  const base = t.custom ? {} : { metadata: { creationTimestamp: null } };
  return {
    apiVersion: t.apiVersion,
    kind: t.kind,
    ...base,
    ...structuredClone(EMPTY[`${t.group}/${t.kind}`] ?? {}),
  };
}

/** apiextensions JSONSchemaProps → merge schema (x-kubernetes-list-type/-list-map-keys/-map-type). */
export function fromOpenApi(p: JSONSchemaProps | undefined): MergeSchema {
  if (!p) return DEDUCED;
  if (p['x-kubernetes-int-or-string']) return SCALAR;
  const preserve = p['x-kubernetes-preserve-unknown-fields'] === true;
  if (p.type === 'array') {
    const items = p.items;
    const listType = (p['x-kubernetes-list-type'] as 'atomic' | 'set' | 'map' | undefined) ?? 'atomic';
    const keys = (p['x-kubernetes-list-map-keys'] as string[] | undefined) ?? [];
    const keyDefaults: Record<string, unknown> = {};
    for (const k of keys) {
      const d = items?.properties?.[k]?.default;
      if (d !== undefined) keyDefaults[k] = d;
    }
    return { type: 'list', listType, keys, keyDefaults, elementType: fromOpenApi(items) };
  }
  if (p.type === 'object' || p.properties || p.additionalProperties) {
    const fields: Record<string, MergeSchema> = {};
    for (const [k, v] of Object.entries(p.properties ?? {})) fields[k] = fromOpenApi(v);
    let elementType: MergeSchema | undefined;
    if (isObject(p.additionalProperties))
      elementType = fromOpenApi(p.additionalProperties as JSONSchemaProps);
    else if (p.additionalProperties === true || preserve) elementType = DEDUCED;
    if (p['x-kubernetes-embedded-resource']) fields.metadata = OBJECT_META;
    return { type: 'map', fields, elementType, atomic: p['x-kubernetes-map-type'] === 'atomic' };
  }
  if (preserve || !p.type) return DEDUCED;
  return SCALAR;
}

/** The concrete schema for a value: deduced/open schemas take the value's shape. */
function resolve(s: MergeSchema, v: Json): MergeSchema {
  if (s.type === 'deduced') {
    if (isObject(v)) return { type: 'map', elementType: DEDUCED };
    if (Array.isArray(v)) return { type: 'list', listType: 'atomic', elementType: DEDUCED };
    return SCALAR;
  }
  if (s.type === 'open') {
    if (isObject(v)) return { type: 'map', fields: {}, open: true };
    if (Array.isArray(v)) return ATOMIC_LIST;
    return SCALAR;
  }
  return s;
}

/** The schema of a map key and whether it is a declared (named) field. */
function fieldOf(s: MergeSchema, key: string): { schema: MergeSchema; named: boolean } {
  if (s.type === 'map') {
    const f = s.fields?.[key];
    if (f) return { schema: f, named: true };
    if (s.elementType) return { schema: s.elementType, named: false };
    if (s.open) return { schema: OPEN, named: true };
    return { schema: DEDUCED, named: false };
  }
  if (s.type === 'open') return { schema: OPEN, named: true };
  return { schema: DEDUCED, named: false };
}

function elementOf(s: MergeSchema): MergeSchema {
  return s.type === 'list' ? s.elementType : DEDUCED;
}

// ---------------------------------------------------------------------------------------------
// Field sets (fieldpath.Set) in their fieldsV1 form

/** A fieldpath.Set: members (paths in the set) and children (sets under a path element). */
export class FieldSet {
  readonly members = new Set<string>();
  readonly children = new Map<string, FieldSet>();

  static fromFieldsV1(fields: Json): FieldSet {
    const s = new FieldSet();
    if (!isObject(fields)) return s;
    for (const [pe, sub] of Object.entries(fields)) {
      if (pe === '.') continue;
      if (!isObject(sub) || Object.keys(sub).length === 0) {
        s.members.add(pe);
        continue;
      }
      if ('.' in sub) s.members.add(pe);
      const child = FieldSet.fromFieldsV1(sub);
      if (!child.empty()) s.children.set(pe, child);
    }
    return s;
  }

  /** The fieldsV1 JSON, path elements sorted as fieldpath.PathElement.Compare orders them. */
  toFieldsV1(): JsonObject {
    const out: JsonObject = {};
    const keys = [...new Set([...this.members, ...this.children.keys()])].sort(comparePathElements);
    for (const pe of keys) {
      const child = this.children.get(pe);
      if (!child) out[pe] = {};
      else out[pe] = this.members.has(pe) ? { '.': {}, ...child.toFieldsV1() } : child.toFieldsV1();
    }
    return out;
  }

  empty(): boolean {
    return this.members.size === 0 && this.children.size === 0;
  }

  child(pe: string): FieldSet {
    let c = this.children.get(pe);
    if (!c) {
      c = new FieldSet();
      this.children.set(pe, c);
    }
    return c;
  }

  insert(path: readonly string[]): void {
    if (path.length === 0) return;
    let s: FieldSet = this;
    for (let i = 0; i < path.length - 1; i++) s = s.child(path[i] as string);
    s.members.add(path[path.length - 1] as string);
  }

  has(path: readonly string[]): boolean {
    let s: FieldSet | undefined = this;
    for (let i = 0; i < path.length - 1 && s; i++) s = s.children.get(path[i] as string);
    return !!s && s.members.has(path[path.length - 1] as string);
  }

  union(o: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const m of this.members) out.members.add(m);
    for (const m of o.members) out.members.add(m);
    for (const [pe, c] of this.children) {
      const oc = o.children.get(pe);
      out.children.set(pe, oc ? c.union(oc) : c.clone());
    }
    for (const [pe, c] of o.children) if (!this.children.has(pe)) out.children.set(pe, c.clone());
    return out;
  }

  /** Paths in this set and not in `o` (fieldpath.Set.Difference: not recursive on members). */
  difference(o: FieldSet): FieldSet {
    return this.#minus(o, false);
  }

  /** Removes paths in `o` and every path under a member of `o` (fieldpath.Set.RecursiveDifference). */
  recursiveDifference(o: FieldSet): FieldSet {
    return this.#minus(o, true);
  }

  #minus(o: FieldSet, recursive: boolean): FieldSet {
    const out = new FieldSet();
    for (const m of this.members) if (!o.members.has(m)) out.members.add(m);
    for (const [pe, c] of this.children) {
      if (recursive && o.members.has(pe)) continue;
      const oc = o.children.get(pe);
      const d = oc ? c.#minus(oc, recursive) : c.clone();
      if (!d.empty()) out.children.set(pe, d);
    }
    return out;
  }

  intersection(o: FieldSet): FieldSet {
    const out = new FieldSet();
    for (const m of this.members) if (o.members.has(m)) out.members.add(m);
    for (const [pe, c] of this.children) {
      const oc = o.children.get(pe);
      if (!oc) continue;
      const i = c.intersection(oc);
      if (!i.empty()) out.children.set(pe, i);
    }
    return out;
  }

  clone(): FieldSet {
    return this.union(new FieldSet());
  }

  /** Every path, members of a node before its children, in sorted order (fieldpath.Set.Iterate). */
  paths(prefix: string[] = [], out: string[][] = []): string[][] {
    for (const m of [...this.members].sort(comparePathElements)) out.push([...prefix, m]);
    for (const pe of [...this.children.keys()].sort(comparePathElements))
      this.children.get(pe)?.paths([...prefix, pe], out);
    return out;
  }
}

const PE_ORDER: Record<string, number> = { f: 0, k: 1, v: 2, i: 3 };

/** Go's value.Compare: numbers < strings < booleans < lists < maps < null. */
function compareValues(a: Json, b: Json): number {
  const rank = (v: Json) =>
    typeof v === 'number'
      ? 0
      : typeof v === 'string'
        ? 1
        : typeof v === 'boolean'
          ? 2
          : Array.isArray(v)
            ? 3
            : isObject(v)
              ? 4
              : 5;
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 0) return (a as number) - (b as number);
  if (ra === 1) return a === b ? 0 : (a as string) < (b as string) ? -1 : 1;
  if (ra === 2) return a === b ? 0 : a ? 1 : -1;
  const sa = JSON.stringify(a);
  const sb = JSON.stringify(b);
  return sa === sb ? 0 : sa < sb ? -1 : 1;
}

/** fieldpath.PathElement.Compare over serialized path elements. */
export function comparePathElements(a: string, b: string): number {
  const ta = PE_ORDER[a[0] as string] ?? 4;
  const tb = PE_ORDER[b[0] as string] ?? 4;
  if (ta !== tb) return ta - tb;
  const va = a.slice(2);
  const vb = b.slice(2);
  if (ta === 0) return va === vb ? 0 : va < vb ? -1 : 1;
  if (ta === 3) return Number(va) - Number(vb);
  const ja = JSON.parse(va) as Json;
  const jb = JSON.parse(vb) as Json;
  if (ta === 2) return compareValues(ja, jb);
  const ea = Object.entries(ja as JsonObject);
  const eb = Object.entries(jb as JsonObject);
  for (let i = 0; ; i++) {
    if (i >= ea.length && i >= eb.length) return 0;
    if (i >= ea.length) return -1;
    if (i >= eb.length) return 1;
    const [na, xa] = ea[i] as [string, Json];
    const [nb, xb] = eb[i] as [string, Json];
    if (na !== nb) return na < nb ? -1 : 1;
    const c = compareValues(xa, xb);
    if (c !== 0) return c;
  }
}

/** value.ToString: strings quoted as Go's %q. */
function valueString(v: Json): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** fieldpath.Path.String(): `.spec.containers[name="c"].image`, `.finalizers[="x"]`, `[0]`. */
export function pathString(path: readonly string[]): string {
  return path
    .map((pe) => {
      const rest = pe.slice(2);
      switch (pe[0]) {
        case 'f':
          return `.${rest}`;
        case 'k':
          return `[${Object.entries(JSON.parse(rest) as JsonObject)
            .map(([k, v]) => `${k}=${valueString(v)}`)
            .join(',')}]`;
        case 'v':
          return `[=${valueString(JSON.parse(rest))}]`;
        default:
          return `[${rest}]`;
      }
    })
    .join('');
}

// ---------------------------------------------------------------------------------------------
// Typed operations (typed.TypedValue: ToFieldSet, Compare, Merge, RemoveItems)

/** The path element of a list item, or an error message (associative list rules). */
function itemElement(s: Extract<MergeSchema, { type: 'list' }>, item: Json, index: number): string {
  if (s.listType === 'set') return `v:${JSON.stringify(item)}`;
  if (s.listType === 'map') {
    if (!isObject(item)) {
      throw typeError(
        item === null
          ? 'associative list with keys may not have a null element'
          : 'associative list with keys may not have non-map elements',
      );
    }
    const key: JsonObject = {};
    for (const k of [...(s.keys ?? [])].sort()) {
      if (k in item) key[k] = item[k];
      else if (s.keyDefaults && k in s.keyDefaults) key[k] = s.keyDefaults[k];
      else
        throw typeError(
          `associative list with keys has an element that omits key field "${k}" (and doesn't have default value)`,
        );
    }
    return `k:${JSON.stringify(key)}`;
  }
  return `i:${index}`;
}

/** A value that does not fit its schema (typed.ValidationErrors). */
export class SchemaError extends Error {}
function typeError(message: string): SchemaError {
  return new SchemaError(message);
}

function isEmptyContainer(v: Json): boolean {
  return (
    v === null ||
    v === undefined ||
    (Array.isArray(v) ? v.length === 0 : isObject(v) && Object.keys(v).length === 0)
  );
}

/** The paths a value sets (TypedValue.ToFieldSet). */
export function toFieldSet(value: Json, schema: MergeSchema): FieldSet {
  const root = new FieldSet();
  collect(value, schema, root);
  return root;
}

/** Adds the paths under `value` to `node` (the set at the value's own path). */
function collect(value: Json, schema: MergeSchema, node: FieldSet): void {
  const s = resolve(schema, value);
  if (s.type === 'map' && isObject(value) && !s.atomic) {
    for (const [k, v] of Object.entries(value)) {
      const pe = `f:${k}`;
      const f = fieldOf(s, k);
      const fs = resolve(f.schema, v);
      if (
        fs.type === 'scalar' ||
        (fs.type === 'map' && fs.atomic) ||
        (fs.type === 'list' && fs.listType === 'atomic')
      ) {
        node.members.add(pe);
        continue;
      }
      const child = node.child(pe);
      collect(v, fs, child);
      if (child.empty()) node.children.delete(pe);
      if (v === null || (isObject(v) && Object.keys(v).length === 0) || !f.named) node.members.add(pe);
    }
  } else if (s.type === 'list' && Array.isArray(value) && s.listType !== 'atomic') {
    value.forEach((item, i) => {
      const pe = itemElement(s, item, i);
      const es = resolve(s.elementType, item);
      if (
        !(
          es.type === 'scalar' ||
          (es.type === 'map' && es.atomic) ||
          (es.type === 'list' && es.listType === 'atomic')
        )
      ) {
        const child = node.child(pe);
        collect(item, es, child);
        if (child.empty()) node.children.delete(pe);
      }
      node.members.add(pe);
    });
  }
}

function isLeaf(s: MergeSchema, lhs: Json, rhs: Json): boolean {
  if (s.type === 'scalar') return true;
  if (s.type === 'map') {
    if (s.atomic) return true;
    if (
      (lhs !== undefined && lhs !== null && !isObject(lhs)) ||
      (rhs !== undefined && rhs !== null && !isObject(rhs))
    )
      return true;
  } else if (s.type === 'list') {
    if (s.listType === 'atomic') return true;
    if (
      (lhs !== undefined && lhs !== null && !Array.isArray(lhs)) ||
      (rhs !== undefined && rhs !== null && !Array.isArray(rhs))
    )
      return true;
  }
  return isEmptyContainer(lhs) && isEmptyContainer(rhs);
}

/** The schema shared by both sides, or `undefined` when deduced shapes differ (a leaf). */
function resolvePair(schema: MergeSchema, lhs: Json, rhs: Json): MergeSchema {
  if (schema.type !== 'deduced' && schema.type !== 'open') return schema;
  const l = lhs === undefined ? undefined : resolve(schema, lhs);
  const r = rhs === undefined ? undefined : resolve(schema, rhs);
  if (l && r && l.type !== r.type) return SCALAR;
  return (r ?? l) as MergeSchema;
}

interface ListIndex {
  order: string[];
  items: Map<string, Json>;
}

function indexList(s: Extract<MergeSchema, { type: 'list' }>, list: Json): ListIndex {
  const order: string[] = [];
  const items = new Map<string, Json>();
  if (!Array.isArray(list)) return { order, items };
  list.forEach((item, i) => {
    const pe = itemElement(s, item, i);
    order.push(pe);
    if (!items.has(pe)) items.set(pe, item);
  });
  return { order, items };
}

/**
 * Walks two values as structured-merge-diff's mergingWalker does: `leaf` runs on leaves (scalars,
 * atomic values, both-empty containers), `post` after every non-leaf list item and map field.
 * Returns the merged value (rhs over lhs; list items in the merged order).
 */
function walk(
  lhs: Json,
  rhs: Json,
  schema: MergeSchema,
  path: string[],
  leaf: ((lhs: Json, rhs: Json, path: string[]) => void) | undefined,
  post: ((lhs: Json, rhs: Json, path: string[]) => void) | undefined,
): Json {
  const s = resolvePair(schema, lhs, rhs);
  if (isLeaf(s, lhs, rhs)) {
    leaf?.(lhs, rhs, path);
    return rhs !== undefined ? rhs : lhs;
  }
  let out: Json;
  if (s.type === 'map') {
    const l = isObject(lhs) ? lhs : {};
    const r = isObject(rhs) ? rhs : {};
    const merged: JsonObject = {};
    for (const k of new Set([...Object.keys(l), ...Object.keys(r)])) {
      const v = walk(l[k], r[k], fieldOf(s, k).schema, [...path, `f:${k}`], leaf, post);
      if (v !== undefined) merged[k] = v;
    }
    out = Object.keys(merged).length > 0 ? merged : undefined;
  } else if (s.type === 'list') {
    out = walkList(s, lhs, rhs, path, leaf, post);
  }
  if (path.length > 0) post?.(lhs, rhs, path);
  return out;
}

function walkList(
  s: Extract<MergeSchema, { type: 'list' }>,
  lhs: Json,
  rhs: Json,
  path: string[],
  leaf: ((lhs: Json, rhs: Json, path: string[]) => void) | undefined,
  post: ((lhs: Json, rhs: Json, path: string[]) => void) | undefined,
): Json {
  const L = indexList(s, lhs);
  const R = indexList(s, rhs);
  const out: Json[] = [];
  const item = (pe: string, l: Json, r: Json) => {
    const v = walk(l, r, s.elementType, [...path, pe], leaf, post);
    if (v !== undefined) out.push(v);
  };
  // merge.visitListItems: shared items in rhs order, lhs-only items kept at their positions.
  const shared = R.order.filter((pe) => L.items.has(pe));
  let next = shared.shift();
  const mergedRhs = new Set<string>();
  let li = 0;
  let ri = 0;
  while (li < L.order.length || ri < R.order.length) {
    if (li < L.order.length && ri < R.order.length) {
      const pe = L.order[li] as string;
      if (pe === R.order[ri]) {
        mergedRhs.add(pe);
        item(pe, L.items.get(pe), R.items.get(pe));
        li++;
        ri++;
        next = shared.shift();
        continue;
      }
      if (R.items.has(pe) && next !== undefined && next !== pe) {
        li++;
        continue;
      }
    }
    if (li < L.order.length) {
      const pe = L.order[li] as string;
      if (!R.items.has(pe)) {
        item(pe, (lhs as Json[])[li], undefined);
        li++;
        continue;
      }
      if (mergedRhs.has(pe)) {
        li++;
        continue;
      }
    }
    if (ri < R.order.length) {
      const pe = R.order[ri] as string;
      mergedRhs.add(pe);
      item(pe, L.items.get(pe), R.items.get(pe));
      ri++;
      if (next !== undefined && next === pe) next = shared.shift();
    }
  }
  return out.length > 0 ? out : undefined;
}

/** The changes from `lhs` to `rhs` (typed.Comparison). */
export interface Comparison {
  added: FieldSet;
  removed: FieldSet;
  modified: FieldSet;
}

/** TypedValue.Compare. */
export function compare(lhs: Json, rhs: Json, schema: MergeSchema): Comparison {
  const c: Comparison = { added: new FieldSet(), removed: new FieldSet(), modified: new FieldSet() };
  walk(
    lhs,
    rhs,
    schema,
    [],
    (l, r, path) => {
      if (l === undefined) c.added.insert(path);
      else if (r === undefined) c.removed.insert(path);
      else if (!isDeepStrictEqual(l, r)) c.modified.insert(path);
    },
    (l, r, path) => {
      if (l === undefined) c.added.insert(path);
      else if (r === undefined) c.removed.insert(path);
    },
  );
  return c;
}

/** TypedValue.Merge: `rhs` over `lhs`, granular where the schema says so. */
export function merge(lhs: Json, rhs: Json, schema: MergeSchema): Json {
  return walk(lhs, rhs, schema, [], undefined, undefined);
}

/** TypedValue.RemoveItems: drops the members of `set` (and what is under them). */
export function removeItems(value: Json, set: FieldSet, schema: MergeSchema): Json {
  const s = resolve(schema, value);
  if (s.type === 'map' && isObject(value)) {
    if (s.atomic || Object.keys(value).length === 0) return s.atomic ? undefined : value;
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(value)) {
      const pe = `f:${k}`;
      if (set.members.has(pe)) continue;
      const sub = set.children.get(pe);
      const nv = sub ? removeItems(v, sub, fieldOf(s, k).schema) : v;
      if (nv !== undefined) out[k] = nv;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }
  if (s.type === 'list' && Array.isArray(value)) {
    if (s.listType === 'atomic' || value.length === 0) return s.listType === 'atomic' ? undefined : value;
    const out: Json[] = [];
    value.forEach((item, i) => {
      const pe = itemElement(s, item, i);
      if (set.members.has(pe)) return;
      const sub = set.children.get(pe);
      const nv = sub ? removeItems(item, sub, s.elementType) : item;
      if (nv !== undefined) out.push(nv);
    });
    return out.length > 0 ? out : undefined;
  }
  return value;
}

/** Set.EnsureNamedFieldsAreMembers: a named (struct) field with children also becomes a member. */
export function ensureNamedFieldsAreMembers(set: FieldSet, schema: MergeSchema): FieldSet {
  const out = new FieldSet();
  for (const m of set.members) out.members.add(m);
  for (const [pe, c] of set.children) {
    let sub: MergeSchema;
    if (pe.startsWith('f:')) {
      const f = fieldOf(schema, pe.slice(2));
      if (f.named && (schema.type === 'map' || schema.type === 'open')) out.members.add(pe);
      sub = f.schema;
    } else sub = elementOf(schema);
    const e = ensureNamedFieldsAreMembers(
      c,
      sub.type === 'open' ? { type: 'map', fields: {}, open: true } : sub,
    );
    if (!e.empty()) out.children.set(pe, e);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Managers (merge.Updater and k8s.io/apimachinery/pkg/util/managedfields)

/** One metav1.ManagedFieldsEntry, decoded. */
export interface Manager {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  /** metav1.Time, seconds precision RFC 3339; absent when the manager's write changed nothing. */
  time?: string;
  subresource?: string;
  set: FieldSet;
}

/** BuildManagerIdentifier: appliers are one manager across versions, updaters one per version. */
type ManagerInfo = Pick<Manager, 'manager' | 'operation' | 'apiVersion' | 'subresource'>;

/** The entry fields of `manager` doing `operation` in this request (its apiVersion and subresource). */
function managerInfo(
  manager: string,
  operation: Manager['operation'],
  ctx: FieldManagerContext,
): ManagerInfo {
  return { manager, operation, apiVersion: ctx.apiVersion, subresource: ctx.subresource };
}

function identity(m: ManagerInfo): string {
  return JSON.stringify([
    m.manager,
    m.operation,
    m.operation === 'Update' ? m.apiVersion : '',
    m.subresource ?? '',
  ]);
}

/** The wire metav1.ManagedFieldsEntry list, or `undefined` when it is not a valid one. */
export function decodeManagedFields(entries: Json): Map<string, Manager> | undefined {
  if (!Array.isArray(entries)) return undefined;
  const out = new Map<string, Manager>();
  for (const e of entries) {
    if (!isObject(e)) return undefined;
    if (e.operation !== 'Apply' && e.operation !== 'Update') return undefined;
    if (typeof e.apiVersion !== 'string' || !e.apiVersion) return undefined;
    if (e.fieldsType !== 'FieldsV1') return undefined;
    const m: Manager = {
      manager: typeof e.manager === 'string' ? e.manager : '',
      operation: e.operation,
      apiVersion: e.apiVersion,
      set: FieldSet.fromFieldsV1(e.fieldsV1),
    };
    // metav1.Time: re-serialized at seconds precision (clients may send milliseconds).
    if (typeof e.time === 'string' && !Number.isNaN(Date.parse(e.time)))
      m.time = new Date(Date.parse(e.time)).toISOString().replace(/\.\d{3}Z$/, 'Z');
    if (typeof e.subresource === 'string' && e.subresource) m.subresource = e.subresource;
    out.set(identity(m), m);
  }
  return out;
}

/** encodeManagedFields: sorted by operation, time, manager, apiVersion, subresource. */
export function encodeManagedFields(managers: Map<string, Manager>): JsonObject[] | undefined {
  if (managers.size === 0) return undefined;
  const list = [...managers.values()];
  const secs = (m: Manager) => (m.time ? Date.parse(m.time) : 0);
  list.sort(
    (p, q) =>
      cmp(p.operation, q.operation) ||
      secs(p) - secs(q) ||
      cmp(p.manager, q.manager) ||
      cmp(p.apiVersion, q.apiVersion) ||
      cmp(p.subresource ?? '', q.subresource ?? ''),
  );
  return list.map((m) => {
    const e: JsonObject = {};
    if (m.manager) e.manager = m.manager; // omitempty
    e.operation = m.operation;
    e.apiVersion = m.apiVersion;
    if (m.time) e.time = m.time;
    e.fieldsType = 'FieldsV1';
    e.fieldsV1 = m.set.toFieldsV1();
    if (m.subresource) e.subresource = m.subresource;
    return e;
  });
}

function cmp(a: string, b: string): number {
  return a === b ? 0 : a < b ? -1 : 1;
}

/** True for `[{}]`: a request that resets managedFields (managedfields isResetManagedFields). */
export function isResetManagedFields(entries: Json): boolean {
  return (
    Array.isArray(entries) &&
    entries.length === 1 &&
    isObject(entries[0]) &&
    Object.keys(entries[0]).length === 0
  );
}

/** The fields kube-apiserver never tracks (managedfields stripMetaManager). */
const STRIP = new FieldSet();
for (const p of [
  ['f:apiVersion'],
  ['f:kind'],
  ['f:metadata'],
  ...[
    'name',
    'namespace',
    'creationTimestamp',
    'selfLink',
    'uid',
    'clusterName',
    'generation',
    'managedFields',
    'resourceVersion',
  ].map((f) => ['f:metadata', `f:${f}`]),
])
  STRIP.insert(p);

/** The cap on Update managers before the oldest merge into `ancient-changes` (DefaultMaxUpdateManagers). */
export const MAX_UPDATE_MANAGERS = 10;

/** metav1.Time now: RFC 3339, seconds precision. */
function nowTime(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** One conflict: a field another manager owns with a different value (merge.Conflict). */
export interface Conflict {
  manager: Manager;
  path: string[];
}

/** printManager: `"name"`, ` with subresource "status"`, and ` using <apiVersion>` for updaters. */
function printManager(m: Manager): string {
  let s = JSON.stringify(m.manager);
  if (m.subresource) s += ` with subresource ${JSON.stringify(m.subresource)}`;
  if (m.operation === 'Update') s += ` using ${m.apiVersion}`;
  return s;
}

/** A 409 apply conflict that keeps its conflicts (for the client-side apply upgrade). */
export class ConflictError extends ApiError {
  readonly conflicts: Conflict[];
  constructor(conflicts: Conflict[], status: ApiError['status']) {
    super(status);
    this.conflicts = conflicts;
  }
}

/** 409 Conflict as managedfields NewConflictError words it (errors.NewApplyConflict). */
export function conflictError(conflicts: Conflict[]): ConflictError {
  const causes: StatusCause[] = conflicts.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with ${printManager(c.manager)}`,
    field: pathString(c.path),
  }));
  let message: string;
  const first = conflicts[0] as Conflict;
  if (conflicts.length === 1) {
    message = `Apply failed with 1 conflict: conflict with ${printManager(first.manager)}: ${pathString(first.path)}`;
  } else {
    const byManager = new Map<string, Conflict[]>();
    for (const c of conflicts) {
      const k = identity(c.manager);
      byManager.set(k, [...(byManager.get(k) ?? []), c]);
    }
    const lines: string[] = [];
    for (const k of [...byManager.keys()].sort()) {
      const cs = byManager.get(k) as Conflict[];
      lines.push(`conflicts with ${printManager((cs[0] as Conflict).manager)}:`);
      for (const c of cs) lines.push(`- ${pathString(c.path)}`);
    }
    message = `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`;
  }
  return new ConflictError(conflicts, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: 'Conflict',
    details: { causes },
    code: 409,
  });
}

/** What a write does to field ownership: the object's managers after it. */
export interface FieldManagerContext {
  schema: MergeSchema;
  apiVersion: string;
  /** Fields the endpoint resets (strategy GetResetFields): `status` on the main resource, all but `status` on /status. */
  ignored: FieldSet;
  subresource?: string;
}

/** Fields reset by the endpoint: `status` for the main resource of a type with /status; all but status for /status. */
export function resetFields(obj: JsonObject, statusSubresource: boolean, subresource?: string): FieldSet {
  const s = new FieldSet();
  if (subresource === 'status') {
    for (const k of Object.keys(obj)) if (k !== 'status' && k !== 'metadata') s.insert([`f:${k}`]);
    for (const k of ['spec']) s.insert([`f:${k}`]);
  } else if (statusSubresource) s.insert(['f:status']);
  return s;
}

function filtered(c: Comparison, ignored: FieldSet): Comparison {
  if (ignored.empty()) return c;
  return {
    added: c.added.recursiveDifference(ignored),
    removed: c.removed.recursiveDifference(ignored),
    modified: c.modified.recursiveDifference(ignored),
  };
}

/** merge.Updater.update: takes changed fields from other managers (or reports them as conflicts). */
function takeOwnership(
  live: Json,
  next: Json,
  managers: Map<string, Manager>,
  self: string,
  force: boolean,
  ctx: FieldManagerContext,
): Comparison {
  const c = filtered(compare(live, next, ctx.schema), ctx.ignored);
  const changed = c.modified.union(c.added);
  const conflicts: Conflict[] = [];
  const taken = new Map<string, FieldSet>();
  for (const [id, m] of managers) {
    if (id === self) continue;
    const overlap = m.set.intersection(changed);
    if (!overlap.empty()) {
      taken.set(id, overlap);
      for (const path of overlap.paths()) conflicts.push({ manager: m, path });
    }
  }
  if (!force && conflicts.length > 0) throw conflictError(conflicts);
  for (const [id, m] of managers) {
    if (id === self) continue;
    let set = m.set;
    const t = taken.get(id);
    if (t) set = set.difference(t);
    if (!c.removed.empty()) set = set.difference(c.removed);
    if (set.empty()) managers.delete(id);
    else managers.set(id, { ...m, set });
  }
  return c;
}

function capUpdateManagers(managers: Map<string, Manager>): void {
  const updaters = [...managers.entries()].filter(([, m]) => m.operation === 'Update');
  if (updaters.length <= MAX_UPDATE_MANAGERS) return;
  const secs = (m: Manager) => (m.time ? Math.floor(Date.parse(m.time) / 1000) : 0);
  updaters.sort(([ia, a], [ib, b]) => secs(a) - secs(b) || cmp(ia, ib));
  const firstByVersion = new Map<string, string>();
  let length = updaters.length;
  for (const [id, m] of updaters) {
    if (length <= MAX_UPDATE_MANAGERS) break;
    const bucketInfo = { manager: 'ancient-changes', operation: 'Update' as const, apiVersion: m.apiVersion };
    const bucket = identity(bucketInfo);
    const first = firstByVersion.get(m.apiVersion);
    if (first === undefined) {
      firstByVersion.set(m.apiVersion, id);
      continue;
    }
    if (!managers.has(bucket)) {
      const f = managers.get(first) as Manager;
      managers.delete(first);
      managers.set(bucket, { ...bucketInfo, set: f.set, time: f.time });
    }
    const b = managers.get(bucket) as Manager;
    managers.set(bucket, { ...b, set: m.set.union(b.set), time: m.time });
    managers.delete(id);
    length--;
  }
}

/**
 * Records a create/update/patch (any write but apply) as an `Update` manager: the fields it changed
 * become its own and leave every other manager (managedfields managedFieldsUpdater + Updater.Update).
 * Mutates and returns `managers`.
 */
export function recordUpdate(
  live: Json,
  next: Json,
  managers: Map<string, Manager>,
  manager: string,
  ctx: FieldManagerContext,
): Map<string, Manager> {
  const self = '\u0000current-operation';
  const c = takeOwnership(live, next, managers, self, true, ctx);
  const set = c.modified.union(c.added).recursiveDifference(ctx.ignored).difference(STRIP);
  if (!set.empty()) {
    const info = managerInfo(manager, 'Update', ctx);
    const id = identity(info);
    const previous = managers.get(id);
    managers.set(id, { ...info, set: previous ? set.union(previous.set) : set, time: nowTime() });
  }
  capUpdateManagers(managers);
  return managers;
}

/** The result of an apply: the object to persist and the managers after it. */
export interface ApplyResult {
  object: JsonObject;
  managers: Map<string, Manager>;
}

/**
 * Server-side apply of `config` by `manager` onto `live` (merge.Updater.Apply with the managedfields
 * wrappers): merges, removes the fields the manager applied last time and no longer applies unless
 * another manager owns them, takes the applied fields, and fails with 409 on fields another manager
 * owns with a different value unless `force`.
 * @param emptyLive the type's empty object, for `before-first-apply` (a live object with no managers)
 * @throws ApiError 409 Conflict; SchemaError for a value that does not fit its list rules
 */
export function apply(
  live: JsonObject,
  config: JsonObject,
  managers: Map<string, Manager>,
  manager: string,
  force: boolean,
  ctx: FieldManagerContext,
  emptyLive?: JsonObject,
): ApplyResult {
  try {
    return applyOnce(live, config, new Map(managers), manager, force, ctx, emptyLive);
  } catch (err) {
    // managedfields lastAppliedManager: `kubectl` applying server-side over its own client-side
    // apply may take the fields the last-applied annotation still matches.
    if (!(err instanceof ConflictError) || manager !== 'kubectl') throw err;
    const allowed = lastAppliedFields(live, ctx.schema);
    if (!allowed) throw err;
    const remaining = err.conflicts.filter((c) => !allowed.has(c.path));
    if (remaining.length > 0) throw conflictError(remaining);
    return applyOnce(live, config, new Map(managers), manager, true, ctx, emptyLive);
  }
}

/** The fields of the last-applied annotation whose values the live object still has. */
function lastAppliedFields(live: JsonObject, schema: MergeSchema): FieldSet | undefined {
  const annotations = (live.metadata as JsonObject | undefined)?.annotations as JsonObject | undefined;
  const text = annotations?.[LAST_APPLIED];
  if (typeof text !== 'string' || !text) return undefined;
  let last: Json;
  try {
    last = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { managedFields: _m, ...metadata } = live.metadata as JsonObject;
  const c = compare(last, { ...live, metadata }, schema);
  return toFieldSet(last, schema).difference(c.modified).difference(c.added).difference(c.removed);
}

function applyOnce(
  live: JsonObject,
  config: JsonObject,
  managers: Map<string, Manager>,
  manager: string,
  force: boolean,
  ctx: FieldManagerContext,
  emptyLive?: JsonObject,
): ApplyResult {
  if (managers.size === 0 && emptyLive) recordUpdate(emptyLive, live, managers, 'before-first-apply', ctx);
  const merged = (merge(live, config, ctx.schema) ?? {}) as JsonObject;
  const info = managerInfo(manager, 'Apply', ctx);
  const id = identity(info);
  const last = managers.get(id);
  const set = toFieldSet(config, ctx.schema).recursiveDifference(ctx.ignored);
  managers.set(id, { ...info, set, time: last?.time });
  const object = last && !last.set.empty() ? prune(merged, managers, last.set, ctx.schema) : merged;
  takeOwnership(live, object, managers, id, force, ctx);
  const own = managers.get(id) as Manager;
  const stripped = own.set.difference(STRIP);
  if (stripped.empty()) managers.delete(id);
  else managers.set(id, { ...own, set: stripped });
  const applied = managers.get(id);
  if (applied && !isDeepStrictEqual(live, object)) applied.time = nowTime();
  capUpdateManagers(managers);
  return { object, managers };
}

/** kubectl's client-side apply annotation. */
export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** Go's json.Marshal of a map: keys sorted. */
function sortedJson(v: Json): string {
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`;
  if (!isObject(v)) return JSON.stringify(v);
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${sortedJson(v[k])}`)
    .join(',')}}`;
}

/**
 * managedfields lastAppliedUpdater: a server-side apply by the `kubectl` manager onto an object that
 * carries the client-side apply annotation rewrites the annotation to the applied configuration, so
 * a later client-side `kubectl apply` diffs against it. Mutates `object`.
 */
export function syncLastApplied(object: JsonObject, config: JsonObject, manager: string): void {
  const meta = object.metadata as JsonObject | undefined;
  const annotations = meta?.annotations as Record<string, string> | undefined;
  if (manager !== 'kubectl' || !annotations || !(LAST_APPLIED in annotations)) return;
  const copy = structuredClone(config);
  const cmeta = (copy.metadata ?? {}) as JsonObject;
  const cann = cmeta.annotations as JsonObject | undefined;
  if (cann) {
    delete cann[LAST_APPLIED];
    if (Object.keys(cann).length === 0) delete cmeta.annotations;
  }
  annotations[LAST_APPLIED] = `${sortedJson(copy)}\n`;
}

/** Updater.prune with addBackOwnedItems and addBackDanglingItems. */
function prune(
  merged: JsonObject,
  managers: Map<string, Manager>,
  lastSet: FieldSet,
  schema: MergeSchema,
): JsonObject {
  const named = (s: FieldSet) => ensureNamedFieldsAreMembers(s, schema);
  const last = named(lastSet);
  const pruned1 = (removeItems(merged, last, schema) ?? {}) as JsonObject;
  let managed = new FieldSet();
  for (const m of managers.values()) managed = managed.union(m.set);
  const mergedSet = named(toFieldSet(merged, schema));
  const owned = named(toFieldSet(pruned1, schema)).union(named(managed));
  const pruned2 = (removeItems(merged, mergedSet.difference(owned), schema) ?? {}) as JsonObject;
  const pruned2Set = named(toFieldSet(pruned2, schema));
  return (removeItems(merged, mergedSet.difference(pruned2Set).intersection(last), schema) ??
    {}) as JsonObject;
}

/**
 * The field manager of a non-apply request without `fieldManager`: the User-Agent before its first
 * `/`, printable characters only, at most 128 bytes (managedfields prefixFromUserAgent).
 */
export function managerFromUserAgent(userAgent: string): string {
  let out = '';
  for (const ch of userAgent.split('/')[0] ?? '') {
    if (!/[\p{L}\p{M}\p{N}\p{P}\p{S} ]/u.test(ch)) continue;
    if (Buffer.byteLength(out + ch) > 128) break;
    out += ch;
  }
  return out;
}
