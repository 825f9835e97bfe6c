/**
 * The OpenTelemetry SDK of a Levelset process (relay, functions, in-process mode): configured from
 * the environment (zod-validated), started once per process by its entry point with
 * {@link startTracing}. Levelset's own code uses only the API (functions/k8s/tracing.ts).
 *
 * - Provider: the SDK's `NodeTracerProvider` (AsyncLocalStorage context, W3C trace context
 *   propagation), `service.name` = `levelset-<component>`.
 * - Kubernetes API calls: `@opentelemetry/instrumentation-undici` (client-node 2.x sends every
 *   request with undici's `fetch`, which reports to `diagnostics_channel`), only under a span of
 *   ours (`requireParentforSpans`): the relay's list+watch is not traced.
 * - Pub/Sub: the client's own OpenTelemetry support (`enableOpenTelemetryTracing`,
 *   functions/publish.ts): its `<topic> create` span carries the trace into the message attribute
 *   `googclient_traceparent`, which `reconcile` continues (functions/message.ts).
 * - Export: `cloud-trace` (`@google-cloud/opentelemetry-cloud-trace-exporter`, Cloud Trace API v2),
 *   `file` (OTLP/JSON, one `ExportTraceServiceRequest` per line, the OpenTelemetry Collector file
 *   exporter's format: what `levelset dev` writes and `levelset trace` reads), or `off`.
 *
 * Sampling, honestly: every span is recorded (sampler `AlwaysOn`), and which spans are exported is
 * decided when a process's part of a trace ends ({@link OutcomeSpanProcessor}): the part under a
 * `reconcile` span whose outcome is not `success` always, the rest when its trace id falls in
 * `LEVELSET_TRACE_SAMPLE_RATIO` (the same `TraceIdRatioBased` test in every process, so the relay's
 * and the function's parts of a successful key agree). A failing key whose trace id is not in the
 * ratio thus has its delivery spans exported without the relay's `enqueue` span, which was decided
 * earlier in another process; its `reconcile` span carries `levelset.enqueued_at` and the reason instead.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Context, ROOT_CONTEXT } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  type ReadableSpan,
  SamplingDecision,
  type Span,
  type SpanExporter,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import { z } from 'zod';
import { ATTR } from './k8s/tracing.ts';

const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const tracingEnvSchema = z
  .object({
    /** `off` (default), `file` (needs `LEVELSET_TRACE_FILE`), `cloud-trace` (needs `GOOGLE_CLOUD_PROJECT`). */
    LEVELSET_TRACING: optional(z.enum(['off', 'file', 'cloud-trace'])),
    /** The OTLP/JSON lines file of `file`. */
    LEVELSET_TRACE_FILE: optional(z.string().min(1)),
    /** Share (0–1) of the traces of successful keys exported; default 0.1. Other outcomes: all. */
    LEVELSET_TRACE_SAMPLE_RATIO: optional(z.coerce.number().min(0).max(1)),
    GOOGLE_CLOUD_PROJECT: optional(z.string().min(1)),
  })
  .superRefine((e, ctx) => {
    if (e.LEVELSET_TRACING === 'file' && !e.LEVELSET_TRACE_FILE)
      ctx.addIssue({
        code: 'custom',
        path: ['LEVELSET_TRACE_FILE'],
        message: 'required when LEVELSET_TRACING=file',
      });
    if (e.LEVELSET_TRACING === 'cloud-trace' && !e.GOOGLE_CLOUD_PROJECT)
      ctx.addIssue({
        code: 'custom',
        path: ['GOOGLE_CLOUD_PROJECT'],
        message: 'required when LEVELSET_TRACING=cloud-trace',
      });
  });

/** Tracing configuration of a process. */
export type TracingConfig =
  | { exporter: 'off' }
  | { exporter: 'file'; file: string; sampleRatio: number }
  | { exporter: 'cloud-trace'; projectId: string; sampleRatio: number };

