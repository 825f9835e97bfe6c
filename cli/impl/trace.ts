/**
 * `levelset trace <key>`: reads the local stack's trace files (`<stateDir>/traces/*.jsonl`, OTLP/JSON
 * lines: one `ExportTraceServiceRequest` per line, functions/tracing.ts), finds the traces holding a
 * `reconcile` span of the key, and prints the newest `--last` of them as a waterfall: each span at
 * its offset from the trace's start, its duration, indented under its parent, with what it says
 * (the watch event, the published message, the delivery attempt, the API call and its status, the
 * outcome). Exit code 1 when no trace of the key is found.
 *
 * The files outlive the stack (they are cleared when the next one starts), so a key's story can be
 * read after `levelset dev` stopped.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ATTR, SPAN } from '../../functions/k8s/tracing.ts';
import { stateDirectory } from '../../local/state.ts';
import { CliError } from '../errors.ts';
import { formatDuration, say } from '../output.ts';

export interface TraceArgs {
  key: string;
  controller?: string;
  last: number;
  json: boolean;
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
          s.name === SPAN.reconcile &&
          s.attributes[ATTR.key] === key &&
          (controller === undefined || s.attributes[ATTR.controller] === controller),
      )
      .sort((a, b) => a.startMs - b.startMs);
    const last = deliveries.at(-1);
    if (!last) continue;
    list.sort((a, b) => a.startMs - b.startMs);
    const outcome = last.attributes[ATTR.outcome];
    traces.push({
      traceId,
      controller: String(last.attributes[ATTR.controller]),
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

/** Runs `levelset trace`; exit code 1 when the key has no trace. */
export async function runTrace(argv: TraceArgs): Promise<void> {
  const dir = join(stateDirectory(), 'traces');
  const traces = keyTraces(readSpans(dir), argv.key, argv.controller).slice(-argv.last);
  if (traces.length === 0)
    throw new CliError(
      `no trace of ${argv.controller ? `${argv.controller} ` : ''}${argv.key} in ${dir} (levelset dev writes them; a key appears once it was reconciled)`,
    );
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
