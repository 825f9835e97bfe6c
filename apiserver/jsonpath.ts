/**
 * Kubernetes JSONPath (k8s.io/client-go/util/jsonpath) for CRD `additionalPrinterColumns`, evaluated
 * by the jsonpath-plus library. The Kubernetes dialect is translated to jsonpath-plus's:
 * - no leading `$` (`.status.replicas`), optionally wrapped in template braces (`{.status.replicas}`),
 *   as apiextensions-apiserver parses a column's path as `{<jsonPath>}`;
 * - filters `[?(@.type=="Ready")]` with `==`, `!=`, `<`, `>`, `<=`, `>=` (evaluated by jsonpath-plus's
 *   safe evaluator, never `eval`); `==`/`!=` become `===`/`!==`, as Kubernetes compares typed values
 *   (`"1"` never equals `1`, `true` never equals `1`);
 * - negative indexes `[-1]` (jsonpath-plus only knows them in slices: `[-1:]`);
 * - `[*]`, `..`, slices `[a:b:c]`, unions and quoted keys `['a.b']` are the same in both.
 * Not supported (thrown as errors): kubectl's multi-part templates (`{range}`/`{end}`, text between
 * braces), which apiextensions rejects for printer columns anyway.
 */
import { JSONPath } from 'jsonpath-plus';

/** A compiled Kubernetes JSONPath: every result, in document order (empty when nothing matches). */
export type JsonPathQuery = (obj: unknown) => unknown[];

/**
 * Compiles a Kubernetes JSONPath expression (`.status.conditions[?(@.type=="Ready")].status`).
 * @throws Error for an empty expression or a multi-part template (`{.a} {.b}`, `{range ...}{end}`)
 */
export function compileJsonPath(expression: string): JsonPathQuery {
  const path = toJsonPathPlus(expression);
  return (obj) =>
    (JSONPath({ path, json: obj as object, wrap: true, eval: 'safe' }) as unknown[] | undefined) ?? [];
}

/** The jsonpath-plus form of a Kubernetes JSONPath expression (exported for tests). */
export function toJsonPathPlus(expression: string): string {
  let e = expression.trim();
  if (e.startsWith('{') && e.endsWith('}')) e = e.slice(1, -1).trim();
  if (e === '') throw new Error('empty JSONPath expression');
  if (/[{}]/.test(outsideQuotes(e)) || /^(range|end)\b/.test(e))
    throw new Error(`unsupported JSONPath template ${JSON.stringify(expression)}: one expression only`);
  if (e.startsWith('.') || e.startsWith('[')) e = `$${e}`;
  else if (!e.startsWith('$')) e = `$.${e}`;
  e = outsideQuotesMap(e, (code) => code.replace(/!=(?!=)/g, '!==').replace(/([^=!<>])==(?!=)/g, '$1==='));
  // [-N] → [-N:-N+1] (the last element: [-1:]); only bare integer subscripts, not inside filters/slices.
  return e.replace(/\[\s*-(\d+)\s*\]/g, (_m, n: string) => {
    const i = Number(n);
    return i === 1 ? '[-1:]' : `[-${i}:-${i - 1}]`;
  });
}

const QUOTED = /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g;

/** The expression with quoted string literals blanked, so braces inside them are not mistaken for templates. */
function outsideQuotes(e: string): string {
  return e.replace(QUOTED, '""');
}

/** Applies `f` to the parts of `e` outside quoted string literals, keeping the literals as they are. */
function outsideQuotesMap(e: string, f: (code: string) => string): string {
  let out = '';
  let last = 0;
  for (const m of e.matchAll(QUOTED)) {
    out += f(e.slice(last, m.index)) + m[0];
    last = m.index + m[0].length;
  }
  return out + f(e.slice(last));
}
