/**
 * Validation as kube-apiserver words it: object names (apimachinery validation.NameIsDNSSubdomain,
 * NameIsDNSLabel, path segment names), labels, and custom resources against their CRD's
 * `openAPIV3Schema` (kube-openapi validate + apiextensions pruning and defaulting).
 */
import { isDeepStrictEqual } from 'node:util';
import { schemaRuleErrors } from './cel.ts';
import type { JSONSchemaProps, KubeObject, NameRule } from './resources.ts';
import { type FieldError, fieldErrors } from './status.ts';

const SUBDOMAIN_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/** Problems with a name under a rule (empty when valid). */
export function nameProblems(name: string, rule: NameRule): string[] {
  const out: string[] = [];
  if (rule === 'path') {
    if (name === '.' || name === '..') out.push(`may not be '${name}'`);
    for (const c of ['/', '%']) if (name.includes(c)) out.push(`may not contain '${c}'`);
    return out;
  }
  const max = rule === 'label' ? 63 : 253;
  if (name.length > max) out.push(`must be no more than ${max} characters`);
  if (!(rule === 'label' ? LABEL_RE : SUBDOMAIN_RE).test(name))
    out.push(rule === 'label' ? LABEL_MSG : SUBDOMAIN_MSG);
  return out;
}

const QUALIFIED_NAME_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

function qualifiedNameProblems(key: string): string[] {
  const parts = key.split('/');
  const name = parts.length === 2 ? (parts[1] as string) : key;
  const prefix = parts.length === 2 ? (parts[0] as string) : undefined;
  const out: string[] = [];
  if (parts.length > 2) out.push(QUALIFIED_NAME_MSG);
  if (prefix !== undefined && !SUBDOMAIN_RE.test(prefix)) out.push(`prefix part ${SUBDOMAIN_MSG}`);
  if (!name || name.length > 63 || !/^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/.test(name))
    out.push(QUALIFIED_NAME_MSG);
  return out;
}

