/**
 * A CRD's `openAPIV3Schema` from a controller's zod schemas, as controller-gen makes it from Go
 * types and markers: zod 4's JSON Schema output (`z.toJSONSchema`, OpenAPI 3.0 target, the input
 * shape a user writes) adapted to Kubernetes' structural schema rules (apiextensions.k8s.io/v1,
 * "Specifying a structural schema" in the CustomResourceDefinition documentation):
 *
 * - every node has a `type`, except `x-kubernetes-int-or-string` and
 *   `x-kubernetes-preserve-unknown-fields` nodes; an open value (`z.unknown()`) preserves unknown fields;
 * - no `$ref`/`$defs`: shared schemas are inlined (a recursive schema has no CRD form: it throws);
 * - `nullable: true`, never `anyOf [T, null]`; `integer | string` is `x-kubernetes-int-or-string`;
 *   a union of enums of one type is one `enum`; `const` is a one-value `enum`;
 * - `additionalProperties` only alone (a map): never `false` (kube-apiserver forbids it; unknown fields
 *   are pruned anyway), never beside `properties` (an open object preserves unknown fields instead);
 * - only formats kube-apiserver knows (kube-openapi's strfmt registry); only RE2 patterns (Go's regexp);
 * - no `uniqueItems: true` (kube-apiserver forbids it: quadratic to check; listed instead);
 * - `default` only where a value is (never inside `anyOf`/`allOf`/`oneOf`/`not`), and only keywords
 *   of apiextensions' `JSONSchemaProps`.
 *
 * What has no CRD form (a refinement such as `.refine()` across fields, a map's key rule, a
 * transform) is returned in {@link CrdSchema.notExpressed}: the reconcile's zod schema still checks it,
 * and the manifest generator lists it in the CRD file as a comment.
 */
import { RE2JS } from 're2js';
import * as z from 'zod';
import { conditionSchema } from '../../core/k8s/conditions.ts';

/** An apiextensions.k8s.io/v1 `JSONSchemaProps`, as plain JSON. */
export type JSONSchemaProps = { [keyword: string]: unknown };

/** A structural schema and what the zod schema checks that it cannot. */
export interface CrdSchema {
  schema: JSONSchemaProps;
  /** `<field path>: <rule>` lines, e.g. `.spec.topicId: must not start with "goog"`. */
  notExpressed: string[];
}

/** Formats kube-apiserver validates (kube-openapi `strfmt.Default` as apiextensions accepts them). */
export const KUBERNETES_FORMATS: ReadonlySet<string> = new Set([
  'bsonobjectid',
  'uri',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'cidr',
  'mac',
  'uuid',
  'uuid3',
  'uuid4',
  'uuid5',
  'isbn',
  'isbn10',
  'isbn13',
  'creditcard',
  'ssn',
  'hexcolor',
  'rgbcolor',
  'byte',
  'password',
  'date',
  'duration',
  'datetime',
  'date-time',
  'int32',
  'int64',
  'float',
  'double',
]);

/** Keywords of apiextensions' JSONSchemaProps kept as they are (the others are rebuilt or dropped). */
const KEPT = [
  'description',
  'type',
  'format',
  'default',
  'enum',
  'nullable',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'example',
] as const;

/** Bounds zod adds to every `.int()` (safe integers) and `z.int32()`: no constraint worth a schema. */
const IMPLIED_BOUNDS = new Set([Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2147483647, -2147483648]);

/**
 * The key under which the zod-aware pass marks a JSON Schema node with its rules of no CRD form, for
 * the structural pass to list them at every data path the node is used at (zod visits a shared
 * schema once).
 */
const NOT_EXPRESSED = 'x-levelset-not-expressed';

/** The message of a zod check made by `.refine()`/`.check()`/`.superRefine()`, or a generic one. */
function refinementMessage(def: { error?: (issue?: unknown) => unknown; path?: unknown }): string {
  const message = def.error?.();
  const text = typeof message === 'string' ? message : (message as { message?: string } | undefined)?.message;
  const path = Array.isArray(def.path) && def.path.length ? ` (at ${def.path.join('.')})` : '';
  return `${text || 'a refinement'}${path}`;
}

interface ZodInternals {
  _zod: {
    def: { type: string; checks?: { _zod: { def: Record<string, unknown> } }[]; keyType?: ZodInternals };
  };
}

/** Checks of a zod schema with no JSON Schema form: refinements, transforms, a record's key rules. */
function unrepresented(zodSchema: unknown): string[] {
  const def = (zodSchema as ZodInternals)._zod.def;
  const out: string[] = [];
  for (const check of def.checks ?? []) {
    const c = check._zod.def as { check?: string; error?: () => unknown; path?: unknown };
    if (c.check === 'custom') out.push(refinementMessage(c));
  }
  if (def.type === 'transform' || def.type === 'pipe') out.push('transformed by the schema');
  if (def.type === 'record' && def.keyType) {
    const keys = def.keyType._zod.def;
    const rules = (keys.checks ?? []).map((c) => {
      const k = c._zod.def as { check?: string; pattern?: RegExp; error?: () => unknown };
      if (k.pattern instanceof RegExp) return `match ${k.pattern.source}`;
      if (k.check === 'custom') return refinementMessage(k);
      return k.check ?? 'a rule';
    });
    if (keys.type === 'enum') rules.push('be one of the enum');
    if (rules.length) out.push(`keys must ${rules.join(', ')}`);
  }
  return out;
}