/** Default share of successful keys' traces exported. */
export const DEFAULT_TRACE_SAMPLE_RATIO = 0.1;

/**
 * Reads `LEVELSET_TRACING`, `LEVELSET_TRACE_FILE`, `LEVELSET_TRACE_SAMPLE_RATIO`, `GOOGLE_CLOUD_PROJECT`.
 * @throws {Error} naming every invalid or missing variable.
 */
export function readTracingConfig(env: NodeJS.ProcessEnv = process.env): TracingConfig {
  const parsed = tracingEnvSchema.safeParse(env);
  if (!parsed.success)
    throw new Error(
      `invalid tracing configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const e = parsed.data;
  const sampleRatio = e.LEVELSET_TRACE_SAMPLE_RATIO ?? DEFAULT_TRACE_SAMPLE_RATIO;
  switch (e.LEVELSET_TRACING ?? 'off') {
    case 'file':
      return { exporter: 'file', file: e.LEVELSET_TRACE_FILE as string, sampleRatio };
    case 'cloud-trace':
      return { exporter: 'cloud-trace', projectId: e.GOOGLE_CLOUD_PROJECT as string, sampleRatio };
    default:
      return { exporter: 'off' };
  }
}

/**
 * A span exporter appending OTLP/JSON (`ExportTraceServiceRequest`, the standard serializer of
 * `@opentelemetry/otlp-transformer`) to a file, one request per line, synchronously: several
 * processes may append to their own files, and a reader sees whole lines only.
 */
export class OtlpJsonLinesFileExporter implements SpanExporter {
  readonly path: string;
  #shutdown = false;
  constructor(path: string) {
    this.path = path;
    mkdirSync(dirname(path), { recursive: true });
  }
  export(spans: ReadableSpan[], done: (result: { code: ExportResultCode; error?: Error }) => void): void {
    if (this.#shutdown || spans.length === 0) {
      done({ code: ExportResultCode.SUCCESS });
      return;
    }
    try {
      const bytes = JsonTraceSerializer.serializeRequest(spans);
      appendFileSync(this.path, `${Buffer.from(bytes ?? new Uint8Array()).toString('utf8')}\n`);
      done({ code: ExportResultCode.SUCCESS });
    } catch (err) {
      done({ code: ExportResultCode.FAILED, error: err as Error });
    }
  }
  async shutdown(): Promise<void> {
    this.#shutdown = true;
  }
  async forceFlush(): Promise<void> {}
}

/** Process parts of traces decided at most: older decisions are forgotten first. */
const DECISIONS_KEPT = 10_000;
/** Ended spans held at most while their part's first span runs; past it the oldest part is dropped. */
const SPANS_HELD = 20_000;

/**
 * The export decision ("tail-ish" sampling within one process). A *part* is a span whose parent is
 * remote or absent (a `reconcile` continuing a delivery, the relay's `enqueue`, a resync) and every
 * span under it in this process. Ended spans of a part are held until its first span ends; then the
 * part is exported when that span's `levelset.outcome` is set and not `success`, or when its trace
 * id is in the ratio (`TraceIdRatioBasedSampler`'s test); a span ending after its part was decided
 * (the Pub/Sub client's publish span, a requeue's timer) follows the decision.
 */
export class OutcomeSpanProcessor implements SpanProcessor {
  readonly #next: SpanProcessor;
  readonly #ratio: TraceIdRatioBasedSampler;
  /** Running span id → the span id of its part's first span. */
  readonly #partOf = new Map<string, string>();
  /** Part → ended spans waiting for its decision. */
  readonly #held = new Map<string, ReadableSpan[]>();
  #heldCount = 0;
  readonly #decided = new Map<string, boolean>();

  constructor(next: SpanProcessor, sampleRatio: number) {
    this.#next = next;
    this.#ratio = new TraceIdRatioBasedSampler(sampleRatio);
  }

  onStart(span: Span, parentContext: Context): void {
    const id = span.spanContext().spanId;
    const parent = span.parentSpanContext;
    const part = parent && !parent.isRemote ? (this.#partOf.get(parent.spanId) ?? parent.spanId) : id;
    this.#partOf.set(id, part);
    this.#next.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    const id = span.spanContext().spanId;
    const part = this.#partOf.get(id) ?? id;
    this.#partOf.delete(id);
    const decided = this.#decided.get(part);
    if (decided !== undefined) {
      if (decided) this.#next.onEnd(span);
      return;
    }
    if (part !== id) {
      let held = this.#held.get(part);
      if (!held) {
        held = [];
        this.#held.set(part, held);
      }
      held.push(span);
      if (++this.#heldCount > SPANS_HELD) this.#dropOldestPart();
      return;
    }
    const outcome = span.attributes[ATTR.outcome];
    const keep =
      (outcome !== undefined && outcome !== 'success') ||
      this.#ratio.shouldSample(ROOT_CONTEXT, span.spanContext().traceId).decision ===
        SamplingDecision.RECORD_AND_SAMPLED;
    this.#decided.set(part, keep);
    if (this.#decided.size > DECISIONS_KEPT)
      this.#decided.delete(this.#decided.keys().next().value as string);
    const held = this.#held.get(part) ?? [];
    this.#held.delete(part);
    this.#heldCount -= held.length;
    if (keep) for (const s of [...held, span]) this.#next.onEnd(s);
  }

  #dropOldestPart(): void {
    const [oldest, spans] = this.#held.entries().next().value as [string, ReadableSpan[]];
    this.#held.delete(oldest);
    this.#heldCount -= spans.length;
  }

  forceFlush(): Promise<void> {
    return this.#next.forceFlush();
  }
  shutdown(): Promise<void> {
    return this.#next.shutdown();
  }
}

/** A running tracing setup. */
export interface Tracing {
  readonly config: TracingConfig;
  /** Exports every span decided so far (a Cloud Run instance's CPU is throttled once it answered). */
  flush(): Promise<void>;
  /** Flushes and stops the provider. */
  shutdown(): Promise<void>;
}

let running: Tracing | undefined;

/**
 * Starts tracing for this process once (later calls return the first setup): registers the
 * provider globally and the undici instrumentation. With `off`, registers nothing: the API stays a
 * no-op and costs nothing measurable.
 * @param component `relay`, `functions`: the resource's `service.name` is `levelset-<component>`.
 * @throws {Error} on an invalid configuration ({@link readTracingConfig}).
 */
export async function startTracing(
  component: string,
  config: TracingConfig = readTracingConfig(),
): Promise<Tracing> {
  if (running) return running;
  if (config.exporter === 'off') {
    running = { config, flush: async () => {}, shutdown: async () => {} };
    return running;
  }
  let exporter: SpanExporter;
  if (config.exporter === 'file') exporter = new OtlpJsonLinesFileExporter(config.file);
  else {
    const { TraceExporter } = await import('@google-cloud/opentelemetry-cloud-trace-exporter');
    exporter = new TraceExporter({ projectId: config.projectId });
  }
  const batch = new BatchSpanProcessor(exporter, {
    // Locally `levelset trace` should see a key's spans within a moment.
    scheduledDelayMillis: config.exporter === 'file' ? 200 : 5000,
  });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': `levelset-${component}` }),
    sampler: new AlwaysOnSampler(),
    spanProcessors: [new OutcomeSpanProcessor(batch, config.sampleRatio)],
  });
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [new UndiciInstrumentation({ requireParentforSpans: true })],
  });
  running = {
    config,
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
  return running;
}

/** Whether {@link startTracing} started an exporter in this process. */
export function tracingEnabled(): boolean {
  return running !== undefined && running.config.exporter !== 'off';
}

/** Exports the spans decided so far, when tracing runs (a no-op otherwise). */
export async function flushTraces(): Promise<void> {
  await running?.flush().catch(() => {});
}