/** Validates metadata every object shares: name, labels, annotation keys, finalizers. */
export function validateObjectMeta(obj: KubeObject, rule: NameRule, namespaced: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const meta = obj.metadata;
  if (!meta.name) errs.push(fieldErrors.required('metadata.name', 'name or generateName is required'));
  else
    for (const p of nameProblems(meta.name, rule))
      errs.push(fieldErrors.invalid('metadata.name', meta.name, p));
  if (namespaced && !meta.namespace) errs.push(fieldErrors.required('metadata.namespace'));
  for (const [k, v] of Object.entries(meta.labels ?? {})) {
    for (const p of qualifiedNameProblems(k)) errs.push(fieldErrors.invalid('metadata.labels', k, p));
    if (typeof v !== 'string' || v.length > 63 || !/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(v)) {
      errs.push(fieldErrors.invalid('metadata.labels', v, LABEL_VALUE_MSG));
    }
  }
  for (const k of Object.keys(meta.annotations ?? {})) {
    for (const p of qualifiedNameProblems(k)) errs.push(fieldErrors.invalid('metadata.annotations', k, p));
  }
  (meta.ownerReferences ?? []).forEach((r, i) => {
    for (const f of ['apiVersion', 'kind', 'name', 'uid'] as const) {
      if (!r?.[f])
        errs.push(
          fieldErrors.invalid(`metadata.ownerReferences[${i}].${f}`, r?.[f] ?? '', `${f} must not be empty`),
        );
    }
  });
  if ((meta.ownerReferences ?? []).filter((r) => r?.controller).length > 1) {
    errs.push(
      fieldErrors.invalid(
        'metadata.ownerReferences',
        meta.ownerReferences,
        'Only one reference can have Controller set to true',
      ),
    );
  }
  return errs;
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(schemaType: string, v: unknown): boolean {
  const t = jsonType(v);
  return t === schemaType || (schemaType === 'number' && t === 'integer');
}

export interface SchemaResult {
  errors: FieldError[];
  /** Paths of fields dropped by pruning (`spec.bogus`), for strict field validation and warnings. */
  unknownFields: string[];
}

/**
 * Prunes, defaults and validates `value` at `path` against a structural schema, in place.
 * Unknown fields are removed unless `x-kubernetes-preserve-unknown-fields` (apiextensions pruning).
 */
export function applySchema(
  value: unknown,
  schema: JSONSchemaProps | undefined,
  path: string,
  out: SchemaResult,
): void {
  if (!schema) return;
  const where = path || '<root>';
  if (value === null) {
    if (!schema.nullable && schema.type)
      out.errors.push({
        ...fieldErrors.invalid(where, 'null', `${where} in body must be of type ${schema.type}: "null"`),
        type: 'FieldValueTypeInvalid',
      });
    return;
  }
  if (schema['x-kubernetes-int-or-string']) {
    const t = jsonType(value);
    if (t !== 'integer' && t !== 'string') {
      out.errors.push({
        ...fieldErrors.invalid(where, t, `${where} in body must be of type integer,string: "${t}"`),
        type: 'FieldValueTypeInvalid',
      });
      return;
    }
  } else if (schema.type && !typeMatches(schema.type, value)) {
    const t = jsonType(value);
    out.errors.push({
      ...fieldErrors.invalid(where, t, `${where} in body must be of type ${schema.type}: "${t}"`),
      type: 'FieldValueTypeInvalid',
    });
    return;
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    out.errors.push(fieldErrors.notSupported(where, value, schema.enum));
  }
  if (typeof value === 'number') {
    if (
      schema.minimum !== undefined &&
      (schema.exclusiveMinimum ? value <= schema.minimum : value < schema.minimum)
    ) {
      out.errors.push(
        fieldErrors.invalid(
          where,
          value,
          `${where} in body should be greater than ${schema.exclusiveMinimum ? '' : 'or equal to '}${schema.minimum}`,
        ),
      );
    }
    if (
      schema.maximum !== undefined &&
      (schema.exclusiveMaximum ? value >= schema.maximum : value > schema.maximum)
    ) {
      out.errors.push(
        fieldErrors.invalid(
          where,
          value,
          `${where} in body should be less than ${schema.exclusiveMaximum ? '' : 'or equal to '}${schema.maximum}`,
        ),
      );
    }
  }
  if (typeof value === 'number' && schema.multipleOf !== undefined) {
    // kube-openapi's MultipleOfFailCode; apiextensions turns it into field.Invalid.
    const q = value / schema.multipleOf;
    if (Math.abs(q - Math.round(q)) > 1e-9)
      out.errors.push(
        fieldErrors.invalid(where, value, `${where} in body should be a multiple of ${schema.multipleOf}`),
      );
  }
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && [...value].length < schema.minLength) {
      out.errors.push(
        fieldErrors.invalid(
          where,
          value,
          `${where} in body should be at least ${schema.minLength} chars long`,
        ),
      );
    }
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) {
      out.errors.push({
        type: 'FieldValueTooLong',
        field: where,
        detail: `Too long: may not be more than ${schema.maxLength} bytes`,
      });
    }
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) {
      out.errors.push(fieldErrors.invalid(where, value, `${where} in body should match '${schema.pattern}'`));
    }
    if (schema.format === 'date-time' && !isDateTime(value)) {
      // kube-openapi errors.InvalidType → apiextensions field.TypeInvalid.
      out.errors.push({
        ...fieldErrors.invalid(
          where,
          value,
          `${where} in body must be of type date-time: ${JSON.stringify(value)}`,
        ),
        type: 'FieldValueTypeInvalid',
      });
    }
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      out.errors.push(
        fieldErrors.invalid(
          where,
          value.length,
          `${where} in body should have at least ${schema.minItems} items`,
        ),
      );
    }
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      out.errors.push({
        type: 'FieldValueInvalid',
        field: where,
        detail: `Too many: ${value.length}: must have at most ${schema.maxItems} items`,
      });
    }
    value.forEach((item, i) => {
      applySchema(item, schema.items, `${path}[${i}]`, out);
    });
  }
  if (jsonType(value) === 'object') {
    const obj = value as Record<string, unknown>;
    const props = schema.properties;
    if (props) {
      for (const [k, sub] of Object.entries(props)) {
        if (!(k in obj) && sub.default !== undefined) obj[k] = structuredClone(sub.default);
      }
    }
    for (const k of Object.keys(obj)) {
      const childPath = path ? `${path}.${k}` : k;
      if (path === '' && (k === 'apiVersion' || k === 'kind' || k === 'metadata')) continue;
      if (
        schema['x-kubernetes-embedded-resource'] &&
        (k === 'apiVersion' || k === 'kind' || k === 'metadata')
      )
        continue;
      const sub =
        props?.[k] ??
        (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
      if (sub) applySchema(obj[k], sub, childPath, out);
      else if (!(schema['x-kubernetes-preserve-unknown-fields'] || schema.additionalProperties === true)) {
        delete obj[k];
        out.unknownFields.push(childPath);
      }
    }
    for (const r of schema.required ?? []) {
      if (!(r in obj)) out.errors.push(fieldErrors.required(path ? `${path}.${r}` : r));
    }
    // kube-openapi's TooFewProperties (apiextensions: field.Invalid) and TooManyProperties
    // (apiextensions: field.TooMany), counted after pruning.
    const count = Object.keys(obj).length;
    if (schema.minProperties !== undefined && count < schema.minProperties)
      out.errors.push(
        fieldErrors.invalid(
          where,
          count,
          `${where} in body should have at least ${schema.minProperties} properties`,
        ),
      );
    if (schema.maxProperties !== undefined && count > schema.maxProperties)
      out.errors.push({
        type: 'FieldValueTooMany',
        field: where,
        detail: `Too many: ${count}: must have at most ${schema.maxProperties} items`,
      });
  }
}

