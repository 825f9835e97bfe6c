/**
 * CEL validation rules and list types declared beside a zod schema, written into the CRD
 * (`x-kubernetes-validations`, `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`) and checked
 * again by the reconcile (steps.ts `validatePrimary`): one rule, one string, enforced by the API server
 * on every write and by the kit on every reconcile, so an object stored before a rule existed is
 * `Ready=False/InvalidSpec` with the rule's message.
 *
 * The rules are evaluated with `@bufbuild/cel` (docs/architecture.md, decision "CEL from npm"): the
 * CEL standard library, its `strings` extension, RE2 regular expressions (Go's, as kube-apiserver's),
 * and Kubernetes' list and regex libraries as {@link kubernetesFuncs}. Not covered: optional types
 * (`self.?x`, `optional.of`: the parser refuses them, so {@link celRule} throws), `quantity()`, `url()`,
 * `ip()`/`cidr()`, `format`'s Kubernetes formats, and the static type checker and cost estimate
 * kube-apiserver runs when a CRD is written (a rule that type-checks here may still be refused there).
 *
 * The walk and the wording follow apiextensions-apiserver's `pkg/apiserver/schema/cel/validation.go`
 * (`validateExpressions`): rules of a node run only on a non-null value; a rule that names `oldSelf`
 * (a transition rule) only where an old value exists (never in the reconcile: it has no old object);
 * a false rule is `field.Invalid(path, <schema type>, message)` with `message` trimmed, or `failed
 * rule: <rule>` when there is none, or the `messageExpression`'s string; `reason` picks
 * `FieldValueForbidden`/`Required`/`Duplicate` instead; an evaluation error is `<error> evaluating
 * rule: <rule>`. Lists typed `set` refuse a duplicate item, `map` a duplicate key
 * (`field.Duplicate(path[i], value)`, apiextensions' listtype validation).
 */
import { isDeepStrictEqual } from 'node:util';
import {
  CelScalar,
  celEnv,
  listType as celListType,
  celMethod,
  isCelError,
  parse,
  plan,
} from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import { RE2JS } from 're2js';
import * as z from 'zod';
import { crdSchemaOf, type JSONSchemaProps } from './crd-schema.ts';

