/**
 * The field grammar of the scaffold's `--spec` and `--status` (cli/scaffold/new-controller.ts,
 * `levelset new controller`): scalars with their bounds, pattern or allowed values, arrays and
 * objects, nested at will. Kept apart from the scaffold so that the command line's `--help` prints
 * it without loading the generator.
 */
import { RE2JS } from 're2js';

export const SCALAR_TYPES = ['string', 'integer', 'number', 'boolean', 'enum'] as const;
export type ScalarType = (typeof SCALAR_TYPES)[number];

/**
 * What a scalar allows besides its type (zod's `.min`/`.max`/`.regex`, z.enum; the CRD's
 * `minimum`/`maximum`, `minLength`/`maxLength`, `pattern`, `enum`).
 */
export interface Constraints {
  /** integer/number: the least value; string: the least length (characters). */
  min?: number;
  /** integer/number: the greatest value; string: the greatest length (characters). */
  max?: number;
  /** string: an RE2 regular expression (kube-apiserver's) the whole value matches, anchors included as written. */
  pattern?: string;
  /** enum: the values allowed. */
  values?: string[];
  /** The value `example.yaml` uses (default: one within the bounds). */
  example?: string;
}

/** A field's type: a scalar, an array of a type (`items`), or an object of fields (`fields`). */
export type FieldType =
  | ({ type: ScalarType } & Constraints)
  | { type: 'array'; items: FieldType }
  | { type: 'object'; fields: Field[] };

/** One spec or status field. */
export type Field = FieldType & {
  name: string;
  required?: boolean;
};

/** The grammar of `--spec`/`--status`, as `--help` and the guide print it. */
export const FIELDS_GRAMMAR =
  'name:type[(…)][!],… where type is string|integer|number|boolean|enum, T[] or [T] (an array of T), or {name:type[!],…} (an object); ! = required; (…) = integer/number (MIN..MAX) bounds, string (MIN..MAX) length and pattern=RE2 (last), enum(a|b|c) values, any example=VALUE; e.g. size:integer(1..10)!,name:string(3..63,pattern=^[a-z]+$),tier:enum(gold|silver),sources:[{namespace:string!,name:string!}]';

/**
 * Parses fields written in {@link FIELDS_GRAMMAR}: `a:string!,b:integer[],c:{d:string!},e:[{f:number}]`.
 * `!` is allowed after a field's type only (not on array items).
 * @throws {Error} `bad field at column N of "<text>": <what was expected>` for anything else
 */
