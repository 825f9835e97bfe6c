// Tracing's pieces without a pipeline: the environment, the export decision by outcome and ratio,
// the trace context a requeue carries, the trace fields of a log line (the relay's enqueue span is
// the relay's own test, test/unit/relay-tracing.test.ts). One SDK is registered for this file's
// process (the in-memory exporter).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { type Attributes, context, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  type ReadableSpan,
  SamplingDecision,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import { ATTR, SPAN, tracer } from '../../core/k8s/tracing.ts';
import { createLogger } from '../../core/log.ts';
import {
  decodePushEnvelope,
  keyMessageOf,
  TRACE_CONTEXT_ATTRIBUTE,
  traceContextOf,
} from '../../core/message.ts';
import { readTracingConfig } from '../../core/tracing-config.ts';
import { levelsetSampler, OutcomeSpanProcessor } from '../../core/tracing-sdk.ts';
import { inDeliverySpan } from '../../functions/runtime/reconcile.ts';
import { requeuedMessage } from '../../functions/runtime/requeue.ts';

const exported = new InMemorySpanExporter();
let ratio: 0 | 1 = 0;
/** The processor under test in front of the in-memory exporter, at ratio 0 or 1 (`ratio`, set per test). */
const atRatio = {
  0: new OutcomeSpanProcessor(new SimpleSpanProcessor(exported), 0),
  1: new OutcomeSpanProcessor(new SimpleSpanProcessor(exported), 1),
};
const provider = new NodeTracerProvider({
  // Levelset's sampler records every delivery (a remote parent sampled or not); what is exported is
  // the processor's decision.
  sampler: levelsetSampler(1),
  spanProcessors: [
    {
      onStart: (s, c) => atRatio[ratio].onStart(s, c),
      onEnd: (s) => atRatio[ratio].onEnd(s),
      forceFlush: async () => {},
      shutdown: async () => {},
    },
  ],
});
provider.register();
after(() => provider.shutdown());

const names = (spans: ReadableSpan[]) => spans.map((s) => s.name).sort();

describe('tracing configuration (LEVELSET_TRACING…)', () => {
  it('is off by default, and names the variable that is missing or out of range', () => {
    assert.deepEqual(readTracingConfig({}), { exporter: 'off' });
    assert.deepEqual(readTracingConfig({ LEVELSET_TRACING: 'file', LEVELSET_TRACE_FILE: '/tmp/t.jsonl' }), {
      exporter: 'file',
      file: '/tmp/t.jsonl',
      sampleRatio: 0.01,
    });
    assert.deepEqual(
      readTracingConfig({
        LEVELSET_TRACING: 'cloud-trace',
        GOOGLE_CLOUD_PROJECT: 'p',
        LEVELSET_TRACE_SAMPLE_RATIO: '0.5',
      }),
      { exporter: 'cloud-trace', projectId: 'p', sampleRatio: 0.5 },
    );
    assert.throws(() => readTracingConfig({ LEVELSET_TRACING: 'file' }), /LEVELSET_TRACE_FILE: required/);
    assert.throws(
      () => readTracingConfig({ LEVELSET_TRACING: 'cloud-trace' }),
      /GOOGLE_CLOUD_PROJECT: required/,
    );
    assert.throws(
      () => readTracingConfig({ LEVELSET_TRACE_SAMPLE_RATIO: '2' }),
      /LEVELSET_TRACE_SAMPLE_RATIO/,
    );
    assert.throws(() => readTracingConfig({ LEVELSET_TRACING: 'jaeger' }), /LEVELSET_TRACING/);
  });
});