/** Basic checks of a CustomResourceDefinition (apiextensions validation), enough to reject obvious mistakes. */
export function validateCrd(obj: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = (obj.spec ?? {}) as Record<string, unknown>;
  const names = (spec.names ?? {}) as Record<string, unknown>;
  const group = spec.group;
  if (!group || typeof group !== 'string') errs.push(fieldErrors.required('spec.group'));
  else if (!group.includes('.'))
    errs.push(fieldErrors.invalid('spec.group', group, 'should be a domain with at least one dot'));
  if (!names.plural) errs.push(fieldErrors.required('spec.names.plural'));
  if (!names.kind) errs.push(fieldErrors.required('spec.names.kind'));
  if (!names.listKind && names.kind) names.listKind = `${String(names.kind)}List`;
  if (!names.singular && names.kind) names.singular = String(names.kind).toLowerCase();
  if (names.plural && group && obj.metadata.name !== `${String(names.plural)}.${String(group)}`) {
    errs.push(
      fieldErrors.invalid(
        'metadata.name',
        obj.metadata.name ?? '',
        'must be spec.names.plural+"."+spec.group',
      ),
    );
  }
  if (spec.scope !== 'Namespaced' && spec.scope !== 'Cluster') {
    errs.push(
      spec.scope
        ? fieldErrors.notSupported('spec.scope', spec.scope, ['Cluster', 'Namespaced'])
        : fieldErrors.required('spec.scope'),
    );
  }
  const versions = Array.isArray(spec.versions) ? (spec.versions as Record<string, unknown>[]) : [];
  if (versions.length === 0)
    errs.push(
      fieldErrors.invalid(
        'spec.versions',
        spec.versions ?? null,
        'must have exactly one version marked as storage version',
      ),
    );
  else if (versions.filter((v) => v.storage).length !== 1) {
    errs.push(
      fieldErrors.invalid(
        'spec.versions',
        versions.map((v) => v.name),
        'must have exactly one version marked as storage version',
      ),
    );
  }
  // Versions whose schemas are all the same are validated as one, at `spec.validation`: the v1 →
  // internal conversion hoists such a schema to the top level (apiextensions'
  // Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_CustomResourceDefinitionSpec), and
  // kube-apiserver's errors name that path.
  const schemaOf = (v: (typeof versions)[number]) =>
    (v.schema as Record<string, unknown> | undefined)?.openAPIV3Schema;
  const first = versions[0] ? schemaOf(versions[0]) : undefined;
  const hoisted = first !== undefined && versions.every((v) => isDeepStrictEqual(schemaOf(v), first));
  if (hoisted) errs.push(...schemaRuleErrors(first as JSONSchemaProps, 'spec.validation.openAPIV3Schema'));
  versions.forEach((v, i) => {
    const schema = schemaOf(v);
    if (!schema)
      errs.push(fieldErrors.required(`spec.versions[${i}].schema.openAPIV3Schema`, 'schemas are required'));
    if (!v.name) errs.push(fieldErrors.required(`spec.versions[${i}].name`));
    if (schema && !hoisted)
      errs.push(...schemaRuleErrors(schema as JSONSchemaProps, `spec.versions[${i}].schema.openAPIV3Schema`));
  });
  return errs;
}

/**
 * `format: date-time` as kube-openapi's strfmt.IsDateTime checks it (looser than metav1.Time):
 * a valid `YYYY-MM-DD`, `T`/`t`, then `HH:MM:SS`, an optional fraction and `Z`/`z` or `±HH:MM`.
 */
export function isDateTime(value: string): boolean {
  const [date, time] = value.toLowerCase().split('t');
  if (value.length < 4 || date === undefined || time === undefined) return false;
  const d = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!d) return false;
  const [year, month, day] = [Number(d[1]), Number(d[2]), Number(d[3])];
  const valid = new Date(Date.UTC(2000, month - 1, day));
  if (month < 1 || month > 12 || valid.getUTCDate() !== day) return false;
  if (month === 2 && day === 29 && !(year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0))) return false;
  const m = /^(\d{2}):(\d{2}):(\d{2})(.[0-9]+)?(z|([+-]\d{2}:\d{2}))$/.exec(time);
  return !!m && (m[1] ?? '') <= '23' && (m[2] ?? '') <= '59' && (m[3] ?? '') <= '59';
}
