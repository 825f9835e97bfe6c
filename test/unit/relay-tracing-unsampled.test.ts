// The relay's keys outside the sample ratio: their enqueue spans are not recorded, and their publish
// runs in the root context (no span to be a parent of the Pub/Sub client's), even when an event
// arrives inside another span; the publish is told the enqueue span's context all the same. One SDK is registered for this file's process: Levelset's sampler at
// ratio 0, the in-memory exporter.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { context, ROOT_CONTEXT, type SpanContext, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import type { ResourceType } from '../../core/contract/controller.ts';
import { tracer } from '../../core/k8s/tracing.ts';
import { createLogger } from '../../core/log.ts';
import { levelsetSampler, OutcomeSpanProcessor } from '../../core/tracing-sdk.ts';
import { KeyPipeline } from '../../relay/pipeline.ts';
import { ManualTimers } from '../support/manual-timers.ts';

const exported = new InMemorySpanExporter();
const provider = new NodeTracerProvider({
  sampler: levelsetSampler(0),
  spanProcessors: [new OutcomeSpanProcessor(new SimpleSpanProcessor(exported), 0)],
});
provider.register();
after(() => provider.shutdown());

describe('the relay’s keys outside the sample ratio', () => {
  const widgets: ResourceType = {
    group: 'x.dev',
    version: 'v1',
    plural: 'widgets',
    kind: 'Widget',
    namespaced: true,
  };
  const event = (rv: string) => ({
    type: 'MODIFIED' as const,
    object: {
      apiVersion: 'x.dev/v1',
      kind: 'Widget',
      metadata: { name: 'w', namespace: 'ns', resourceVersion: rv },
    },
  });

  it('publish in the root context, with no span recorded, even when the event arrives inside a span', async () => {
    const timers = new ManualTimers();
    const activeAtPublish: (string | undefined)[] = [];
    const named: (SpanContext | undefined)[] = [];
    const pipeline = new KeyPipeline({
      collapseMs: 100,
      timers,
      primaryKeys: () => [],
      logger: createLogger('test', new Writable({ write: (_c, _e, cb) => cb() })),
      publish: async (_m, enqueue) => {
        named.push(enqueue);
        activeAtPublish.push(trace.getSpan(context.active())?.spanContext().spanId);
        return 'm1';
      },
    });
    const route = {
      controller: {
        name: 'widget',
        primary: widgets,
        rbac: [],
        watches: [],
        reconcile: async () => undefined,
      },
      watch: { resource: widgets, map: () => [{ namespace: 'ns', name: 'w' }] },
      primary: false,
    };
    pipeline.handle([route], event('1')); // leading edge: published at once
    pipeline.handle([route], event('2')); // trailing edge, at the window's end
    // An event handled inside another (recorded) span: its key's publish is not that span's child.
    const outer = tracer().startSpan('outer', {}, ROOT_CONTEXT);
    assert.ok(outer.isRecording(), 'another root is recorded');
    timers.advance(100);
    context.with(trace.setSpan(ROOT_CONTEXT, outer), () => pipeline.handle([route], event('3')));
    outer.end();
    timers.advance(100);
    await pipeline.flush();
    assert.deepEqual(activeAtPublish, [undefined, undefined, undefined], 'no active span at any publish');
    // The in-process mode continues it (functions/runtime/in-process.ts): a valid context, not sampled.
    assert.equal(named.length, 3);
    for (const c of named) {
      assert.ok(c && trace.isSpanContextValid(c), 'each publish names its enqueue span');
      assert.equal(c?.traceFlags, 0, 'not sampled');
    }
    assert.ok(
      exported.getFinishedSpans().every((s) => s.name !== 'enqueue'),
      'no enqueue span recorded at ratio 0',
    );
  });
});