describe('export by outcome (OutcomeSpanProcessor)', () => {
  it('exports a delivery that did not succeed with every span under it, even at ratio 0', async () => {
    ratio = 0;
    exported.reset();
    await inDeliverySpan(ROOT_CONTEXT, { [ATTR.key]: 'ns/a' }, async () => {
      tracer().startSpan('GET').end();
      return { outcome: 'transient' as const };
    });
    assert.deepEqual(names(exported.getFinishedSpans()), ['GET', 'reconcile']);
    const reconcile = exported.getFinishedSpans().find((s) => s.name === SPAN.reconcile);
    assert.equal(reconcile?.attributes[ATTR.outcome], 'transient');
    assert.equal(reconcile?.status.code, 2);
  });

  it('drops a successful delivery outside the ratio, and a span that ends after its part was decided follows it', async () => {
    ratio = 0;
    exported.reset();
    let late: ReturnType<ReturnType<typeof tracer>['startSpan']> | undefined;
    await inDeliverySpan(ROOT_CONTEXT, {}, async () => {
      late = tracer().startSpan('late');
      return { outcome: 'success' as const };
    });
    late?.end();
    assert.deepEqual(exported.getFinishedSpans(), []);
    ratio = 1;
    await inDeliverySpan(ROOT_CONTEXT, {}, async () => {
      late = tracer().startSpan('late');
      return { outcome: 'success' as const };
    });
    late?.end();
    assert.deepEqual(names(exported.getFinishedSpans()), ['late', 'reconcile']);
  });

  it('decides a delivery continuing a remote parent on its own outcome (a part of its own)', async () => {
    ratio = 0;
    exported.reset();
    const remote = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: 1,
      isRemote: true,
    });
    await inDeliverySpan(remote, {}, async () => ({ outcome: 'error' as const }));
    const [span] = exported.getFinishedSpans();
    assert.equal(span?.spanContext().traceId, '0af7651916cd43dd8448eb211c80319c');
    assert.equal(span?.parentSpanContext?.spanId, 'b7ad6b7169203331');
  });

  it('exports a delivery under a remote parent that was not sampled for its outcome only, whatever the ratio', async () => {
    ratio = 1;
    exported.reset();
    const leftOut = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: 0,
      isRemote: true,
    });
    await inDeliverySpan(leftOut, {}, async () => ({ outcome: 'success' as const }));
    assert.deepEqual(names(exported.getFinishedSpans()), [], 'a success of a trace left out stays out');
    await inDeliverySpan(leftOut, {}, async () => ({ outcome: 'transient' as const }));
    assert.deepEqual(names(exported.getFinishedSpans()), ['reconcile'], 'a failure is exported');
  });
});

describe('what is recorded (levelsetSampler)', () => {
  const { RECORD_AND_SAMPLED, NOT_RECORD } = SamplingDecision;
  // Random valid trace ids (both decisions at 0.5 but with odds 2⁻⁶³).
  const traceIds = Array.from({ length: 64 }, () => randomBytes(16).toString('hex'));
  const under = (traceFlags: number, isRemote: boolean) =>
    trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags,
      isRemote,
    });
  const decide = (ratio: number, name: string, ctx = ROOT_CONTEXT, traceId = traceIds[0] as string) =>
    levelsetSampler(ratio).shouldSample(ctx, traceId, name, 0, {}, []).decision;

  it('decides a root enqueue span by the trace-id ratio at its start, as the export decision would at its end', () => {
    assert.equal(decide(0, SPAN.enqueue), NOT_RECORD);
    assert.equal(decide(1, SPAN.enqueue), RECORD_AND_SAMPLED);
    const half = new TraceIdRatioBasedSampler(0.5);
    const decisions = traceIds.map((id) => decide(0.5, SPAN.enqueue, ROOT_CONTEXT, id));
    assert.deepEqual(
      decisions,
      traceIds.map((id) => half.shouldSample(ROOT_CONTEXT, id).decision),
    );
    assert.ok(decisions.includes(NOT_RECORD) && decisions.includes(RECORD_AND_SAMPLED));
  });

  it('records every other root, and every span continuing a remote parent, sampled or not (decided by outcome)', () => {
    assert.equal(decide(0, SPAN.reconcile), RECORD_AND_SAMPLED);
    assert.equal(decide(0, SPAN.resync), RECORD_AND_SAMPLED);
    assert.equal(decide(0, SPAN.reconcile, under(0, true)), RECORD_AND_SAMPLED);
    assert.equal(decide(0, SPAN.reconcile, under(1, true)), RECORD_AND_SAMPLED);
  });

  it("never records the Pub/Sub client's publish span as a root (a key published outside its enqueue span, not recorded)", () => {
    const root = (ratio: number, kind: SpanKind, attributes: Attributes) =>
      levelsetSampler(ratio).shouldSample(
        ROOT_CONTEXT,
        traceIds[0] as string,
        'keys create',
        kind,
        attributes,
        [],
      ).decision;
    assert.equal(root(1, SpanKind.PRODUCER, { 'messaging.system': 'gcp_pubsub' }), NOT_RECORD);
    assert.equal(root(1, SpanKind.PRODUCER, {}), RECORD_AND_SAMPLED, 'another root producer is recorded');
    assert.equal(root(1, SpanKind.INTERNAL, { 'messaging.system': 'gcp_pubsub' }), RECORD_AND_SAMPLED);
  });

  it('a span under a local parent follows it (the publish span under an enqueue not recorded is not either)', () => {
    assert.equal(decide(1, 'keys create', under(0, false)), NOT_RECORD);
    assert.equal(decide(0, 'keys create', under(1, false)), RECORD_AND_SAMPLED);
  });
});

