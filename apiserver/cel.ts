/**
 * A CRD's `x-kubernetes-validations` (CEL rules) and `x-kubernetes-list-type` checks on a write, as
 * kube-apiserver's apiextensions-apiserver runs them (`pkg/apiserver/schema/cel/validation.go`,
 * `Validator.validateExpressions`, and `pkg/apiserver/schema/listtype/validation.go`):
 *
 * - a node's rules run only on a non-null value, with `self` bound to it (integers as CEL `int`,
 *   numbers as `double`); a rule naming `oldSelf` (a transition rule) only where an old value exists
 *   (an update whose old object has the field: object fields by name, `map` list items by key, `set`
 *   items by value; never an `atomic` list's items);
 * - validation ratcheting (the CRDValidationRatcheting feature, on by default since 1.30): on an
 *   update, a rule without `oldSelf` whose node equals its old value does not refuse the write; its
 *   error is a warning (`<field>: <detail>`);
 * - a false rule is `field.Invalid(<path>, <schema type>, <message>)`: the message trimmed, else the
 *   `messageExpression`'s string, else `failed rule: <rule>`; `fieldPath` is appended to the path;
 *   `reason` makes it `field.Forbidden`, `field.Required` or `field.Duplicate` instead; an evaluation
 *   error is `<error> evaluating rule: <rule>` (`no such key: x`, as cel-go words it);
 * - a `set` list refuses a duplicate item and a `map` list a duplicate key, `field.Duplicate` at the
 *   item's index (`Duplicate value: "x"`, `Duplicate value: map[string]interface {}{"name":"a"}`).
 *
 * The CEL environment is `@bufbuild/cel` with its `strings` extension and Kubernetes' list and regex
 * libraries (lists.go, regex.go), RE2 regular expressions: the same library and functions as the kit's
 * evaluation (functions/kit/cel.ts; this package imports nothing of Levelset, so the few functions are
 * written twice). Not covered: optional types, `quantity`, `url`, `ip`/`cidr`, the type checker and the
 * cost estimate a real kube-apiserver runs when a CRD is written.
 */
import { isDeepStrictEqual } from 'node:util';
import { CelScalar, celEnv, celMethod, isCelError, listType, parse, plan } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import { RE2JS } from 're2js';
import type { JSONSchemaProps } from './resources.ts';
import type { FieldError } from './status.ts';

/** One `x-kubernetes-validations` entry (apiextensions.k8s.io/v1 ValidationRule). */
interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  fieldPath?: string;
  reason?: string;
}

const { DYN, INT, BOOL, STRING } = CelScalar;
type Ordered = bigint | number | string;

function extreme(items: Ordered[], before: (x: Ordered, y: Ordered) => boolean): Ordered {
  let best = items[0] as Ordered;
  for (const v of items) if (before(v, best)) best = v;
  return best;
}

/** Kubernetes' CEL list library (lists.go) and regex library (regex.go). */
const KUBERNETES_FUNCS = [
  celMethod('isSorted', listType(DYN), [], BOOL, function () {
    const items = [...this] as Ordered[];
    return items.every((v, i) => i === 0 || (items[i - 1] as Ordered) <= v);
  }),
  celMethod('sum', listType(DYN), [], DYN, function () {
    const items = [...this] as number[];
    return items.length === 0 ? 0n : items.reduce((a, b) => a + b);
  }),
  celMethod('min', listType(DYN), [], DYN, function () {
    const items = [...this] as Ordered[];
    if (items.length === 0) throw new Error('min called on empty list');
    return extreme(items, (x, y) => x < y);
  }),
  celMethod('max', listType(DYN), [], DYN, function () {
    const items = [...this] as Ordered[];
    if (items.length === 0) throw new Error('max called on empty list');
    return extreme(items, (x, y) => x > y);
  }),
  celMethod('indexOf', listType(DYN), [DYN], INT, function (x) {
    return BigInt([...this].indexOf(x));
  }),
  celMethod('lastIndexOf', listType(DYN), [DYN], INT, function (x) {
    return BigInt([...this].lastIndexOf(x));
  }),
  celMethod('find', STRING, [STRING], STRING, function (pattern) {
    const m = RE2JS.compile(pattern).matcher(this);
    return m.find() ? (m.group() ?? '') : '';
  }),
  celMethod('findAll', STRING, [STRING], listType(STRING), function (pattern) {
    const m = RE2JS.compile(pattern).matcher(this);
    const found: string[] = [];
    while (m.find()) found.push(m.group() ?? '');
    return found;
  }),
];

const env = celEnv({ funcs: [...strings, ...KUBERNETES_FUNCS] });
const programs = new Map<string, ReturnType<typeof plan> | Error>();

