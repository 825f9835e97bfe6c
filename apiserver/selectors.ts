/**
 * Label and field selectors as k8s.io/apimachinery/pkg/labels and pkg/fields parse and match them.
 */
import { badRequest } from './status.ts';

export interface LabelRequirement {
  key: string;
  op: 'in' | 'notin' | 'exists' | '!' | '=' | '==' | '!=' | 'gt' | 'lt';
  values: string[];
}

/** A parsed label selector; an empty one matches everything. */
export interface LabelSelector {
  requirements: LabelRequirement[];
  matches(labels: Record<string, string> | undefined): boolean;
}

const KEY_RE =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE_RE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function tokenize(input: string): string[] {
  const tokens: string[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i] as string;
    if (c === ' ' || c === '\t') {
      i++;
      continue;
    }
    if (c === '(' || c === ')' || c === ',') {
      tokens.push(c);
      i++;
      continue;
    }
    const two = input.slice(i, i + 2);
    if (two === '==' || two === '!=') {
      tokens.push(two);
      i += 2;
      continue;
    }
    if (c === '=' || c === '!' || c === '>' || c === '<') {
      tokens.push(c);
      i++;
      continue;
    }
    let j = i;
    while (j < input.length && !' \t(),=!<>'.includes(input[j] as string)) j++;
    tokens.push(input.slice(i, j));
    i = j;
  }
  return tokens;
}

/**
 * Parses a label selector string (`a=b,c!=d,e in (x,y),f notin (z),g,!h`).
 * @throws ApiError 400 BadRequest `unable to parse requirement: ...` on a malformed selector.
 */
export function parseLabelSelector(input: string | null | undefined): LabelSelector {
  const requirements: LabelRequirement[] = [];
  const text = (input ?? '').trim();
  if (text) {
    const t = tokenize(text);
    let p = 0;
    const fail = (why: string) => badRequest(`unable to parse requirement: ${why}`);
    const checkKey = (key: string) => {
      if (!KEY_RE.test(key) || key.length > 316)
        throw fail(
          `<nil>: Invalid value: "${key}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
        );
    };
    const checkValue = (v: string) => {
      if (!VALUE_RE.test(v) || v.length > 63)
        throw fail(
          `values[0]: Invalid value: "${v}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
        );
    };
    for (;;) {
      let tok = t[p++];
      if (tok === undefined) throw fail("found '', expected: identifier");
      if (tok === '!') {
        const key = t[p++];
        if (!key || '(),=!<>'.includes(key))
          throw fail(`found '${key ?? ''}', expected: identifier after '!'`);
        checkKey(key);
        requirements.push({ key, op: '!', values: [] });
      } else {
        const key = tok;
        if ('(),=!<>'.includes(key))
          throw fail(`found '${key}', expected: !, identifier, or 'end of string'`);
        checkKey(key);
        tok = t[p];
        if (tok === undefined || tok === ',') {
          requirements.push({ key, op: 'exists', values: [] });
        } else if (tok === '=' || tok === '==' || tok === '!=') {
          p++;
          let value = t[p];
          if (value === undefined || value === ',') value = '';
          else p++;
          checkValue(value);
          requirements.push({ key, op: tok, values: [value] });
        } else if (tok === '>' || tok === '<') {
          p++;
          const value = t[p++] ?? '';
          if (!/^-?\d+$/.test(value)) throw fail(`for 'Gt', 'Lt' operators, the value must be an integer`);
          requirements.push({ key, op: tok === '>' ? 'gt' : 'lt', values: [value] });
        } else if (tok === 'in' || tok === 'notin') {
          p++;
          if (t[p++] !== '(') throw fail(`found '${t[p - 1] ?? ''}', expected: '('`);
          const values: string[] = [];
          for (;;) {
            const v = t[p++];
            if (v === undefined) throw fail("found '', expected: ')'");
            if (v === ')') break;
            if (v === ',') continue;
            checkValue(v);
            values.push(v);
          }
          requirements.push({ key, op: tok, values });
        } else {
          throw fail(`found '${tok}', expected: in, notin, =, ==, !=, gt, lt`);
        }
      }
      const sep = t[p];
      if (sep === undefined) break;
      if (sep !== ',') throw fail(`found '${sep}', expected: ',' or 'end of string'`);
      p++;
    }
  }
  return {
    requirements,
    matches(labels) {
      const l = labels ?? {};
      return requirements.every((r) => {
        const has = Object.hasOwn(l, r.key);
        const v = l[r.key];
        switch (r.op) {
          case 'exists':
            return has;
          case '!':
            return !has;
          case '=':
          case '==':
          case 'in':
            return has && r.values.includes(v as string);
          case '!=':
          case 'notin':
            return !has || !r.values.includes(v as string);
          case 'gt':
            return has && /^-?\d+$/.test(v as string) && Number(v) > Number(r.values[0]);
          case 'lt':
            return has && /^-?\d+$/.test(v as string) && Number(v) < Number(r.values[0]);
        }
        return false;
      });
    },
  };
}

export interface FieldRequirement {
  field: string;
  op: '=' | '!=';
  value: string;
}

/** Splits on unescaped `sep` (fields.splitTerms). */
function splitUnescaped(s: string, sep: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === '\\' && i + 1 < s.length) {
      cur += c + (s[i + 1] as string);
      i++;
    } else if (c === sep) {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out;
}

function unescapeValue(v: string): string {
  return v.replace(/\\(.)/g, '$1');
}

/**
 * Parses a field selector (`metadata.name=x,type!=kubernetes.io/tls`).
 * @throws ApiError 400 on a malformed term.
 */
export function parseFieldSelector(input: string | null | undefined): FieldRequirement[] {
  const text = (input ?? '').trim();
  if (!text) return [];
  return splitUnescaped(text, ',').map((term) => {
    const m = /^([^=!]+)(==|!=|=)(.*)$/.exec(term);
    if (!m) throw badRequest(`invalid selector: '${text}'; can't understand '${term}'`);
    const field = (m[1] as string).trim();
    return { field, op: m[2] === '!=' ? '!=' : '=', value: unescapeValue(m[3] as string) };
  });
}

/** Whether `values` (field label → value) satisfies every requirement. */
export function fieldsMatch(reqs: FieldRequirement[], value: (field: string) => string): boolean {
  return reqs.every((r) => (r.op === '=' ? value(r.field) === r.value : value(r.field) !== r.value));
}
