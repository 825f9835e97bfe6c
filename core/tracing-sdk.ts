/**
 * The OpenTelemetry SDK's setup (core/tracing.ts says what and why): the provider, the undici
 * instrumentation, the export decision ({@link OutcomeSpanProcessor}) and the OTLP/JSON lines file
 * exporter. Imported by {@link startTracing} only when tracing is on.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Attributes, type Context, ROOT_CONTEXT, SpanKind, TraceFlags } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  type ReadableSpan,
  type Sampler,
  SamplingDecision,
  type SamplingResult,
  type Span,
  type SpanExporter,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import { LRUCache } from 'lru-cache';
import { ATTR, SPAN } from './k8s/tracing.ts';
import type { Tracing, TracingConfig } from './tracing-config.ts';

/** The end of an OTLP/JSON line. */
const NEWLINE = Buffer.from('\n');

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
      // The serializer's UTF-8 bytes as they are, and the line's end: no decoding into a string and
      // encoding again.
      const bytes = JsonTraceSerializer.serializeRequest(spans) ?? new Uint8Array();
      appendFileSync(this.path, Buffer.concat([bytes, NEWLINE]));
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
 * id is in the ratio (`TraceIdRatioBasedSampler`'s test) and its remote parent, if any, was sampled
 * (a delivery of a key whose `enqueue` was left out is exported for its outcome only); a span ending after its part was decided
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
  /**
   * Part → its decision, the latest {@link DECISIONS_KEPT} (lru-cache: a Map evicting its oldest
   * entry by `keys().next()` walked every deleted slot V8 keeps before the next rehash, about 10 µs
   * per span end once full: the relay's ingest and every function instance after 10 000 spans).
   */
  readonly #decided = new LRUCache<string, boolean>({ max: DECISIONS_KEPT });

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
    // A part continuing a remote parent that was not sampled (the relay's enqueue outside the ratio)
    // is exported for its outcome only: its trace was left out where it started.
    const parent = span.parentSpanContext;
    const leftOut = parent?.isRemote === true && (parent.traceFlags & TraceFlags.SAMPLED) === 0;
    const keep =
      (outcome !== undefined && outcome !== 'success') ||
      (!leftOut &&
        this.#ratio.shouldSample(ROOT_CONTEXT, span.spanContext().traceId).decision ===
          SamplingDecision.RECORD_AND_SAMPLED);
    this.#decided.set(part, keep);
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

/** The attribute naming the messaging system of the Pub/Sub client's spans (`gcp_pubsub`). */
const PUBSUB_SYSTEM = 'messaging.system';

/**
 * The root sampler of {@link levelsetSampler}: a root `enqueue` span is decided at its start by the
 * trace-id ratio (`TraceIdRatioBasedSampler`, the test {@link OutcomeSpanProcessor} would apply when
 * it ends: an `enqueue` span never carries `levelset.outcome`, so its part's decision is the ratio's
 * alone and known up front); the Pub/Sub client's publish span as a root (a key whose `enqueue` span
 * was not recorded, published outside it) is never recorded; every other root span is recorded, for
 * the decision at its end.
 */
class EnqueueRatioSampler implements Sampler {
  readonly #ratio: TraceIdRatioBasedSampler;
  readonly #on = new AlwaysOnSampler();
  constructor(sampleRatio: number) {
    this.#ratio = new TraceIdRatioBasedSampler(sampleRatio);
  }
  shouldSample(
    context: Context,
    traceId: string,
    spanName: string,
    spanKind: SpanKind,
    attributes: Attributes,
  ): SamplingResult {
    if (spanName === SPAN.enqueue) return this.#ratio.shouldSample(context, traceId);
    // The Pub/Sub client's publish span with no parent: a key published outside its enqueue span,
    // which was not recorded (relay/pipeline.ts): left out as that span was.
    if (spanKind === SpanKind.PRODUCER && attributes[PUBSUB_SYSTEM] === 'gcp_pubsub')
      return { decision: SamplingDecision.NOT_RECORD };
    return this.#on.shouldSample();
  }
  toString(): string {
    return `EnqueueRatio{${this.#ratio.toString()}}`;
  }
}

/**
 * The sampler of a Levelset process: which spans are recorded at all (what is exported of the
 * recorded ones is {@link OutcomeSpanProcessor}'s decision). OpenTelemetry's `ParentBasedSampler`:
 * - a root `enqueue` span (relay, resync, audit log) is recorded only when its trace id is in
 *   `sampleRatio` (the export decision it would get anyway, taken before any work: a relay ingesting
 *   a burst of events builds, holds and serializes nothing for the other keys); a root Pub/Sub
 *   publish span (the relay publishes a key whose `enqueue` span is not recorded outside it) never;
 *   other roots always;
 * - a span under a local parent follows it (the Pub/Sub client's `create` span under an `enqueue`
 *   not recorded is not recorded either, instead of waiting, held, for a decision that never comes);
 * - a span continuing a remote parent (a `reconcile` continuing a delivery, sampled or not) is
 *   always recorded: its part is decided by its outcome when it ends.
 * @param sampleRatio 0–1, as `LEVELSET_TRACE_SAMPLE_RATIO`.
 */
export function levelsetSampler(sampleRatio: number): Sampler {
  const on = new AlwaysOnSampler();
  return new ParentBasedSampler({
    root: new EnqueueRatioSampler(sampleRatio),
    remoteParentSampled: on,
    remoteParentNotSampled: on,
    localParentSampled: on,
    localParentNotSampled: new AlwaysOffSampler(),
  });
}

/**
 * The provider of a Levelset process, not registered: the sampler ({@link levelsetSampler}), the
 * export decision ({@link OutcomeSpanProcessor}) and the batching exporter `config` names.
 * {@link startTracingSdk} registers it; the bench's `tracing` section swaps two of them in and out.
 * @param component `relay`, `functions`: the resource's `service.name` is `levelset-<component>`.
 */
export async function tracerProviderOf(
  component: string,
  config: Exclude<TracingConfig, { exporter: 'off' }>,
): Promise<NodeTracerProvider> {
  let exporter: SpanExporter;
  if (config.exporter === 'file') exporter = new OtlpJsonLinesFileExporter(config.file);
  else {
    const { TraceExporter } = await import('@google-cloud/opentelemetry-cloud-trace-exporter');
    // The exporter writes each span attribute as a label of the same name; `resourceFilter` adds the
    // resource's `service.name` as one too, so `levelset trace --project` can name each span's process.
    exporter = new TraceExporter({ projectId: config.projectId, resourceFilter: /^service\.name$/ });
  }
  const batch = new BatchSpanProcessor(exporter, {
    // Locally `levelset trace` should see a key's spans within a moment.
    scheduledDelayMillis: config.exporter === 'file' ? 200 : 5000,
  });
  return new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': `levelset-${component}` }),
    sampler: levelsetSampler(config.sampleRatio),
    spanProcessors: [new OutcomeSpanProcessor(batch, config.sampleRatio)],
  });
}

/**
 * Registers the provider ({@link tracerProviderOf}) globally and the undici instrumentation,
 * exporting as `config` says.
 * @param component `relay`, `functions`: the resource's `service.name` is `levelset-<component>`.
 */
export async function startTracingSdk(
  component: string,
  config: Exclude<TracingConfig, { exporter: 'off' }>,
): Promise<Tracing> {
  const provider = await tracerProviderOf(component, config);
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [new UndiciInstrumentation({ requireParentforSpans: true })],
  });
  return {
    config,
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
