/**
 * `levelset trace <controller> <key>`: finds the traces holding a `reconcile` span of the key (or an
 * `admission` span of a webhook's call on its object) and prints the
 * newest `--last` of them as a waterfall: each span at its offset from the trace's start, its
 * duration, indented under its parent, with what it says (the watch event, the published message,
 * the delivery attempt, the API call and its status, the outcome). Exit code 1 when no trace of the
 * key is found.
 *
 * Where the spans come from (the same resolution as `levelset logs`, cli/target.ts): `--project` →
 * Cloud Trace; else a running local stack → its trace files; else `GOOGLE_CLOUD_PROJECT` → Cloud
 * Trace; else the local trace files of a stopped stack.
 * - Local: `<stateDir>/traces/*.jsonl`, OTLP/JSON lines (one `ExportTraceServiceRequest` per line,
 *   core/tracing.ts). The files outlive the stack (they are cleared when the next one starts),
 *   so a key's story can be read after `levelset dev` stopped.
 * - Cloud Trace: the API v1 `projects.traces.list` (`view=COMPLETE`), filtered by the span labels
 *   the Cloud Trace exporter writes from the span attributes (`levelset.key`, `levelset.controller`),
 *   looking back `--since` (default 24 h). Its spans are converted to the same {@link TracedSpan}s,
 *   so both print the same way.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GoogleAuth } from 'google-auth-library';
import * as z from 'zod';
import { ATTR, SPAN } from '../../core/k8s/tracing.ts';
import { stateDirectory } from '../../local/state.ts';
import { CliError, firstLine } from '../errors.ts';
import { formatDuration, say } from '../output.ts';
import { resolveTarget } from '../target.ts';

export interface TraceArgs {
  key: string;
  controller?: string;
  last: number;
  json: boolean;
  /** Google Cloud project: read Cloud Trace instead of the local stack's files. */
  project?: string;
  /** `--since` as given (`24h`); cli/commands/trace.ts parses it into {@link TraceArgs.sinceMs}. */
  since?: string;
  /** How far back Cloud Trace is searched, in ms; ignored locally. Default 24 h. */
  sinceMs?: number;
}

type AttributeValue = string | number | boolean;

/** One span, as `levelset trace --json` prints it. */
export interface TracedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** `levelset-relay`, `levelset-functions`… (the resource's `service.name`). */
  service: string;
  /** Epoch ms (fractional). */
  startMs: number;
  durationMs: number;
  attributes: Record<string, AttributeValue>;
  events: { name: string; atMs: number; attributes: Record<string, AttributeValue> }[];
  /** OTLP status code: 0 unset, 1 ok, 2 error; and its message. */
  status: { code: number; message?: string };
}

/** One trace of the key, spans in start order. */
export interface KeyTrace {
  traceId: string;
  controller: string;
  key: string;
  startedAt: string;
  /** The outcome of the trace's last delivery. */
  outcome?: string;
  deliveries: number;
  spans: TracedSpan[];
}

const anyValue = z.object({
  stringValue: z.string().optional(),
  intValue: z.union([z.number(), z.string()]).optional(),
  doubleValue: z.number().optional(),
  boolValue: z.boolean().optional(),
});
const keyValues = z.array(z.object({ key: z.string(), value: anyValue })).default([]);
const otlpSpan = z.object({
  traceId: z.string(),
  spanId: z.string(),
  parentSpanId: z.string().optional(),
  name: z.string(),
  startTimeUnixNano: z.union([z.string(), z.number()]),
  endTimeUnixNano: z.union([z.string(), z.number()]),
  attributes: keyValues,
  events: z
    .array(
      z.object({ name: z.string(), timeUnixNano: z.union([z.string(), z.number()]), attributes: keyValues }),
    )
    .default([]),
  status: z.object({ code: z.number().default(0), message: z.string().optional() }).default({ code: 0 }),
});
/** OTLP/JSON `ExportTraceServiceRequest` (the fields read here). */
const exportRequest = z.object({
  resourceSpans: z.array(
    z.object({
      resource: z.object({ attributes: keyValues }).optional(),
      scopeSpans: z.array(z.object({ spans: z.array(otlpSpan).default([]) })).default([]),
    }),
  ),
});

function attributeValue(v: z.infer<typeof anyValue>): AttributeValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  return v.boolValue ?? '';
}
const record = (kvs: z.infer<typeof keyValues>) =>
  Object.fromEntries(kvs.map((kv) => [kv.key, attributeValue(kv.value)]));
