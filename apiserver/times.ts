/**
 * Decoding of the time fields of built-in types as kube-apiserver decodes them, so the local API
 * server rejects what kube-apiserver rejects and stores what it stores:
 *
 * - `metav1.Time` (`creationTimestamp`, Event `firstTimestamp`, condition `lastTransitionTime`, …):
 *   apimachinery `Time.UnmarshalJSON` is Go's `time.Parse(time.RFC3339, s)`, which also accepts a
 *   fractional second after the seconds ("When parsing (only), the input may contain a fractional
 *   second field immediately after the seconds field, even if the layout does not signify its
 *   presence" — Go `time` package), so `2026-11-23T08:53:12.183Z` is accepted; it is stored and
 *   served at second precision (`MarshalJSON` formats `time.RFC3339` in UTC, truncating).
 * - `metav1.MicroTime` (Event `eventTime`, `series.lastObservedTime`, Lease `renewTime`/`acquireTime`):
 *   `time.Parse(RFC3339Micro, s)` with `RFC3339Micro = "2006-01-02T15:04:05.000000Z07:00"`: exactly six
 *   fractional digits (`.000000` requires "the exact number of digits as specified in the layout"), so
 *   a JavaScript `Date#toISOString()` (milliseconds) is rejected; served as six digits in UTC.
 *
 * A bad value answers kube-apiserver's decode error: 400 BadRequest
 * `Event in version "v1" cannot be handled as a Event: parsing time "…" as "…": cannot parse "…" as "…"`
 * (apiserver handlers transformDecodeError + Go's time.ParseError wording).
 */
import type { KubeObject, ResourceType } from './resources.ts';

export const RFC3339 = '2006-01-02T15:04:05Z07:00';
export const RFC3339_MICRO = '2006-01-02T15:04:05.000000Z07:00';
type Layout = typeof RFC3339 | typeof RFC3339_MICRO;

/** A Go `time.ParseError` (its `Error()` text as `message`). */
export class TimeParseError extends Error {}

/** Go's `time.quote`: ASCII printable kept (with `"` and `\` escaped), other bytes as `\xNN`. */
function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0;
    if (code >= 0x80 || code < 0x20) {
      for (const b of Buffer.from(ch, 'utf8')) out += `\\x${b.toString(16).padStart(2, '0')}`;
    } else {
      if (ch === '"' || ch === '\\') out += '\\';
      out += ch;
    }
  }
  return `${out}"`;
}

const isDigit = (s: string, i: number) => i < s.length && s.charCodeAt(i) >= 48 && s.charCodeAt(i) <= 57;

/** A parsed instant: whole seconds since the epoch and the nanoseconds within the second. */
export interface GoTime {
  seconds: number;
  nanos: number;
}

/**
 * Go's `time.Parse` for the RFC 3339 layouts metav1.Time and metav1.MicroTime use, with Go's
 * acceptance rules (one-digit hour, `,` or `.` before a fraction, fraction digits beyond 9 ignored)
 * and error texts.
 * @throws TimeParseError worded as Go's `*time.ParseError`
 */
export function parseGoTime(value: string, layout: Layout): GoTime {
  const fail = (layoutElem: string, valueElem: string): never => {
    throw new TimeParseError(
      `parsing time ${goQuote(value)} as ${goQuote(layout)}: cannot parse ${goQuote(valueElem)} as ${goQuote(layoutElem)}`,
    );
  };
  const outOfRange = (what: string): never => {
    throw new TimeParseError(`parsing time ${goQuote(value)}: ${what} out of range`);
  };
  let rest = value;
  const skip = (prefix: string) => {
    if (!rest.startsWith(prefix)) fail(prefix, rest);
    rest = rest.slice(prefix.length);
  };
  /** Go's getnum: one or two digits; `fixed` requires two. */
  const num = (elem: string, fixed: boolean): number => {
    if (!isDigit(rest, 0)) fail(elem, rest);
    const n = isDigit(rest, 1) ? 2 : fixed ? fail(elem, rest) : 1;
    const v = Number(rest.slice(0, n));
    rest = rest.slice(n);
    return v;
  };
  /** Go's parseNanoseconds over the first `n` bytes of `s` (a separator then digits). */
  const nanosOf = (s: string, n: number, elem: string, hold: string): number => {
    if (s[0] !== '.' && s[0] !== ',') fail(elem, hold);
    const digits = s.slice(1, Math.min(n, 10));
    if (!/^[0-9]+$/.test(digits)) fail(elem, hold);
    return Number(digits.padEnd(9, '0'));
  };

  if (rest.length < 4 || !/^[0-9]{4}/.test(rest)) fail('2006', rest);
  const year = Number(rest.slice(0, 4));
  rest = rest.slice(4);
  skip('-');
  const month = num('01', true);
  if (month < 1 || month > 12) outOfRange('month');
  skip('-');
  const day = num('02', true);
  skip('T');
  const hour = num('15', false);
  if (hour >= 24) outOfRange('hour');
  skip(':');
  const minute = num('04', true);
  if (minute >= 60) outOfRange('minute');
  skip(':');
  const second = num('05', true);
  if (second >= 60) outOfRange('second');
  let nanos = 0;
  if (layout === RFC3339_MICRO) {
    // stdFracSecond0: exactly the layout's number of digits.
    const hold = rest;
    if (rest.length < 7) fail('.000000', hold);
    nanos = nanosOf(rest, 7, '.000000', hold);
    rest = rest.slice(7);
  } else if (rest.length >= 2 && (rest[0] === '.' || rest[0] === ',') && isDigit(rest, 1)) {
    let n = 2;
    while (isDigit(rest, n)) n++;
    nanos = nanosOf(rest, n, '05', rest);
    rest = rest.slice(n);
  }
  let offsetSeconds = 0;
  const hold = rest;
  if (rest[0] === 'Z') rest = rest.slice(1);
  else {
    if (rest.length < 6 || rest[3] !== ':') fail('Z07:00', hold);
    const sign = rest[0];
    const hh = rest.slice(1, 3);
    const mm = rest.slice(4, 6);
    if (!/^[0-9]{2}$/.test(hh) || !/^[0-9]{2}$/.test(mm) || (sign !== '+' && sign !== '-'))
      fail('Z07:00', hold);
    if (Number(hh) > 24) outOfRange('time zone offset hour');
    if (Number(mm) > 60) outOfRange('time zone offset minute');
    offsetSeconds = (sign === '-' ? -1 : 1) * (Number(hh) * 3600 + Number(mm) * 60);
    rest = rest.slice(6);
  }
  if (rest !== '') throw new TimeParseError(`parsing time ${goQuote(value)}: extra text: ${goQuote(rest)}`);
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, 1);
  const daysInMonth = new Date(Date.UTC(2000, month, 0)).getUTCDate();
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day < 1 || day > (month === 2 ? (leap ? 29 : 28) : daysInMonth)) outOfRange('day');
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  return { seconds: date.getTime() / 1000 - offsetSeconds, nanos };
}