/** One `x-kubernetes-validations` entry (apiextensions.k8s.io/v1 `ValidationRule`). */
export interface ValidationRule {
  /** The CEL expression, true when valid; `self` is the value at the rule's node, `oldSelf` its old value. */
  rule: string;
  /** What the API server answers when the rule is false (no line breaks); default `failed rule: <rule>`. */
  message?: string;
  /** A CEL expression giving the message (a string), used before `message` when it evaluates. */
  messageExpression?: string;
  /** A relative path from the rule's node to the field the error names, e.g. `.maxReplicas`. */
  fieldPath?: string;
  /** The cause's reason; default `FieldValueInvalid`. */
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

/** `x-kubernetes-list-type`: how the API server compares and merges a list's items. */
export type ListType = 'atomic' | 'set' | 'map';

const VALIDATIONS = 'x-kubernetes-validations';
const LIST_TYPE = 'x-kubernetes-list-type';
const LIST_MAP_KEYS = 'x-kubernetes-list-map-keys';

type Ordered = bigint | number | string;

/** The item of a non-empty list that `before` puts first (ints, doubles or strings, not mixed). */
function extreme(items: Ordered[], before: (x: Ordered, y: Ordered) => boolean): Ordered {
  let best = items[0] as Ordered;
  for (const v of items) if (before(v, best)) best = v;
  return best;
}

/** Go's `regexp` semantics (RE2), as kube-apiserver's: `@bufbuild/cel`'s `matches` is RE2 too. */
function re2(pattern: string): RE2JS {
  return RE2JS.compile(pattern);
}

/**
 * Kubernetes' CEL list library (k8s.io/apiserver/pkg/cel/library lists.go: `isSorted`, `sum`, `min`,
 * `max`, `indexOf`, `lastIndexOf`) and regex library (regex.go: `find`, `findAll`), over `@bufbuild/cel`;
 * made with the environment, at the first expression compiled.
 */
function kubernetesFuncs() {
  const { DYN, INT, BOOL, STRING } = CelScalar;
  const LIST = celListType(DYN);
  return [
    celMethod('isSorted', LIST, [], BOOL, function () {
      const items = [...this] as Ordered[];
      return items.every((v, i) => i === 0 || (items[i - 1] as Ordered) <= v);
    }),
    celMethod('sum', LIST, [], DYN, function () {
      const items = [...this] as number[];
      return items.length === 0 ? 0n : items.reduce((a, b) => a + b);
    }),
    celMethod('min', LIST, [], DYN, function () {
      const items = [...this] as Ordered[];
      if (items.length === 0) throw new Error('min called on empty list');
      return extreme(items, (x, y) => x < y);
    }),
    celMethod('max', LIST, [], DYN, function () {
      const items = [...this] as Ordered[];
      if (items.length === 0) throw new Error('max called on empty list');
      return extreme(items, (x, y) => x > y);
    }),
    celMethod('indexOf', LIST, [DYN], INT, function (x) {
      return BigInt([...this].indexOf(x));
    }),
    celMethod('lastIndexOf', LIST, [DYN], INT, function (x) {
      return BigInt([...this].lastIndexOf(x));
    }),
    celMethod('find', STRING, [STRING], STRING, function (pattern) {
      const m = re2(pattern).matcher(this);
      return m.find() ? (m.group() ?? '') : '';
    }),
    celMethod('findAll', STRING, [STRING], celListType(STRING), function (pattern) {
      const m = re2(pattern).matcher(this);
      const found: string[] = [];
      while (m.find()) found.push(m.group() ?? '');
      return found;
    }),
  ];
}

/** The CEL environment, made at the first expression compiled. */
let env: ReturnType<typeof celEnv> | undefined;
const programs = new Map<string, ReturnType<typeof plan>>();

/**
 * The planned program of a CEL expression, cached by its text.
 * @throws {Error} `<input>:<line>:<column>: …`: the expression does not parse.
 */
function program(expression: string): ReturnType<typeof plan> {
  let p = programs.get(expression);
  if (!p) {
    env ??= celEnv({ funcs: [...strings, ...kubernetesFuncs()] });
    p = plan(env, parse(expression));
    programs.set(expression, p);
  }
  return p;
}

/**
 * The compiler of a rule's expressions, set by the first {@link celRule}: the spec check
 * ({@link ruleViolations}) reaches the CEL engine only through it, so a bundle whose controllers
 * declare no rule holds no CEL engine (decision 81). `undefined` while no rule was declared with
 * {@link celRule} in this process: a schema's `x-kubernetes-validations` written by hand are then
 * not evaluated here (the API server still enforces them on every write).
 */
let compileRule: typeof program | undefined;

/** Whether a rule names `oldSelf` (a transition rule; apiextensions' `UsesOldSelf`). */
export function usesOldSelf(rule: string): boolean {
  return /\boldSelf\b/.test(rule);
}

/**
 * `schema` with a CEL validation rule at its node, as kubebuilder's
 * `+kubebuilder:validation:XValidation:rule=…,message=…` marker: written into the CRD's
 * `x-kubernetes-validations` by `levelset build` and checked by the reconcile. Rules add up.
 * @example celRule(z.object({ min: z.int(), max: z.int() }), { rule: 'self.min <= self.max', message: 'min must not exceed max' })
 * @example celRule(z.string(), { rule: 'self == oldSelf', message: 'deploymentName is immutable' })
 * @throws {Error} `celRule: <rule>: <parse error>` when the rule (or its messageExpression) does not parse,
 *   or a message has a line break (apiextensions refuses both).
 */
export function celRule<S extends z.ZodType>(schema: S, rule: ValidationRule): S {
  compileRule ??= program;
  for (const expression of [rule.rule, rule.messageExpression]) {
    if (expression === undefined) continue;
    try {
      program(expression);
    } catch (err) {
      throw new Error(`celRule: ${expression}: ${(err as Error).message}`);
    }
  }
  if (rule.message?.includes('\n')) throw new Error(`celRule: ${rule.rule}: a message has no line breaks`);
  const meta = z.globalRegistry.get(schema) ?? {};
  const rules = [...((meta[VALIDATIONS] as ValidationRule[] | undefined) ?? []), { ...rule }];
  return schema.meta({ ...meta, [VALIDATIONS]: rules }) as S;
}

/**
 * `schema` (an array) with a list type, as kubebuilder's `+listType` and `+listMapKey` markers:
 * `set` (unique scalars: the API server refuses a duplicate, server-side apply merges by value),
 * `map` with `keys` (objects unique by those fields, merged by key), `atomic` (replaced whole).
 * @throws {Error} `map` without keys, or keys with another type; a `map` list whose items are not
 *   objects, or a key that is not an item field or is optional without a default (kube-apiserver
 *   refuses such a CRD).
 */
export function listType<S extends z.ZodArray>(schema: S, type: 'set' | 'atomic'): S;
/** A `map` list: its items are objects unique by `keys` (`+listType=map`, `+listMapKey=…`). */
export function listType<S extends z.ZodArray>(schema: S, type: 'map', keys: readonly string[]): S;
export function listType<S extends z.ZodArray>(schema: S, type: ListType, keys?: readonly string[]): S {
  if ((type === 'map') !== Boolean(keys?.length))
    throw new Error(`listType: ${type === 'map' ? 'a map list needs keys' : `a ${type} list has no keys`}`);
  if (type === 'map') {
    // apiextensions refuses a map list whose items are not objects, or a key that is not an item
    // field, or one neither required nor defaulted.
    const element = schema.element;
    if (!(element instanceof z.ZodObject)) throw new Error('listType: a map list holds objects');
    for (const k of keys ?? []) {
      const field = element.shape[k] as z.ZodType | undefined;
      if (!field) throw new Error(`listType: the map key ${k} is not a field of the items`);
      if (field.isOptional() && !(field instanceof z.ZodDefault))
        throw new Error(`listType: the map key ${k} must be required or have a default`);
    }
  }
  const meta = z.globalRegistry.get(schema) ?? {};
  return schema.meta({ ...meta, [LIST_TYPE]: type, ...(keys ? { [LIST_MAP_KEYS]: [...keys] } : {}) }) as S;
}

/** One failed rule or list type: a field error as kube-apiserver words it. */
export interface RuleViolation {
  /** `FieldValueInvalid`, `FieldValueDuplicate`, …: the cause's reason. */
  reason: string;
  /** The field path, e.g. `spec.autoscale` or `spec.flavors[1]`. */
  field: string;
  /** `Invalid value: "object": <message>`, `Duplicate value: "vanilla"`: the cause's message. */
  detail: string;
  /** The rule's message alone (or `Duplicate value`), for tests. */
  message: string;
}

/** A JSON value as CEL sees it under its schema: integers are `int` (bigint), numbers `double`. */
function celValue(value: unknown, schema: JSONSchemaProps | undefined): unknown {
  if (typeof value === 'number')
    return schema?.type === 'number' || !Number.isInteger(value) ? value : BigInt(value);
  if (Array.isArray(value)) return value.map((v) => celValue(v, schema?.items as JSONSchemaProps));
  if (value && typeof value === 'object') {
    const props = schema?.properties as Record<string, JSONSchemaProps> | undefined;
    const extra = schema?.additionalProperties as JSONSchemaProps | undefined;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, celValue(v, props?.[k] ?? (extra || undefined))]),
    );
  }
  return value;
}