const ms = (nanos: string | number) => Number(BigInt(nanos) / 1000n) / 1000;

/**
 * Every span of the OTLP/JSON lines files in `dir`; a line that is not an export request is skipped
 * (a file being written holds whole lines only).
 */
export function readSpans(dir: string): TracedSpan[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
  } catch {
    return [];
  }
  const spans: TracedSpan[] = [];
  for (const file of files) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      let parsed: z.infer<typeof exportRequest>;
      try {
        parsed = exportRequest.parse(JSON.parse(line));
      } catch {
        continue;
      }
      for (const rs of parsed.resourceSpans) {
        const service = String(record(rs.resource?.attributes ?? [])['service.name'] ?? file);
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans) {
            const startMs = ms(s.startTimeUnixNano);
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              service,
              startMs,
              durationMs: ms(s.endTimeUnixNano) - startMs,
              attributes: record(s.attributes),
              events: s.events.map((e) => ({
                name: e.name,
                atMs: ms(e.timeUnixNano),
                attributes: record(e.attributes),
              })),
              status: s.status,
            });
          }
      }
    }
  }
  return spans;
}

/** The traces holding a `reconcile` span of `key` (and `controller`, when given), oldest first. */
export function keyTraces(spans: readonly TracedSpan[], key: string, controller?: string): KeyTrace[] {
  const byTrace = new Map<string, TracedSpan[]>();
  for (const s of spans) {
    let list = byTrace.get(s.traceId);
    if (!list) {
      list = [];
      byTrace.set(s.traceId, list);
    }
    list.push(s);
  }
  const traces: KeyTrace[] = [];
  for (const [traceId, list] of byTrace) {
    const deliveries = list
      .filter(
        (s) =>
          (s.name === SPAN.reconcile &&
            s.attributes[ATTR.key] === key &&
            (controller === undefined || s.attributes[ATTR.controller] === controller)) ||
          // An admission webhook's call on the key's object (functions/runtime/admission.ts): whichever controller.
          (s.name === SPAN.admission && s.attributes[ATTR.key] === key),
      )
      .sort((a, b) => a.startMs - b.startMs);
    const last = deliveries.at(-1);
    if (!last) continue;
    list.sort((a, b) => a.startMs - b.startMs);
    const outcome = last.attributes[ATTR.admissionOutcome] ?? last.attributes[ATTR.outcome];
    traces.push({
      traceId,
      controller: String(last.attributes[ATTR.controller] ?? controller ?? ''),
      key,
      startedAt: new Date(list[0]?.startMs ?? last.startMs).toISOString(),
      ...(outcome !== undefined ? { outcome: String(outcome) } : {}),
      deliveries: deliveries.length,
      spans: list,
    });
  }
  return traces.sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
}

/** What a span says, in a few words: the watch event, the message, the attempt, the API call, the outcome. */
export function describeSpan(s: TracedSpan): string {
  const a = s.attributes;
  const parts: string[] = [];
  if (s.name === SPAN.enqueue) {
    if (a[ATTR.cause] === 'watch')
      parts.push(`event seen: ${a[ATTR.eventType]} ${a[ATTR.resource]} rv ${a[ATTR.resourceVersion]}`);
    else parts.push(`enqueued (${a[ATTR.cause]})`);
    const collapsed = Number(a[ATTR.collapsed] ?? 0);
    if (collapsed) parts.push(`${collapsed} more collapsed`);
    if (a[ATTR.messageId] !== undefined) parts.push(`published as message ${a[ATTR.messageId]}`);
  } else if (s.name.endsWith(' create') && a['messaging.system'] === 'gcp_pubsub') {
    parts.push(`published to ${a['messaging.destination.name']}`);
  } else if (s.name === SPAN.reconcile) {
    const attempt = a[ATTR.deliveryAttempt];
    parts.push(`delivered${attempt !== undefined ? ` (attempt ${attempt})` : ''}, reason ${a[ATTR.reason]}`);
    if (a[ATTR.outcome] !== undefined) parts.push(`outcome ${a[ATTR.outcome]}`);
    if (a[ATTR.requeueAfterMs] !== undefined) parts.push(`requeue after ${a[ATTR.requeueAfterMs]} ms`);
  } else if (s.name === SPAN.admission) {
    parts.push(
      `webhook ${a[ATTR.webhook]}: ${a[ATTR.admissionOperation] ?? ''} ${a[ATTR.resource] ?? ''} ${a[ATTR.admissionOutcome] ?? ''}`.replace(
        /\s+/g,
        ' ',
      ),
    );
  } else if (s.name === SPAN.requeue) {
    parts.push(`in ${a[ATTR.requeueAfterMs]} ms (${a['levelset.requeuer']})`);
  } else if (s.name.startsWith('child ')) {
    parts.push(String(a[ATTR.child]));
  } else if (a['http.request.method'] !== undefined) {
    parts.push(`${a['url.path']}${a['url.query'] ?? ''} → ${a['http.response.status_code'] ?? 'no answer'}`);
  }
  if (s.status.code === 2 && s.status.message) parts.push(`ERROR ${s.status.message}`);
  return parts.join(', ');
}