describe('trace context across a key message', () => {
  it('a requeue carries the active span in googclient_traceparent, and the delivery reads it back', () => {
    const span = tracer().startSpan(SPAN.requeue);
    const message = keyMessageOf(
      { cluster: 'default', controller: 'foo', namespace: 'ns', name: 'a' },
      'requeue',
      new Date().toISOString(),
    );
    const pushed = (m: ReturnType<typeof requeuedMessage>) => ({
      message: { data: m.data, attributes: m.attributes },
    });
    const requeued = context.with(trace.setSpan(ROOT_CONTEXT, span), () => requeuedMessage(message));
    span.end();
    const delivery = decodePushEnvelope(pushed(requeued));
    const sc = span.spanContext();
    assert.equal(delivery.attributes[TRACE_CONTEXT_ATTRIBUTE], `00-${sc.traceId}-${sc.spanId}-01`);
    const parent = trace.getSpanContext(traceContextOf(delivery.attributes));
    assert.equal(parent?.spanId, sc.spanId);
    assert.equal(parent?.isRemote, true);
    // Outside a span: no attribute, and no parent.
    const plain = decodePushEnvelope(pushed(requeuedMessage(message)));
    assert.equal(plain.attributes[TRACE_CONTEXT_ATTRIBUTE], undefined);
    assert.equal(trace.getSpanContext(traceContextOf(plain.attributes)), undefined);
  });
});

describe('log correlation', () => {
  it('a line written inside a span carries Cloud Logging’s trace fields; one outside carries none', () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger(
      'test',
      new Writable({
        write: (chunk, _e, cb) => {
          lines.push(JSON.parse(String(chunk)));
          cb();
        },
      }),
    );
    const span = tracer().startSpan(SPAN.reconcile);
    context.with(trace.setSpan(ROOT_CONTEXT, span), () => log.info('inside'));
    span.end();
    log.info('outside');
    const [inside, outside] = lines.filter((l) => l.message === 'inside' || l.message === 'outside');
    const sc = span.spanContext();
    assert.equal(
      inside?.['logging.googleapis.com/trace'],
      `projects/${process.env.GOOGLE_CLOUD_PROJECT ?? 'local'}/traces/${sc.traceId}`,
    );
    assert.equal(inside?.['logging.googleapis.com/spanId'], sc.spanId);
    assert.equal(inside?.['logging.googleapis.com/trace_sampled'], true);
    assert.equal(inside?.trace_id, undefined, 'OpenTelemetry’s own fields are renamed');
    assert.equal(outside?.['logging.googleapis.com/trace'], undefined);
    assert.equal(outside?.['logging.googleapis.com/spanId'], undefined);
  });
});
