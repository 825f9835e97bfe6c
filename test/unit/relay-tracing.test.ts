// The relay's enqueue span: a trace per published key, the first and last events collapsed into a
// waiting publish as its span events, the publish under it. One SDK is registered for this file's process (the
// in-memory exporter, behind the functions' OutcomeSpanProcessor at ratio 1).
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { hrTimeToNanoseconds } from '@opentelemetry/core';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import type { ResourceType } from '../../core/contract/controller.ts';
import { ATTR, SPAN } from '../../core/k8s/tracing.ts';
import { createLogger } from '../../core/log.ts';
import { OutcomeSpanProcessor } from '../../core/tracing-sdk.ts';
import { KeyPipeline } from '../../relay/pipeline.ts';
import { ManualTimers } from '../support/manual-timers.ts';

const exported = new InMemorySpanExporter();
const provider = new NodeTracerProvider({
  spanProcessors: [new OutcomeSpanProcessor(new SimpleSpanProcessor(exported), 1)],
});
provider.register();
after(() => provider.shutdown());

describe('the relay’s enqueue span', () => {
  const widgets: ResourceType = {
    group: 'x.dev',
    version: 'v1',
    plural: 'widgets',
    kind: 'Widget',
    namespaced: true,
  };
  const event = (type: 'ADDED' | 'MODIFIED', rv: string) => ({
    type,
    object: {
      apiVersion: 'x.dev/v1',
      kind: 'Widget',
      metadata: { name: 'w', namespace: 'ns', resourceVersion: rv },
    },
  });

  it('starts a trace per published key; the first and last events collapsed into a waiting publish become its span events; the publish runs under it', async () => {
    exported.reset();
    const timers = new ManualTimers();
    const publishedUnder: (string | undefined)[] = [];
    const pipeline = new KeyPipeline({
      collapseMs: 100,
      timers,
      primaryKeys: () => [],
      logger: createLogger('test', new Writable({ write: (_c, _e, cb) => cb() })),
      publish: async () => {
        publishedUnder.push(trace.getSpan(context.active())?.spanContext().spanId);
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
    pipeline.handle([route], event('ADDED', '1')); // leading edge: published at once
    pipeline.handle([route], event('MODIFIED', '2')); // waits for the window's end
    pipeline.handle([route], event('MODIFIED', '3')); // collapses into it
    pipeline.handle([route], event('MODIFIED', '4')); // and so do these
    pipeline.handle([route], event('MODIFIED', '5'));
    pipeline.handle([route], event('MODIFIED', '6'));
    timers.advance(100);
    await pipeline.flush();
    const spans = exported.getFinishedSpans().filter((s) => s.name === SPAN.enqueue);
    assert.equal(spans.length, 2, 'two publishes, two traces');
    const [first, second] = spans.sort(
      (a, b) => Number(a.attributes[ATTR.resourceVersion]) - Number(b.attributes[ATTR.resourceVersion]),
    );
    assert.notEqual(first?.spanContext().traceId, second?.spanContext().traceId);
    assert.equal(first?.kind, SpanKind.PRODUCER);
    assert.deepEqual(
      { ...first?.attributes },
      {
        [ATTR.controller]: 'widget',
        [ATTR.cluster]: 'default',
        [ATTR.key]: 'ns/w',
        [ATTR.cause]: 'watch',
        [ATTR.resource]: 'x.dev/v1/widgets',
        [ATTR.eventType]: 'ADDED',
        [ATTR.resourceVersion]: '1',
        [ATTR.edge]: 'leading',
        [ATTR.messageId]: 'm1',
      },
    );
    assert.equal(second?.attributes[ATTR.resourceVersion], '2');
    assert.equal(second?.attributes[ATTR.edge], 'trailing');
    assert.equal(second?.attributes[ATTR.collapsed], 4, 'every collapsed event counted');
    assert.deepEqual(
      second?.events.map((e) => [e.name, e.attributes?.[ATTR.resourceVersion]]),
      [
        ['collapsed', '3'],
        ['collapsed', '6'],
      ],
      'the first and the last collapsed events recorded, not one per repeat',
    );
    const [first3, last6] = second?.events ?? [];
    assert.ok(
      first3 && last6 && hrTimeToNanoseconds(first3.time) <= hrTimeToNanoseconds(last6.time),
      'each event at the time it was seen',
    );
    assert.deepEqual(publishedUnder, [first?.spanContext().spanId, second?.spanContext().spanId]);
  });
});