/** The waterfall lines of one trace: offset from its start, duration, the span indented under its parent. */
export function waterfall(t: KeyTrace): string[] {
  const ids = new Set(t.spans.map((s) => s.spanId));
  const children = new Map<string | undefined, TracedSpan[]>();
  for (const s of t.spans) {
    const parent = s.parentSpanId && ids.has(s.parentSpanId) ? s.parentSpanId : undefined;
    let list = children.get(parent);
    if (!list) {
      list = [];
      children.set(parent, list);
    }
    list.push(s);
  }
  const start = t.spans[0]?.startMs ?? 0;
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const s of children.get(parent) ?? []) {
      const offset = `+${formatDuration(s.startMs - start)}`.padStart(10);
      const duration = formatDuration(s.durationMs).padStart(9);
      const what = describeSpan(s);
      const service = s.service.replace(/^levelset-/, '');
      lines.push(
        `${offset} ${duration}  ${'  '.repeat(depth)}${s.name} [${service}]${what ? `  ${what}` : ''}`,
      );
      walk(s.spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines;
}

/** Root of the Cloud Trace API; `LEVELSET_CLOUD_TRACE_API` replaces it (a test's fake endpoint). */
export const CLOUD_TRACE_API = 'https://cloudtrace.googleapis.com';
/** The default `--since`: 24 h, in ms. */
export const DEFAULT_SINCE_MS = 24 * 3_600_000;
/** At most this many pages of `projects.traces.list` are read for one `levelset trace`. */
const MAX_PAGES = 5;

/** A Cloud Trace API v1 `TraceSpan` (the fields read here). */
const v1Span = z.object({
  /** uint64 as a decimal string (proto `fixed64` in JSON). */
  spanId: z.string(),
  /** `SPAN_KIND_UNSPECIFIED`, `RPC_SERVER`, `RPC_CLIENT`: v1 has no producer/consumer; not kept. */
  kind: z.string().optional(),
  name: z.string().default(''),
  /** RFC 3339, up to ns. */
  startTime: z.string(),
  endTime: z.string(),
  /** Absent or `0` for a root span. */
  parentSpanId: z.string().optional(),
  /** The span's attributes, every value a string. */
  labels: z.record(z.string(), z.string()).default({}),
});
type V1Span = z.infer<typeof v1Span>;
/** The answer of `GET /v1/projects/{projectId}/traces` (the fields read here). */
const v1ListTracesResponse = z.object({
  traces: z.array(z.object({ traceId: z.string(), spans: z.array(v1Span).default([]) })).default([]),
  nextPageToken: z.string().optional(),
});

/**
 * The `filter` of `projects.traces.list` for a key's traces: exact matches (`+label:value`) of the
 * labels the Cloud Trace exporter writes from Levelset's span attributes (it keeps the attribute
 * names), `levelset.key` and, when given, `levelset.controller`; a value that is not a simple
 * token (`[a-zA-Z0-9./_][a-zA-Z0-9./_-]*`) is double-quoted with `"` and `\` escaped. A trace
 * matches when any of its spans carries each label (the `enqueue` span carries both, as does each
 * `reconcile`), so {@link keyTraces} still picks the traces with a `reconcile` of the key.
 */
export function cloudTraceFilter(key: string, controller?: string): string {
  const value = (v: string) => (/^[a-zA-Z0-9./_][a-zA-Z0-9./_-]*$/.test(v) ? v : JSON.stringify(v));
  return [
    `+${ATTR.key}:${value(key)}`,
    ...(controller !== undefined ? [`+${ATTR.controller}:${value(controller)}`] : []),
  ].join(' ');
}

/**
 * Epoch ms (fractional, µs kept) of an RFC 3339 time with up to ns (`2026-11-25T09:46:40.123456789Z`).
 * @throws {Error} when `time` is not RFC 3339
 */
export function rfc3339Ms(time: string): number {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/i.exec(time);
  const whole = m ? Date.parse(`${m[1]}${m[3]}`) : Number.NaN;
  if (!m || Number.isNaN(whole)) throw new Error(`not an RFC 3339 time: ${time}`);
  return whole + (m[2] ? Number(`0.${m[2].slice(0, 6)}`) * 1000 : 0);
}

/**
 * A v1 span id (uint64 in decimal) as OTLP writes it, 16 hex digits; an id that already holds a
 * hex letter is taken as hex.
 */
export function hexSpanId(id: string): string {
  return /^\d+$/.test(id) ? BigInt(id).toString(16).padStart(16, '0') : id.toLowerCase();
}

/**
 * A Cloud Trace v1 span as a {@link TracedSpan}: ids in hex, times in epoch ms, the labels as
 * attributes (strings: v1 keeps no types) without the exporter's own (`g.co/…`) and `service.name`,
 * which is the span's `service` (written when the exporter's `resourceFilter` passes it,
 * core/tracing-sdk.ts; `unknown` otherwise). v1 has no span events; its status is read from
 * the `/error/message` label when present (code 2), else unset (0).
 * @throws {Error} when a time is not RFC 3339
 */
export function cloudSpan(traceId: string, s: V1Span): TracedSpan {
  const startMs = rfc3339Ms(s.startTime);
  const parent = s.parentSpanId && !/^0+$/.test(s.parentSpanId) ? hexSpanId(s.parentSpanId) : undefined;
  const error = s.labels['/error/message'];
  return {
    traceId: traceId.toLowerCase(),
    spanId: hexSpanId(s.spanId),
    ...(parent ? { parentSpanId: parent } : {}),
    name: s.name,
    service: s.labels['service.name'] ?? 'unknown',
    startMs,
    durationMs: rfc3339Ms(s.endTime) - startMs,
    attributes: Object.fromEntries(
      Object.entries(s.labels).filter(([k]) => !k.startsWith('g.co/') && k !== 'service.name'),
    ),
    events: [],
    status: error !== undefined ? { code: 2, message: error } : { code: 0 },
  };
}

/** What {@link readCloudSpans} needs of an authenticated HTTP client (`GoogleAuth` is one). */
export interface TraceApiClient {
  request<T>(options: { url: string; method?: 'GET' }): Promise<{ data: T }>;
}

/** One Cloud Trace search of {@link readCloudSpans}. */
export interface CloudTraceQuery {
  projectId: string;
  key: string;
  controller?: string;
  /** How far back from now, in ms. */
  sinceMs: number;
  /** Enough traces of the key: no further page is read once this many are found. */
  last: number;
  /** API root (default {@link CLOUD_TRACE_API}). */
  apiBase?: string;
}

/** The URL of one `projects.traces.list` page for `query`. */
export function listTracesUrl(query: CloudTraceQuery, pageToken?: string): string {
  const now = Date.now();
  const params = new URLSearchParams({
    view: 'COMPLETE',
    filter: cloudTraceFilter(query.key, query.controller),
    startTime: new Date(now - query.sinceMs).toISOString(),
    endTime: new Date(now).toISOString(),
    orderBy: 'start desc',
    pageSize: String(Math.min(100, Math.max(10, query.last * 2))),
    ...(pageToken ? { pageToken } : {}),
  });
  const base = (query.apiBase ?? CLOUD_TRACE_API).replace(/\/+$/, '');
  return `${base}/v1/projects/${encodeURIComponent(query.projectId)}/traces?${params}`;
}

/**
 * Every span of the traces Cloud Trace lists for `query`, newest traces first (`orderBy=start
 * desc`), page after page until {@link keyTraces} finds `query.last` traces of the key, the pages
 * end, or 5 pages were read.
 * @throws whatever `client.request` throws (an HTTP error, no credentials), and a zod error when an
 *   answer is not a `ListTracesResponse`
 */
export async function readCloudSpans(client: TraceApiClient, query: CloudTraceQuery): Promise<TracedSpan[]> {
  const spans: TracedSpan[] = [];
  let pageToken: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { data } = await client.request<unknown>({ url: listTracesUrl(query, pageToken), method: 'GET' });
    const answer = v1ListTracesResponse.parse(data ?? {});
    for (const t of answer.traces) for (const s of t.spans) spans.push(cloudSpan(t.traceId, s));
    pageToken = answer.nextPageToken || undefined;
    if (!pageToken || keyTraces(spans, query.key, query.controller).length >= query.last) break;
  }
  return spans;
}

