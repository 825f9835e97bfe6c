/**
 * The OpenTelemetry SDK of a Levelset process (relay, functions, in-process mode): configured from
 * the environment (zod-validated), started once per process by its entry point with
 * {@link startTracing}. Levelset's own code uses only the API (core/k8s/tracing.ts).
 *
 * - Provider: the SDK's `NodeTracerProvider` (AsyncLocalStorage context, W3C trace context
 *   propagation), `service.name` = `levelset-<component>`.
 * - Kubernetes API calls: `@opentelemetry/instrumentation-undici` (client-node 2.x sends every
 *   request with undici's `fetch`, which reports to `diagnostics_channel`), only under a span of
 *   ours (`requireParentforSpans`): the relay's list+watch is not traced.
 * - Pub/Sub: the client's own OpenTelemetry support (`enableOpenTelemetryTracing`,
 *   core/publish.ts): its `<topic> create` span carries the trace into the message attribute
 *   `googclient_traceparent`, which `reconcile` continues (core/message.ts).
 * - Export: `cloud-trace` (`@google-cloud/opentelemetry-cloud-trace-exporter`, Cloud Trace API v2),
 *   `file` (OTLP/JSON, one `ExportTraceServiceRequest` per line, the OpenTelemetry Collector file
 *   exporter's format: what `levelset dev` writes and `levelset trace` reads), or `off`.
 *
 * Sampling, honestly: which spans are exported is decided when a process's part of a trace ends
 * ({@link OutcomeSpanProcessor}): the part under a
 * `reconcile` span whose outcome is not `success` always, the rest when its trace id falls in
 * `LEVELSET_TRACE_SAMPLE_RATIO` (the same `TraceIdRatioBased` test in every process, so the relay's
 * and the function's parts of a successful key agree). A failing key whose trace id is not in the
 * ratio thus has its delivery spans exported without the relay's `enqueue` span, which was decided
 * earlier in another process; its `reconcile` span carries `levelset.enqueued_at` and the reason instead.
 * Every span is recorded (for that decision at its end) except a root `enqueue` span outside the
 * ratio and the spans under it in its process (`levelsetSampler`): its part's decision is the ratio's
 * alone, so it is taken at its start, and a relay ingesting a burst of events does no span work for
 * the keys it would not export (the bench's `tracing` section).
 *
 * The SDK itself (core/tracing-sdk.ts) is imported only when tracing is on: with `off`, a
 * process (a function's cold start) loads the API alone.
 */
import { readTracingConfig, type Tracing, type TracingConfig } from './tracing-config.ts';

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
  const { startTracingSdk } = await import('./tracing-sdk.ts');
  running = await startTracingSdk(component, config);
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
