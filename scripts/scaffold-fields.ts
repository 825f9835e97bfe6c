/**
 * The field grammar of the scaffold's `--spec` and `--status` (scripts/new-controller.ts,
 * `levelset new controller`): scalars, arrays and objects, nested at will. Kept apart from the
 * scaffold so that the command line's `--help` prints it without loading the generator.
 */

export const SCALAR_TYPES = ['string', 'integer', 'number', 'boolean'] as const;
export type ScalarType = (typeof SCALAR_TYPES)[number];

/** A field's type: a scalar, an array of a type (`items`), or an object of fields (`fields`). */
export type FieldType =
  | { type: ScalarType }
  | { type: 'array'; items: FieldType }
  | { type: 'object'; fields: Field[] };

/** One spec or status field. */
export type Field = FieldType & {
  name: string;
  required?: boolean;
};

/** The grammar of `--spec`/`--status`, as `--help` and the guide print it. */
export const FIELDS_GRAMMAR =
  'name:type[!],… where type is string|integer|number|boolean, T[] or [T] (an array of T), or {name:type[!],…} (an object); ! = required; e.g. sources:[{namespace:string!,name:string!}]';

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
      const t = fieldType();
      fields.push({ ...t, name, required: eat('!') });
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
    }
    while (eat('[]')) t = { type: 'array', items: t };
    return t;
  };
  const fields = fieldList();
  skip();
  if (at < text.length) fail('"," and another field');
  return fields;
}

/** Whether `t` is a scalar (a printer column can show it). */
export const isScalar = (t: FieldType): t is { type: ScalarType } =>
  (SCALAR_TYPES as readonly string[]).includes(t.type);