/**
 * The message of an API error: Google's JSON error body's when there is one; for an answer that is
 * not a `ListTracesResponse`, where; else the error's first line.
 */
function apiErrorText(err: unknown): string {
  if (err instanceof z.ZodError) {
    const issue = err.issues[0];
    return `an answer that is not a ListTracesResponse (${issue?.path.join('.') || 'the body'}: ${issue?.message})`;
  }
  const body = (err as { response?: { data?: { error?: { message?: unknown } } } }).response?.data;
  const message = body?.error?.message;
  return typeof message === 'string' ? message : firstLine(err);
}

/** Where `levelset trace` reads: the local trace files, or Cloud Trace of a project. */
type TraceSource = { kind: 'local'; dir: string } | { kind: 'cloud'; projectId: string };

/** `--project`; else a running local stack; else `GOOGLE_CLOUD_PROJECT`; else the local files. */
async function traceSource(argv: TraceArgs, env: NodeJS.ProcessEnv): Promise<TraceSource> {
  const local: TraceSource = { kind: 'local', dir: join(stateDirectory(env), 'traces') };
  if (argv.project) return { kind: 'cloud', projectId: argv.project };
  try {
    const target = await resolveTarget({}, env);
    return target.kind === 'cloud' ? { kind: 'cloud', projectId: target.projectId } : local;
  } catch (err) {
    if (err instanceof CliError) return local; // no stack running: its files outlive it
    throw err;
  }
}