/** The planned program of an expression, or its parse error, cached by its text. */
function program(expression: string): ReturnType<typeof plan> | Error {
  let p = programs.get(expression);
  if (!p) {
    try {
      p = plan(env, parse(expression));
    } catch (err) {
      p = err as Error;
    }
    programs.set(expression, p);
  }
  return p;
}

/** A JSON value as CEL sees it under its schema: integers are `int` (bigint), numbers `double`. */
function celValue(value: unknown, schema: JSONSchemaProps | undefined): unknown {
  if (typeof value === 'number')
    return schema?.type === 'number' || !Number.isInteger(value) ? value : BigInt(value);
  if (Array.isArray(value)) return value.map((v) => celValue(v, schema?.items));
  if (value && typeof value === 'object') {
    const extra = typeof schema?.additionalProperties === 'object' ? schema.additionalProperties : undefined;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, celValue(v, schema?.properties?.[k] ?? extra)]),
    );
  }
  return value;
}

function goValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v && typeof v === 'object')
    return `map[string]interface {}{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${goValue(x)}`)
      .join(', ')}}`;
  return String(v);
}

/** Deep equality, key order aside (apiextensions' ratcheting compares decoded values). */
const isEqual = (a: unknown, b: unknown) => isDeepStrictEqual(a, b);

function withFieldPath(field: string, fieldPath: string | undefined): string {
  if (!fieldPath) return field;
  const parts = [...fieldPath.matchAll(/\.([^.[\]]+)|\['((?:[^'\\]|\\.)*)'\]/g)].map(
    (m) => m[1] ?? m[2] ?? '',
  );
  return parts.reduce((f, p) => (f ? `${f}.${p}` : p), field);
}

function ruleError(field: string, schema: JSONSchemaProps, message: string, reason?: string): FieldError {
  const type = schema.type ?? '';
  switch (reason) {
    case 'FieldValueForbidden':
      return { type: reason, field, detail: `Forbidden: ${message}` };
    case 'FieldValueRequired':
      return { type: reason, field, detail: `Required value: ${message}` };
    case 'FieldValueDuplicate':
      return { type: reason, field, detail: `Duplicate value: "${type}"` };
    default:
      return { type: 'FieldValueInvalid', field, detail: `Invalid value: "${type}": ${message}` };
  }
}

/** What {@link validateRules} found: errors refuse the write, warnings go back in `Warning` headers. */
export interface RuleResult {
  errors: FieldError[];
  warnings: string[];
}

/**
 * Runs the CEL rules and list-type checks of `schema` on `value` (and `old`, on an update).
 * @param field the value's field path (`''` at the object's root, `spec` below it).
 */
export function validateRules(
  schema: JSONSchemaProps | undefined,
  value: unknown,
  old: unknown,
  field: string,
  out: RuleResult,
): void {
  if (!schema || value === null || value === undefined) return;
  const where = field || '<root>';
  const unchanged = old !== undefined && isEqual(value, old);
  const rules = (schema['x-kubernetes-validations'] as ValidationRule[] | undefined) ?? [];
  if (rules.length) {
    const self = celValue(value, schema);
    const oldSelf = old === undefined || old === null ? undefined : celValue(old, schema);
    for (const rule of rules) {
      const transition = /\boldSelf\b/.test(rule.rule);
      if (transition && oldSelf === undefined) continue;
      const bindings = (oldSelf === undefined ? { self } : { self, oldSelf }) as unknown as Record<
        string,
        never
      >;
      const fail = (e: FieldError) => {
        if (!transition && unchanged) out.warnings.push(`${e.field}: ${e.detail}`);
        else out.errors.push(e);
      };
      const p = program(rule.rule);
      let result: unknown;
      if (p instanceof Error) result = p;
      else
        try {
          result = p(bindings);
        } catch (err) {
          result = err;
        }
      if (result === true) continue;
      if (result instanceof Error || isCelError(result)) {
        const message = (result as Error).message.replace(/^field not found: /, 'no such key: ');
        fail(ruleError(where, schema, `${message} evaluating rule: ${rule.rule.trim()}`));
        continue;
      }
      let message = rule.message?.trim() || `failed rule: ${rule.rule.trim()}`;
      const m = rule.messageExpression ? program(rule.messageExpression) : undefined;
      if (m && !(m instanceof Error)) {
        try {
          const text = m(bindings);
          if (typeof text === 'string' && text.trim() && !text.includes('\n')) message = text.trim();
        } catch {
          // kube-apiserver logs a failed messageExpression and answers with the message.
        }
      }
      fail(ruleError(withFieldPath(where, rule.fieldPath), schema, message, rule.reason));
    }
  }
  if (Array.isArray(value)) {
    const type = schema['x-kubernetes-list-type'];
    const keys = schema['x-kubernetes-list-map-keys'] as string[] | undefined;
    if (!unchanged) out.errors.push(...listTypeErrors(type, keys, value, where));
    const oldItems = Array.isArray(old) ? old : [];
    value.forEach((item, i) => {
      let oldItem: unknown;
      if (type === 'map' && keys)
        oldItem = oldItems.find((o) => keys.every((k) => isEqual(o?.[k], item?.[k])));
      else if (type === 'set') oldItem = oldItems.find((o) => isEqual(o, item));
      validateRules(schema.items, item, oldItem, `${field}[${i}]`, out);
    });
  } else if (typeof value === 'object') {
    const oldObject = old && typeof old === 'object' ? (old as Record<string, unknown>) : undefined;
    const extra = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (!field && (k === 'apiVersion' || k === 'kind' || k === 'metadata')) continue;
      const named = schema.properties?.[k];
      const at = named ? (field ? `${field}.${k}` : k) : `${field}[${k}]`;
      validateRules(named ?? extra, v, oldObject?.[k], at, out);
    }
  }
}

function listTypeErrors(
  type: unknown,
  keys: string[] | undefined,
  list: unknown[],
  field: string,
): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  list.forEach((item, i) => {
    let id: unknown;
    if (type === 'set') id = item;
    else if (type === 'map' && keys && item && typeof item === 'object')
      id = Object.fromEntries(keys.map((k) => [k, (item as Record<string, unknown>)[k]]));
    else return;
    const text = JSON.stringify(id);
    if (seen.has(text))
      errors.push({
        type: 'FieldValueDuplicate',
        field: `${field}[${i}]`,
        detail: `Duplicate value: ${goValue(id)}`,
      });
    seen.add(text);
  });
  return errors;
}

const LIST_TYPES = ['atomic', 'set', 'map'];
const REASONS = ['FieldValueDuplicate', 'FieldValueForbidden', 'FieldValueInvalid', 'FieldValueRequired'];

/**
 * What apiextensions' CRD validation refuses in a schema's list types and CEL rules
 * (`ValidateCustomResourceDefinitionOpenAPISchema`): an unknown `x-kubernetes-list-type`; map keys
 * without `map`, `map` without keys, with items that are not objects, keys that are not item
 * properties or neither required nor defaulted; a rule that is empty, does not parse, names
 * `oldSelf` in the items of a list other than a `map` (uncorrelatable), a message that is blank or has a line break, an
 * unsupported `reason`. Not checked: the rules' types and estimated cost (cel-go's checker), so a
 * rule that parses here may still be refused by kube-apiserver; a parse error's detail is
 * `compilation failed: <@bufbuild/cel's message>`, not cel-go's.
 * @param path the schema's field path, e.g. `spec.versions[0].schema.openAPIV3Schema`
 */
