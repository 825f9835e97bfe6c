/**
 * Reads a Terraform module the way the structural tests need it: every `*.tf` parsed to JSON with
 * `@cdktf/hcl2json` (expressions stay as `${...}` strings), every `*.tf.json` read as JSON, merged
 * per block type. No provider, no network.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from '@cdktf/hcl2json';

// biome-ignore lint/suspicious/noExplicitAny: hcl2json returns untyped JSON
export type Body = Record<string, any>;

export interface Module {
  dir: string;
  /** File name → raw text, for `*.tf` and `*.tf.json`. */
  texts: Map<string, string>;
  /** `resource` blocks: type → name → body. */
  resources: Map<string, Map<string, Body>>;
  data: Map<string, Map<string, Body>>;
  variables: Map<string, Body>;
  outputs: Map<string, Body>;
  /** Every local value, from every `locals` block. */
  locals: Map<string, unknown>;
  /** Other top-level blocks (`terraform`, `provider`, `module`, `check`), as parsed, per file. */
  other: Body[];
}

function single(v: unknown): Body {
  return (Array.isArray(v) ? v[0] : v) as Body;
}

/** Parses every `*.tf` and `*.tf.json` directly in `dir` (not in subdirectories). */
export async function loadModule(dir: string): Promise<Module> {
  const m: Module = {
    dir,
    texts: new Map(),
    resources: new Map(),
    data: new Map(),
    variables: new Map(),
    outputs: new Map(),
    locals: new Map(),
    other: [],
  };
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.tf') || f.endsWith('.tf.json'))
    .sort();
  for (const f of files) {
    const text = readFileSync(join(dir, f), 'utf8');
    m.texts.set(f, text);
    const parsed: Body = f.endsWith('.json') ? JSON.parse(text) : await parse(f, text);
    for (const [kind, value] of Object.entries(parsed)) {
      if (kind === '//') continue;
      if (kind === 'resource' || kind === 'data') {
        const target = kind === 'resource' ? m.resources : m.data;
        for (const [type, byName] of Object.entries(value as Body)) {
          const map = target.get(type) ?? new Map<string, Body>();
          for (const [name, body] of Object.entries(byName as Body)) map.set(name, single(body));
          target.set(type, map);
        }
      } else if (kind === 'variable' || kind === 'output') {
        const target = kind === 'variable' ? m.variables : m.outputs;
        for (const [name, body] of Object.entries(value as Body)) target.set(name, single(body));
      } else if (kind === 'locals') {
        for (const block of Array.isArray(value) ? value : [value]) {
          for (const [name, v] of Object.entries(block as Body)) m.locals.set(name, v);
        }
      } else {
        m.other.push({ [kind]: value });
      }
    }
  }
  return m;
}

/** The one resource `type.name`; throws when absent. */
export function resource(m: Module, type: string, name: string): Body {
  const r = m.resources.get(type)?.get(name);
  if (!r) throw new Error(`${m.dir}: no resource ${type}.${name}`);
  return r;
}

/** Every resource of `type`, by name. */
export function resourcesOf(m: Module, type: string): Map<string, Body> {
  return m.resources.get(type) ?? new Map();
}

/** The first (only) nested block `name` of `body`, as hcl2json nests blocks in arrays. */
export function block(body: Body, name: string): Body {
  const b = body[name];
  if (!Array.isArray(b) || b.length === 0)
    throw new Error(`no block ${name} in ${JSON.stringify(body).slice(0, 200)}`);
  return b[0] as Body;
}

/** Every string anywhere in `value`, depth first. */
export function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) strings(v, out);
  return out;
}

/** Names `prefix.<name>` referenced in the expressions inside `value` (e.g. `var`, `local`). */
export function references(value: unknown, prefix: 'var' | 'local'): Set<string> {
  const re = new RegExp(`(?<![\\w.])${prefix}\\.([A-Za-z_][A-Za-z0-9_-]*)`, 'g');
  const found = new Set<string>();
  for (const s of strings(value)) {
    // Only inside interpolations/expressions: hcl2json wraps every expression in ${...}.
    if (!s.includes('${')) continue;
    for (const match of s.matchAll(re)) if (match[1]) found.add(match[1]);
  }
  return found;
}

/**
 * The value of a simple expression with variables at their defaults: a literal, `${var.x}`, or a
 * string template such as `${var.x}s`. Returns `undefined` when the expression is anything else.
 */
export function resolveDefault(m: Module, expr: unknown): unknown {
  if (typeof expr !== 'string') return expr;
  const whole = /^\$\{var\.([A-Za-z_][\w-]*)\}$/.exec(expr);
  if (whole?.[1]) return m.variables.get(whole[1])?.default;
  if (!expr.includes('${')) return expr;
  let unresolved = false;
  const out = expr.replace(/\$\{var\.([A-Za-z_][\w-]*)\}/g, (_, name: string) => {
    const d = m.variables.get(name)?.default;
    if (d === undefined || d === null || typeof d === 'object') unresolved = true;
    return String(d);
  });
  return unresolved || out.includes('${') ? undefined : out;
}

/** The variable a `${var.x}` expression names, or `undefined`. */
export function varName(expr: unknown): string | undefined {
  return typeof expr === 'string' ? /^\$\{var\.([A-Za-z_][\w-]*)\}$/.exec(expr)?.[1] : undefined;
}

/** Seconds of a Pub/Sub duration string such as `"10s"`. */
export function seconds(duration: unknown): number {
  const m = typeof duration === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(duration) : null;
  if (!m?.[1]) throw new Error(`not a duration in seconds: ${String(duration)}`);
  return Number(m[1]);
}

/** The top-level blocks `kind` (`module`, `moved`, `provider`) of a module, flattened: [name, body] or [index, body]. */
export function topBlocks(m: Module, kind: string): Array<[string, Record<string, unknown>]> {
  const out: Array<[string, Record<string, unknown>]> = [];
  for (const o of m.other) {
    const v = o[kind];
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const b of v) out.push([String(out.length), b]);
    else
      for (const [name, bodies] of Object.entries(v as Record<string, unknown[]>))
        for (const b of bodies) out.push([name, b as Record<string, unknown>]);
  }
  return out;
}