/**
 * Runs `levelset trace`: Cloud Trace through `GoogleAuth` (Application Default Credentials, scope
 * cloud-platform, the target's project) at `LEVELSET_CLOUD_TRACE_API`, else {@link CLOUD_TRACE_API}.
 * @throws {CliError} exit code 1 when the key has no trace, or when Cloud Trace refuses or fails
 */
export async function runTrace(argv: TraceArgs): Promise<void> {
  const env = process.env;
  const source = await traceSource(argv, env);
  const what = `${argv.controller ? `${argv.controller} ` : ''}${argv.key}`;
  let spans: TracedSpan[];
  let where: string;
  if (source.kind === 'local') {
    spans = readSpans(source.dir);
    where = `in ${source.dir} (levelset dev writes them; a key appears once it was reconciled)`;
  } else {
    const sinceMs = argv.sinceMs ?? DEFAULT_SINCE_MS;
    const filter = cloudTraceFilter(argv.key, argv.controller);
    // projectId given: google-auth-library then never looks one up (an external account's lookup is
    // a Resource Manager call).
    const client = new GoogleAuth({
      scopes: 'https://www.googleapis.com/auth/cloud-platform',
      projectId: source.projectId,
    });
    try {
      spans = await readCloudSpans(client, {
        projectId: source.projectId,
        key: argv.key,
        ...(argv.controller !== undefined ? { controller: argv.controller } : {}),
        sinceMs,
        last: argv.last,
        apiBase: env.LEVELSET_CLOUD_TRACE_API || CLOUD_TRACE_API,
      });
    } catch (err) {
      throw new CliError(
        `Cloud Trace (project ${source.projectId}): ${apiErrorText(err)} (needs roles/cloudtrace.user; filter: ${filter})`,
      );
    }
    where = `in Cloud Trace of project ${source.projectId} in the last ${argv.since ?? formatDuration(sinceMs)} (filter: ${filter}; a key's trace is there once the functions exported it, with LEVELSET_TRACING=cloud-trace and within the sample ratio)`;
  }
  const traces = keyTraces(spans, argv.key, argv.controller).slice(-argv.last);
  if (traces.length === 0) throw new CliError(`no trace of ${what} ${where}`);
  if (argv.json) {
    say(JSON.stringify(traces, null, 2));
    return;
  }
  for (const t of traces) {
    say(
      `trace ${t.traceId}  ${t.controller} ${t.key}  ${t.startedAt}  ${t.deliveries} ${t.deliveries === 1 ? 'delivery' : 'deliveries'}, outcome ${t.outcome ?? 'unknown'}`,
    );
    for (const line of waterfall(t)) say(line);
    say();
  }
}