/** Go's `%q`-like rendering of a value in a field error (apimachinery field.Error). */
function goValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v && typeof v === 'object')
    return `map[string]interface {}{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${goValue(x)}`)
      .join(', ')}}`;
  return String(v);
}

function schemaType(schema: JSONSchemaProps): string {
  return typeof schema.type === 'string' ? schema.type : '';
}

function violation(field: string, schema: JSONSchemaProps, message: string, reason?: string): RuleViolation {
  switch (reason) {
    case 'FieldValueForbidden':
      return { reason, field, detail: `Forbidden: ${message}`, message };
    case 'FieldValueRequired':
      return { reason, field, detail: `Required value: ${message}`, message };
    case 'FieldValueDuplicate':
      return { reason, field, detail: `Duplicate value: "${schemaType(schema)}"`, message };
    default:
      return {
        reason: 'FieldValueInvalid',
        field,
        detail: `Invalid value: "${schemaType(schema)}": ${message}`,
        message,
      };
  }
}

/** A rule's relative `fieldPath` (`.a.b`, `['x.y']`) appended to a field path. */
function withFieldPath(field: string, fieldPath: string | undefined): string {
  if (!fieldPath) return field;
  const parts = [...fieldPath.matchAll(/\.([^.[\]]+)|\['((?:[^'\\]|\\.)*)'\]/g)].map(
    (m) => m[1] ?? m[2] ?? '',
  );
  return parts.reduce((f, p) => (f ? `${f}.${p}` : `${p}`), field);
}

/** cel-go's words for `@bufbuild/cel`'s runtime errors where they differ (`no such key: x`). */
function celGoError(message: string): string {
  return message.replace(/^field not found: /, 'no such key: ');
}

/** Deep equality, key order aside. */
function isEqual(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(a, b);
}

/** Options of {@link ruleViolations}. */
export interface RuleCheckOptions {
  /** Skip the rules of a node whose value equals its old one (apiextensions' validation ratcheting). */
  ratchet?: boolean;
}

/**
 * The violations of the `x-kubernetes-validations` rules and list types of a structural schema by a
 * value (and its old value, for transition rules), walking the schema as apiextensions-apiserver does.
 * @param field the value's field path (`spec`), prefixed to every violation's `field`.
 * @param old the stored value, or `undefined` (a create, or the reconcile: transition rules skipped).
 */
export function ruleViolations(
  schema: JSONSchemaProps | undefined,
  value: unknown,
  old: unknown,
  field: string,
  options: RuleCheckOptions = {},
): RuleViolation[] {
  if (!schema || value === null || value === undefined) return [];
  const out: RuleViolation[] = [];
  const rules = (schema[VALIDATIONS] as ValidationRule[] | undefined) ?? [];
  const ratcheted = options.ratchet && old !== undefined && isEqual(value, old);
  const compile = compileRule;
  if (rules.length && compile) {
    const self = celValue(value, schema);
    const oldSelf = old === undefined || old === null ? undefined : celValue(old, schema);
    for (const rule of rules) {
      const transition = usesOldSelf(rule.rule);
      if (transition && oldSelf === undefined) continue;
      if (!transition && ratcheted) continue;
      const bindings = (oldSelf === undefined ? { self } : { self, oldSelf }) as unknown as Record<
        string,
        never
      >;
      const at = withFieldPath(field, rule.fieldPath);
      let result: unknown;
      try {
        result = compile(rule.rule)(bindings);
      } catch (err) {
        result = err;
      }
      if (result === true) continue;
      if (isCelError(result) || result instanceof Error) {
        out.push(
          violation(
            field,
            schema,
            `${celGoError((result as Error).message)} evaluating rule: ${rule.rule.trim()}`,
          ),
        );
        continue;
      }
      let message = rule.message?.trim() || `failed rule: ${rule.rule.trim()}`;
      if (rule.messageExpression) {
        try {
          const m = compile(rule.messageExpression)(bindings);
          if (typeof m === 'string' && m.trim() && !m.includes('\n')) message = m.trim();
        } catch {
          // kube-apiserver logs a failed messageExpression and uses the message.
        }
      }
      out.push(violation(at, schema, message, rule.reason));
    }
  }
  if (Array.isArray(value)) {
    out.push(...listTypeViolations(schema, value, field));
    const items = schema.items as JSONSchemaProps | undefined;
    const oldItems = Array.isArray(old) ? old : [];
    const keys = schema[LIST_MAP_KEYS] as string[] | undefined;
    value.forEach((item, i) => {
      // Old items are correlated by key in a map list, by value in a set, never in an atomic list.
      let oldItem: unknown;
      if (schema[LIST_TYPE] === 'map' && keys)
        oldItem = oldItems.find((o) => keys.every((k) => isEqual(o?.[k], item?.[k])));
      else if (schema[LIST_TYPE] === 'set') oldItem = oldItems.find((o) => isEqual(o, item));
      out.push(...ruleViolations(items, item, oldItem, `${field}[${i}]`, options));
    });
  } else if (typeof value === 'object') {
    const props = schema.properties as Record<string, JSONSchemaProps> | undefined;
    const extra = schema.additionalProperties as JSONSchemaProps | undefined;
    const oldObject = old && typeof old === 'object' ? (old as Record<string, unknown>) : undefined;
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const sub = props?.[k] ?? (typeof extra === 'object' ? extra : undefined);
      const at = props?.[k] ? (field ? `${field}.${k}` : k) : `${field}[${k}]`;
      out.push(...ruleViolations(sub, v, oldObject?.[k], at, options));
    }
  }
  return out;
}

/** Duplicate items of a `set` list, duplicate keys of a `map` list (apiextensions' listtype validation). */
export function listTypeViolations(schema: JSONSchemaProps, list: unknown[], field: string): RuleViolation[] {
  const out: RuleViolation[] = [];
  const type = schema[LIST_TYPE];
  const keys = schema[LIST_MAP_KEYS] as string[] | undefined;
  const seen = new Set<string>();
  list.forEach((item, i) => {
    let id: unknown;
    if (type === 'set') id = item;
    else if (type === 'map' && keys && item && typeof item === 'object')
      id = Object.fromEntries(keys.map((k) => [k, (item as Record<string, unknown>)[k]]));
    else return;
    const text = JSON.stringify(id);
    if (seen.has(text)) {
      const detail = `Duplicate value: ${goValue(id)}`;
      out.push({ reason: 'FieldValueDuplicate', field: `${field}[${i}]`, detail, message: detail });
    }
    seen.add(text);
  });
  return out;
}

const specSchemas = new WeakMap<z.ZodType, JSONSchemaProps | null>();

/**
 * The violations of the CEL rules and list types declared in a zod `spec` schema by a stored spec, as
 * the reconcile checks them (no old object: transition rules are skipped). The structural schema is
 * made once per zod schema ({@link crdSchemaOf}, the one `levelset build` writes into the CRD).
 * @returns `[]` when the schema has no CRD form (it throws in `levelset build` instead).
 */
export function specRuleViolations(schema: z.ZodType, spec: unknown, old?: unknown): RuleViolation[] {
  let structural = specSchemas.get(schema);
  if (structural === undefined) {
    try {
      structural = crdSchemaOf(schema, '.spec').schema;
    } catch {
      structural = null;
    }
    specSchemas.set(schema, structural);
  }
  return structural ? ruleViolations(structural, spec, old, 'spec') : [];
}

/** A violation as kube-apiserver's field error prints it: `spec.autoscale: Invalid value: "object": …`. */
export function violationText(v: RuleViolation): string {
  return `${v.field}: ${v.detail}`;
}