export function parseFields(text: string | undefined): Field[] {
  if (!text) return [];
  let at = 0;
  const fail = (expected: string): never => {
    throw new Error(`bad field at column ${at + 1} of "${text}": expected ${expected} (${FIELDS_GRAMMAR})`);
  };
  const skip = () => {
    while (text[at] === ' ') at++;
  };
  const eat = (token: string) => {
    skip();
    if (!text.startsWith(token, at)) return false;
    at += token.length;
    return true;
  };
  const word = (pattern: RegExp, what: string) => {
    skip();
    const m = pattern.exec(text.slice(at));
    if (!m) return fail(what);
    at += m[0].length;
    return m[0];
  };
  const fieldList = (): Field[] => {
    const fields: Field[] = [];
    do {
      const name = word(/^[a-z][A-Za-z0-9]*/, 'a field name (lowerCamelCase)');
      if (fields.some((f) => f.name === name)) fail(`a field name other than "${name}" (already given)`);
      if (!eat(':')) fail('":" after the field name');
      let t = fieldType();
      const required = eat('!');
      // `size:integer!(1..10)` reads as well as `size:integer(1..10)!`: both are accepted.
      if (required && isScalar(t) && text[at] === '(') t = constrained(t);
      fields.push({ ...t, name, required });
    } while (eat(','));
    return fields;
  };
  const fieldType = (): FieldType => {
    let t: FieldType;
    if (eat('[')) {
      t = { type: 'array', items: fieldType() };
      if (!eat(']')) fail('"]" closing the array');
    } else if (eat('{')) {
      t = { type: 'object', fields: fieldList() };
      if (!eat('}')) fail('"," or "}" closing the object');
    } else {
      const name = word(/^[a-z]+/, `a type: ${SCALAR_TYPES.join(', ')}, [T] or {…}`);
      if (!(SCALAR_TYPES as readonly string[]).includes(name)) {
        at -= name.length;
        fail(`a type: ${SCALAR_TYPES.join(', ')}, [T] or {…}, not "${name}"`);
      }
      t = { type: name as ScalarType };
      if (name === 'enum' && text[at] !== '(') fail('"(" and the values of the enum, e.g. enum(gold|silver)');
      if (text[at] === '(') t = constrained(t as { type: ScalarType });
    }
    while (eat('[]')) t = { type: 'array', items: t };
    return t;
  };
  /** `(…)` after a scalar type: `MIN..MAX`, `example=V`, `pattern=RE` (last: it may hold `,` and `)`), enum values `a|b`. */
  const constrained = (t: { type: ScalarType } & Constraints): { type: ScalarType } & Constraints => {
    const c: Constraints = {};
    if (t.type === 'boolean') fail('no "(…)" after boolean');
    at++;
    if (t.type === 'enum') {
      c.values = word(/^[A-Za-z0-9_.-]+(\|[A-Za-z0-9_.-]+)*/, 'enum values a|b|c').split('|');
      if (new Set(c.values).size !== c.values.length) fail('enum values without repeats');
    }
    while (text[at] !== ')') {
      if (c.values ? !eat(',') : Object.keys(c).length > 0 && !eat(',')) fail('"," or ")"');
      if (text.startsWith('pattern=', at) && t.type === 'string') {
        at += 'pattern='.length;
        c.pattern = balancedUntilClose();
        try {
          new RegExp(c.pattern, 'u');
          RE2JS.compile(c.pattern);
        } catch (err) {
          fail(`a pattern kube-apiserver (RE2) and JavaScript both accept: ${(err as Error).message}`);
        }
        break;
      }
      if (text.startsWith('example=', at)) {
        at += 'example='.length;
        c.example = word(/^[^,)]+/, 'an example value');
        continue;
      }
      if (t.type === 'enum') fail('"," and example=VALUE, or ")"');
      const m = /^(-?[0-9]+(\.[0-9]+)?)?\.\.(-?[0-9]+(\.[0-9]+)?)?/.exec(text.slice(at));
      if (!m || (m[1] === undefined && m[3] === undefined))
        fail(`MIN..MAX${t.type === 'string' ? ' (length), pattern=RE2' : ''} or example=VALUE`);
      const [min, max] = [m?.[1], m?.[3]].map((v) => (v === undefined ? undefined : Number(v)));
      if (t.type !== 'number' && [min, max].some((v) => v !== undefined && !Number.isInteger(v)))
        fail('whole numbers');
      if (t.type === 'string' && [min, max].some((v) => v !== undefined && v < 0))
        fail('lengths of 0 or more');
      if (min !== undefined && max !== undefined && min > max)
        fail(`MIN no greater than MAX (${min}..${max})`);
      if (min !== undefined) c.min = min;
      if (max !== undefined) c.max = max;
      at += m?.[0].length ?? 0;
    }
    if (!eat(')')) fail('")"');
    return { ...t, ...c };
  };
  /** Text up to the `)` that closes the constraints: parentheses balanced, `\x` and `[…]` read as one. */
  const balancedUntilClose = (): string => {
    const start = at;
    let depth = 0;
    let inClass = false;
    for (; at < text.length; at++) {
      const ch = text[at];
      if (ch === '\\') at++;
      else if (inClass) inClass = ch !== ']';
      else if (ch === '[') inClass = true;
      else if (ch === '(') depth++;
      else if (ch === ')') {
        if (depth === 0) return text.slice(start, at);
        depth--;
      }
    }
    return fail('")" closing the pattern');
  };
  const fields = fieldList();
  skip();
  if (at < text.length) fail('"," and another field');
  return fields;
}

/** Whether `t` is a scalar (a printer column can show it). */
export const isScalar = (t: FieldType): t is { type: ScalarType } & Constraints =>
  (SCALAR_TYPES as readonly string[]).includes(t.type);