export function schemaRuleErrors(schema: JSONSchemaProps | undefined, path: string): FieldError[] {
  const { schemaErrors, celErrors } = ruleErrorsOf(schema, path, undefined);
  return [...schemaErrors, ...celErrors];
}

/**
 * {@link schemaRuleErrors} of one node and below, apart: CEL errors of a node are looked for only
 * when no schema error was found at it or below (apiextensions skips compiling then: an invalid
 * schema has no CEL types).
 */
function ruleErrorsOf(
  schema: JSONSchemaProps | undefined,
  path: string,
  uncorrelatable: string | undefined,
): { schemaErrors: FieldError[]; celErrors: FieldError[] } {
  if (!schema || typeof schema !== 'object') return { schemaErrors: [], celErrors: [] };
  const errs: FieldError[] = [];
  const cel: FieldError[] = [];
  const below: { schemaErrors: FieldError[]; celErrors: FieldError[] }[] = [];
  const listType = schema['x-kubernetes-list-type'] as string | undefined;
  const keys = (schema['x-kubernetes-list-map-keys'] as string[] | undefined) ?? [];
  if (listType !== undefined && !LIST_TYPES.includes(listType))
    errs.push({
      type: 'FieldValueNotSupported',
      field: `${path}.x-kubernetes-list-type`,
      detail: `Unsupported value: ${JSON.stringify(listType)}: supported values: "atomic", "set", "map"`,
    });
  if (keys.length > 0 && listType !== 'map')
    errs.push(
      listType === undefined
        ? {
            type: 'FieldValueRequired',
            field: `${path}.x-kubernetes-list-type`,
            detail: 'Required value: must be map if x-kubernetes-list-map-keys is non-empty',
          }
        : {
            type: 'FieldValueInvalid',
            field: `${path}.x-kubernetes-list-type`,
            detail: `Invalid value: ${JSON.stringify(listType)}: must be map if x-kubernetes-list-map-keys is non-empty`,
          },
    );
  if (listType === 'map') {
    const items = schema.items;
    if (keys.length === 0)
      errs.push({
        type: 'FieldValueRequired',
        field: `${path}.x-kubernetes-list-map-keys`,
        detail: 'Required value: must not be empty if x-kubernetes-list-type is map',
      });
    if (!items)
      errs.push({
        type: 'FieldValueRequired',
        field: `${path}.items`,
        detail: 'Required value: must have a schema if x-kubernetes-list-type is map',
      });
    else if (items.type !== 'object')
      errs.push({
        type: 'FieldValueInvalid',
        field: `${path}.items.type`,
        detail: `Invalid value: ${JSON.stringify(items.type ?? '')}: must be object if parent array's x-kubernetes-list-type is map`,
      });
    else
      for (const k of keys) {
        const property = items.properties?.[k];
        if (!property) {
          errs.push({
            type: 'FieldValueInvalid',
            field: `${path}.x-kubernetes-list-map-keys`,
            detail: `Invalid value: []string{${keys.map((x) => JSON.stringify(x)).join(', ')}}: entries must all be names of item properties`,
          });
          continue;
        }
        if (!(items.required ?? []).includes(k) && property.default === undefined)
          errs.push({
            type: 'FieldValueRequired',
            field: `${path}.items.properties[${k}].default`,
            detail:
              'Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property',
          });
      }
  }
  const rules = (schema['x-kubernetes-validations'] as ValidationRule[] | undefined) ?? [];
  rules.forEach((rule, i) => {
    const at = `${path}.x-kubernetes-validations[${i}]`;
    const text = (rule.rule ?? '').trim();
    if (!text) {
      errs.push({
        type: 'FieldValueRequired',
        field: `${at}.rule`,
        detail: 'Required value: rule is not specified',
      });
      return;
    }
    if (rule.message !== undefined && rule.message.length > 0 && !rule.message.trim())
      errs.push({
        type: 'FieldValueInvalid',
        field: `${at}.message`,
        detail: `Invalid value: ${JSON.stringify(rule.message)}: message must be non-empty if specified`,
      });
    else if (/[\n\r]/.test(rule.message ?? ''))
      errs.push({
        type: 'FieldValueInvalid',
        field: `${at}.message`,
        detail: `Invalid value: ${JSON.stringify(rule.message)}: message must not contain line breaks`,
      });
    if (rule.reason !== undefined && !REASONS.includes(rule.reason))
      errs.push({
        type: 'FieldValueNotSupported',
        field: `${at}.reason`,
        detail: `Unsupported value: ${JSON.stringify(rule.reason)}: supported values: ${REASONS.map((r) => JSON.stringify(r)).join(', ')}`,
      });
    for (const [key, expression] of [
      ['rule', rule.rule],
      ['messageExpression', rule.messageExpression],
    ] as const) {
      if (expression === undefined) continue;
      const p = program(expression);
      if (p instanceof Error)
        cel.push({
          type: 'FieldValueInvalid',
          field: `${at}.${key}`,
          detail: `Invalid value: ${JSON.stringify(expression)}: compilation failed: ${p.message}`,
        });
    }
    if (uncorrelatable && /\boldSelf\b/.test(text))
      cel.push({
        type: 'FieldValueInvalid',
        field: `${at}.rule`,
        detail: `Invalid value: ${JSON.stringify(rule.rule)}: oldSelf cannot be used on the uncorrelatable portion of the schema within ${uncorrelatable}`,
      });
  });
  for (const [k, sub] of Object.entries(schema.properties ?? {}))
    below.push(ruleErrorsOf(sub, `${path}.properties[${k}]`, uncorrelatable));
  if (typeof schema.additionalProperties === 'object')
    below.push(ruleErrorsOf(schema.additionalProperties, `${path}.additionalProperties`, uncorrelatable));
  if (schema.items)
    // Only a map list's items have an old value to correlate with, by key (apiextensions'
    // withForbidOldSelfValidations for every other list).
    below.push(
      ruleErrorsOf(schema.items, `${path}.items`, uncorrelatable ?? (listType === 'map' ? undefined : path)),
    );
  const schemaErrors = [...errs, ...below.flatMap((b) => b.schemaErrors)];
  return {
    schemaErrors,
    celErrors: [...(schemaErrors.length === 0 ? cel : []), ...below.flatMap((b) => b.celErrors)],
  };
}