/** metav1.Time's JSON: RFC 3339 in UTC, whole seconds (truncated). */
export function formatTime(t: GoTime): string {
  return `${new Date(t.seconds * 1000).toISOString().slice(0, 19)}Z`;
}

/** metav1.MicroTime's JSON: RFC 3339 in UTC with six fractional digits (truncated). */
export function formatMicroTime(t: GoTime): string {
  const micros = String(Math.floor(t.nanos / 1000)).padStart(6, '0');
  return `${new Date(t.seconds * 1000).toISOString().slice(0, 19)}.${micros}Z`;
}

/** A time field: a dotted path where `[]` walks every element of an array. */
interface TimeField {
  path: string;
  micro: boolean;
}

const time = (path: string): TimeField => ({ path, micro: false });
const micro = (path: string): TimeField => ({ path, micro: true });

/** Every object's metav1.ObjectMeta times. */
const META_TIMES = [
  time('metadata.creationTimestamp'),
  time('metadata.deletionTimestamp'),
  time('metadata.managedFields[].time'),
];

/** The time fields of the built-in types the local server serves, by `<group>/<plural>` (k8s.io/api types). */
const TIME_FIELDS: Record<string, TimeField[]> = {
  '/events': [
    time('firstTimestamp'),
    time('lastTimestamp'),
    micro('eventTime'),
    micro('series.lastObservedTime'),
  ],
  'events.k8s.io/events': [
    micro('eventTime'),
    micro('series.lastObservedTime'),
    time('deprecatedFirstTimestamp'),
    time('deprecatedLastTimestamp'),
  ],
  'coordination.k8s.io/leases': [micro('spec.acquireTime'), micro('spec.renewTime')],
  '/namespaces': [time('status.conditions[].lastTransitionTime')],
  '/pods': [
    time('status.startTime'),
    time('status.conditions[].lastProbeTime'),
    time('status.conditions[].lastTransitionTime'),
  ],
  'apps/deployments': [
    time('status.conditions[].lastUpdateTime'),
    time('status.conditions[].lastTransitionTime'),
    time('spec.template.metadata.creationTimestamp'),
  ],
  'apiextensions.k8s.io/customresourcedefinitions': [time('status.conditions[].lastTransitionTime')],
};

/** Calls `visit(holder, key)` for every present value at `path`. */
function walk(
  node: unknown,
  parts: string[],
  visit: (holder: Record<string, unknown>, key: string) => void,
): void {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return;
  const [head, ...tail] = parts;
  if (head === undefined) return;
  const holder = node as Record<string, unknown>;
  const isArray = head.endsWith('[]');
  const key = isArray ? head.slice(0, -2) : head;
  if (!(key in holder)) return;
  if (isArray) {
    const list = holder[key];
    if (Array.isArray(list)) for (const item of list) walk(item, tail, visit);
  } else if (tail.length === 0) visit(holder, key);
  else walk(holder[key], tail, visit);
}

/**
 * Decodes the time fields of a built-in type's request body in place, as kube-apiserver's JSON
 * decoding does: `null` stays (a zero time), valid values are normalised to their wire format
 * (metav1.Time: whole seconds; MicroTime: six digits; both UTC). Custom resources are not touched
 * (their bodies are unstructured; `metadata.creationTimestamp` is server-set anyway).
 * @throws TimeParseError for a value kube-apiserver cannot decode (a non-string value: Go's
 *   `json: cannot unmarshal … into Go value of type string`)
 */
export function decodeTimes(t: ResourceType, obj: KubeObject): void {
  if (t.custom) return;
  for (const field of [...META_TIMES, ...(TIME_FIELDS[`${t.group}/${t.plural}`] ?? [])]) {
    walk(obj, field.path.split('.'), (holder, key) => {
      const v = holder[key];
      if (v === null || v === undefined) return;
      if (typeof v !== 'string')
        throw new TimeParseError(`json: cannot unmarshal ${jsonTypeName(v)} into Go value of type string`);
      const parsed = parseGoTime(v, field.micro ? RFC3339_MICRO : RFC3339);
      holder[key] = field.micro ? formatMicroTime(parsed) : formatTime(parsed);
    });
  }
}

/** encoding/json's name of a JSON value's type in an UnmarshalTypeError. */
function jsonTypeName(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  return typeof v === 'object' ? 'object' : 'number';
}