const has = (node: JSONSchemaProps, key: string) => Object.hasOwn(node, key);

/**
 * One node of zod's OpenAPI 3.0 output made structural (see the module comment), recursively.
 * @param defs zod's `$defs`, for `$ref`s; `seen` the `$ref`s being inlined (recursion).
 * @throws {Error} `<path>: …` for a recursive schema or a pattern RE2 does not compile.
 */
function structural(
  node: JSONSchemaProps,
  at: string,
  defs: Record<string, JSONSchemaProps>,
  notes: string[],
  seen: ReadonlySet<string> = new Set(),
): JSONSchemaProps {
  if (typeof node.$ref === 'string') {
    const name = node.$ref.replace(/^#\/(\$defs|definitions)\//, '');
    const target = defs[name];
    if (!target || seen.has(name))
      throw new Error(`${at || '.'}: a recursive schema has no CRD form (${node.$ref})`);
    const { $ref: _, ...rest } = node;
    return structural({ ...target, ...rest }, at, defs, notes, new Set([...seen, name]));
  }
  for (const rule of (node[NOT_EXPRESSED] as string[] | undefined) ?? []) {
    const note = `${at || '.'}: ${rule}`;
    if (!notes.includes(note)) notes.push(note);
  }
  const out: JSONSchemaProps = {};
  for (const k of KEPT) if (has(node, k)) out[k] = node[k];
  for (const k of Object.keys(node)) if (k.startsWith('x-kubernetes-')) out[k] = node[k];

  const branches = (node.anyOf ?? node.oneOf) as JSONSchemaProps[] | undefined;
  if (branches) return union(out, branches, at, defs, notes, seen);
  if (Array.isArray(node.allOf)) {
    const parts = (node.allOf as JSONSchemaProps[]).map((b) => structural(b, at, defs, notes, seen));
    if (parts.every((p) => p.type === 'object')) {
      const merged: JSONSchemaProps = { ...out, type: 'object', properties: {} };
      const required = new Set<string>();
      for (const p of parts) {
        Object.assign(merged.properties as object, p.properties ?? {});
        for (const r of (p.required as string[] | undefined) ?? []) required.add(r);
        if (p['x-kubernetes-preserve-unknown-fields']) merged['x-kubernetes-preserve-unknown-fields'] = true;
      }
      if (required.size) merged.required = [...required];
      return merged;
    }
    notes.push(`${at || '.'}: an intersection of non-objects`);
    return { ...out, 'x-kubernetes-preserve-unknown-fields': true };
  }
  if (node.uniqueItems === true) notes.push(`${at || '.'}: items must be unique`);
  if (has(node, 'not')) notes.push(`${at || '.'}: a "not" rule`);

  switch (node.type) {
    case undefined:
      // An open value (z.unknown(), z.any(), a transform): kept as written.
      return { ...out, 'x-kubernetes-preserve-unknown-fields': true };
    case 'integer':
    case 'number':
      for (const k of ['minimum', 'maximum'] as const)
        if (
          IMPLIED_BOUNDS.has(out[k] as number) &&
          !out[k === 'minimum' ? 'exclusiveMinimum' : 'exclusiveMaximum']
        )
          delete out[k];
      break;
    case 'string':
      if (typeof out.pattern === 'string') {
        try {
          RE2JS.compile(out.pattern);
        } catch (err) {
          throw new Error(
            `${at || '.'}: pattern ${out.pattern} is not an RE2 expression (kube-apiserver's, Go regexp): ${(err as Error).message}`,
          );
        }
      }
      break;
    case 'array':
      out.items = node.items
        ? structural(node.items as JSONSchemaProps, `${at}[*]`, defs, notes, seen)
        : { 'x-kubernetes-preserve-unknown-fields': true };
      break;
    case 'object': {
      const properties = node.properties as Record<string, JSONSchemaProps> | undefined;
      const extra = node.additionalProperties as JSONSchemaProps | boolean | undefined;
      const open = extra === true || (typeof extra === 'object' && Object.keys(extra).length === 0);
      if (properties) {
        out.properties = Object.fromEntries(
          Object.entries(properties).map(([k, v]) => [k, structural(v, `${at}.${k}`, defs, notes, seen)]),
        );
        if (Array.isArray(node.required) && node.required.length) out.required = node.required;
        if (open) out['x-kubernetes-preserve-unknown-fields'] = true;
        else if (typeof extra === 'object') {
          notes.push(`${at || '.'}: fields besides the named ones must match a schema (kept as written)`);
          out['x-kubernetes-preserve-unknown-fields'] = true;
        }
      } else if (open) out['x-kubernetes-preserve-unknown-fields'] = true;
      else if (typeof extra === 'object')
        out.additionalProperties = structural(extra, `${at}[*]`, defs, notes, seen);
      // additionalProperties: false (z.strictObject) is forbidden; the API server prunes unknown fields.
      break;
    }
  }
  if (typeof out.format === 'string' && !KUBERNETES_FORMATS.has(out.format)) {
    if (!out.pattern) notes.push(`${at || '.'}: format ${out.format}`);
    delete out.format;
  }
  return out;
}

/** A union (`anyOf`/`oneOf`, OpenAPI 3.0) made structural; see {@link structural}. */
function union(
  out: JSONSchemaProps,
  branches: JSONSchemaProps[],
  at: string,
  defs: Record<string, JSONSchemaProps>,
  notes: string[],
  seen: ReadonlySet<string>,
): JSONSchemaProps {
  const parts = branches.map((b) => structural(b, at, defs, notes, seen));
  const types = new Set(parts.map((p) => p.type));
  const { type: _, ...described } = out;
  if (types.size === 2 && types.has('integer') && types.has('string'))
    return { ...described, 'x-kubernetes-int-or-string': true };
  if (types.size === 1 && parts.every((p) => Array.isArray(p.enum))) {
    return { ...described, type: parts[0]?.type, enum: parts.flatMap((p) => p.enum as unknown[]) };
  }
  notes.push(`${at || '.'}: one of ${parts.length} shapes (a union)`);
  return types.size === 1 && parts[0]?.type
    ? { ...described, type: parts[0].type, 'x-kubernetes-preserve-unknown-fields': true }
    : { ...described, 'x-kubernetes-preserve-unknown-fields': true };
}

/**
 * The structural schema of one zod schema (the input shape: fields with a `.default()` are optional).
 * @param at the data path of the schema, e.g. `.spec`, prefixed to {@link CrdSchema.notExpressed} lines.
 * @throws {Error} `<path>: …` for a recursive schema or a pattern that is not RE2.
 */
export function crdSchemaOf(schema: z.ZodType, at = ''): CrdSchema {
  const notes: string[] = [];
  const json = z.toJSONSchema(schema, {
    target: 'openapi-3.0',
    io: 'input',
    unrepresentable: 'any',
    reused: 'inline',
    cycles: 'ref',
    override({ zodSchema, jsonSchema }) {
      const rules = unrepresented(zodSchema);
      if (rules.length) (jsonSchema as JSONSchemaProps)[NOT_EXPRESSED] = rules;
      // z.int32() is apiextensions' int32 (Go's int32 fields, as controller-gen writes them).
      const def = (zodSchema as unknown as { _zod: { def: { format?: string } } })._zod.def;
      if (def.format === 'int32' && jsonSchema.type === 'integer') jsonSchema.format = 'int32';
    },
  }) as JSONSchemaProps;
  const { $defs, definitions, $schema: _, ...root } = json;
  const defs = { ...(definitions as object), ...($defs as object) } as Record<string, JSONSchemaProps>;
  const structuralRoot = structural(root, at, defs, notes);
  return { schema: structuralRoot, notExpressed: notes };
}

/**
 * The status fields the kit writes on every primary with a `status` subresource (functions/kit/steps.ts
 * `nextStatus`): `observedGeneration` and `conditions` (metav1.Condition, a list map keyed by `type`).
 */
export const kitStatusSchema = z.object({
  observedGeneration: z
    .number()
    .int()
    .min(0)
    .meta({ format: 'int64', description: 'The metadata.generation this status was computed from.' })
    .optional(),
  conditions: z
    .array(conditionSchema)
    .meta({
      description: 'Kubernetes API conventions conditions; Ready says whether the last reconcile converged.',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    })
    .optional(),
});

/** The zod schemas of a custom resource. */
export interface ResourceSchemas {
  /** One sentence on what the resource is: the schema's root `description`. */
  description?: string;
  /** `spec`. Default: an open object. */
  spec?: z.ZodType;
  /** `status`, the fields the reconcile returns; the kit's {@link kitStatusSchema} fields are added. */
  status?: z.ZodObject;
}

/**
 * A CRD version's whole `openAPIV3Schema`: `apiVersion`, `kind`, `metadata` (the API server's) and
 * `spec`/`status` from {@link ResourceSchemas}.
 * @throws {Error} as {@link crdSchemaOf}.
 */
export function customResourceSchema(schemas: ResourceSchemas): CrdSchema {
  const spec = crdSchemaOf(schemas.spec ?? z.looseObject({}), '.spec');
  const statusDescription =
    (schemas.status && z.globalRegistry.get(schemas.status)?.description) ||
    'The observed state, written by Levelset through the status subresource.';
  const status = crdSchemaOf(
    (schemas.status ?? z.object({})).extend(kitStatusSchema.shape).describe(statusDescription),
    '.status',
  );
  return {
    schema: {
      ...(schemas.description ? { description: schemas.description } : {}),
      type: 'object',
      properties: {
        apiVersion: { type: 'string' },
        kind: { type: 'string' },
        metadata: { type: 'object' },
        spec: spec.schema,
        status: status.schema,
      },
    },
    notExpressed: [...spec.notExpressed, ...status.notExpressed],
  };
}
