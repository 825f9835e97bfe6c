// The event → key → message flow: informer planning, primary predicate, Watch.map with its
// context, collapse, publish, and the `publish failed` log line, with hand-cranked timers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';
import type { Controller, ResourceType, WatchEvent } from '../../core/contract/controller.ts';
import type { Key } from '../../core/contract/key.ts';
import { createLogger } from '../../core/log.ts';
import { type KeyMessage, keyMessageSchema } from '../../core/message.ts';
import { namespaces, pods } from '../../functions/kit/resources.ts';
import type { CollapseMode } from '../../relay/collapse.ts';
import { createRelayMetrics } from '../../relay/metrics.ts';
import { KeyPipeline, planInformers } from '../../relay/pipeline.ts';
import { ManualTimers } from '../support/manual-timers.ts';

const widgets: ResourceType = {
  group: 'test.levelset.dev',
  version: 'v1',
  plural: 'widgets',
  kind: 'Widget',
  namespaced: true,
};

const keyOf = (o: KubernetesObject): Key => ({
  namespace: o.metadata?.namespace ?? '',
  name: o.metadata?.name ?? '',
});

/** A test controller: Widgets own Pods; a Namespace change touches every Widget in it. */
function widgetController(name = 'widget'): Controller {
  return {
    name,
    primary: widgets,
    rbac: [],
    watches: [
      { resource: widgets, map: (e) => [keyOf(e.object)] },
      {
        resource: pods,
        labelSelector: 'app=widget',
        map: (e) =>
          (e.object.metadata?.ownerReferences ?? [])
            .filter((r) => r.kind === 'Widget' && r.controller)
            .map((r) => ({ namespace: e.object.metadata?.namespace ?? '', name: r.name })),
      },
      {
        resource: namespaces,
        map: (e, ctx) => ctx.primaryKeys().filter((k) => k.namespace === e.object.metadata?.name),
      },
    ],
    reconcile: async () => undefined,
  };
}

const obj = (kind: string, meta: Partial<V1ObjectMeta>): KubernetesObject => ({
  apiVersion: 'v1',
  kind,
  metadata: { resourceVersion: '1', ...meta },
});
const widget = (name: string, meta: Partial<V1ObjectMeta> = {}) =>
  obj('Widget', { name, namespace: 'ns', generation: 1, ...meta });
const pod = (name: string, owner: string, rv = '1') =>
  obj('Pod', {
    name,
    namespace: 'ns',
    resourceVersion: rv,
    ownerReferences: [
      { apiVersion: 'test.levelset.dev/v1', kind: 'Widget', name: owner, uid: 'u', controller: true },
    ],
  });

function setup(
  options: {
    collapseMs?: number;
    collapseMode?: CollapseMode;
    fail?: boolean;
    primaryKeys?: Key[];
    resourceVersions?: Map<string, string>;
  } = {},
) {
  const timers = new ManualTimers(Date.parse('2026-11-21T10:00:00.000Z'));
  const published: KeyMessage[] = [];
  /** `namespace/name` → the resourceVersion each publish was given. */
  const versions = new Map<string, string | undefined>();
  const logs: { severity: string; message: string; [k: string]: unknown }[] = [];
  const logger = createLogger('relay', { write: (s: string) => void logs.push(JSON.parse(s)) });
  const metrics = createRelayMetrics();
  const controller = widgetController();
  const plans = planInformers([controller]);
  const routesOf = (r: ResourceType) => plans.find((p) => p.resource === r)?.routes ?? [];
  const pipeline = new KeyPipeline({
    collapseMs: options.collapseMs ?? 250,
    collapseMode: options.collapseMode,
    timers,
    logger,
    metrics,
    primaryKeys: () => options.primaryKeys ?? [],
    ...(options.resourceVersions
      ? {
          resourceVersionOf: (_c: string, k: Key) =>
            options.resourceVersions?.get(`${k.namespace}/${k.name}`),
        }
      : {}),
    publish: async (m, _enqueue, resourceVersion) => {
      await new Promise((resolve) => setImmediate(resolve)); // Pub/Sub answers later, not synchronously
      if (options.fail) throw new Error('UNAVAILABLE: emulator down');
      published.push(m);
      versions.set(`${m.namespace}/${m.name}`, resourceVersion);
      return String(published.length);
    },
  });
  const send = (r: ResourceType, event: WatchEvent) => pipeline.handle(routesOf(r), event);
  return { timers, published, versions, logs, metrics, pipeline, send };
}

/** Lets the pipeline's publish promises settle. */
const settle = async () => {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('planInformers', () => {
  it('shares one informer between watches of the same resource, namespace and selector', () => {
    const a = widgetController('widget-a');
    const b = widgetController('widget-b');
    const plans = planInformers([a, b]);
    assert.deepEqual(
      plans.map((p) => [p.id, p.routes.map((r) => `${r.controller.name}${r.primary ? '*' : ''}`)]),
      [
        ['test.levelset.dev/v1/widgets', ['widget-a*', 'widget-b*']],
        ['v1/pods?app=widget', ['widget-a', 'widget-b']],
        ['v1/namespaces', ['widget-a', 'widget-b']],
      ],
    );
    assert.equal(plans[1]?.labelSelector, 'app=widget');
  });

  it('keeps watches with different selectors or namespaces apart', () => {
    const c = widgetController();
    c.watches.push({ resource: pods, namespace: 'other', map: () => [] });
    assert.deepEqual(
      planInformers([c]).map((p) => p.id),
      ['test.levelset.dev/v1/widgets', 'v1/pods?app=widget', 'v1/namespaces', 'v1/pods@other'],
    );
  });
});

describe('KeyPipeline', () => {
  it('publishes a burst of 100 updates of one owned object as a leading and a trailing v1 key message', async () => {
    const { timers, published, send, metrics } = setup();
    for (let i = 1; i <= 100; i++) {
      send(pods, {
        type: 'MODIFIED',
        object: pod('p', 'w1', String(i + 1)),
        oldObject: pod('p', 'w1', String(i)),
      });
      if (i === 1) {
        await settle();
        assert.equal(published.length, 1, 'the first event of a quiet key is published at once');
      }
      timers.advance(1);
    }
    timers.advance(250);
    await settle();
    assert.equal(published.length, 2);
    for (const m of published) assert.deepEqual(keyMessageSchema.parse(m), m);
    assert.deepEqual(published[0], {
      v: 1,
      controller: 'widget',
      namespace: 'ns',
      name: 'w1',
      reason: 'watch',
      enqueuedAt: '2026-11-21T10:00:00.000Z',
    });
    assert.equal(published[1]?.enqueuedAt, '2026-11-21T10:00:00.001Z', 'the first repeat');
    assert.equal((await metrics.keysEnqueued.get()).values[0]?.value, 2);
    assert.equal((await metrics.keysCollapsed.get()).values[0]?.value, 98);
    assert.equal((await metrics.keysPublished.get()).values[0]?.value, 2);
  });

  it('publishes the same burst as one message in trailing-only mode (the baseline)', async () => {
    const { timers, published, send } = setup({ collapseMode: 'trailing' });
    for (let i = 1; i <= 100; i++) {
      send(pods, {
        type: 'MODIFIED',
        object: pod('p', 'w1', String(i + 1)),
        oldObject: pod('p', 'w1', String(i)),
      });
      timers.advance(1);
    }
    await settle();
    assert.equal(published.length, 0);
    timers.advance(250);
    await settle();
    assert.equal(published.length, 1);
  });

  it('drops a status-only update of the primary, but not one of an owned object', async () => {
    const { timers, published, send, metrics } = setup();
    send(widgets, {
      type: 'MODIFIED',
      object: widget('w1', { resourceVersion: '2' }),
      oldObject: widget('w1'),
    });
    timers.advance(250);
    await settle();
    assert.equal(published.length, 0);
    assert.equal((await metrics.eventsFiltered.get()).values[0]?.value, 1);
    send(pods, { type: 'MODIFIED', object: pod('p', 'w1', '2'), oldObject: pod('p', 'w1', '1') });
    timers.advance(250);
    await settle();
    assert.deepEqual(
      published.map((m) => m.name),
      ['w1'],
    );
  });

  it('enqueues a spec change and a deletion of the primary', async () => {
    const { timers, published, send } = setup();
    send(widgets, {
      type: 'MODIFIED',
      object: widget('w1', { generation: 2, resourceVersion: '2' }),
      oldObject: widget('w1'),
    });
    send(widgets, { type: 'DELETED', object: widget('w2') });
    timers.advance(250);
    await settle();
    assert.deepEqual(published.map((m) => m.name).sort(), ['w1', 'w2']);
  });

  it("publishes each key with its primary's resourceVersion in the relay's cache when the publish starts, whatever event enqueued it", async () => {
    const resourceVersions = new Map([['ns/w1', '7']]);
    const { timers, versions, send } = setup({ resourceVersions });
    send(pods, { type: 'ADDED', object: pod('p1', 'w1', '3') }); // a child's event: its own version is not the primary's
    send(pods, { type: 'ADDED', object: pod('p2', 'w2', '4') }); // a primary the relay does not hold
    await settle(); // the leading edges
    assert.deepEqual(Object.fromEntries(versions), { 'ns/w1': '7', 'ns/w2': undefined });
    resourceVersions.set('ns/w1', '9');
    send(pods, { type: 'MODIFIED', object: pod('p1', 'w1', '5'), oldObject: pod('p1', 'w1', '3') });
    send(pods, { type: 'MODIFIED', object: pod('p1', 'w1', '6'), oldObject: pod('p1', 'w1', '5') });
    timers.advance(250);
    await settle();
    assert.equal(versions.get('ns/w1'), '9', 'the trailing publish reads the newest version');
  });

  it("gives Watch.map the primary keys in the relay's cache", async () => {
    const { timers, published, send } = setup({
      primaryKeys: [
        { namespace: 'ns', name: 'w1' },
        { namespace: 'ns', name: 'w2' },
        { namespace: 'elsewhere', name: 'w3' },
      ],
    });
    send(namespaces, { type: 'MODIFIED', object: obj('Namespace', { name: 'ns', resourceVersion: '5' }) });
    timers.advance(250);
    await settle();
    assert.deepEqual(published.map((m) => `${m.namespace}/${m.name}`).sort(), ['ns/w1', 'ns/w2']);
  });

  it('drops an event whose map throws or returns invalid keys, logging it, and carries on', async () => {
    const { timers, published, logs, pipeline } = setup();
    const route = (map: () => Key[]) => ({
      controller: widgetController(),
      primary: false,
      watch: { resource: pods, map },
    });
    const event: WatchEvent = { type: 'ADDED', object: pod('p', 'w1') };
    pipeline.handle(
      [
        route(() => {
          throw new Error('bug');
        }),
        route(() => [{ namespace: 'ns', name: '' }, { name: 'x' } as Key, { namespace: 'ns', name: 'ok' }]),
      ],
      event,
    );
    timers.advance(250);
    await settle();
    assert.deepEqual(
      published.map((m) => m.name),
      ['ok'],
    );
    assert.deepEqual(
      logs.filter((l) => l.severity === 'ERROR').map((l) => l.message),
      [
        'watch map threw: event dropped',
        'watch map returned an invalid key',
        'watch map returned an invalid key',
      ],
    );
  });

  it('logs a refused publish at ERROR with message "publish failed" and counts it', async () => {
    const { timers, logs, send, metrics } = setup({ fail: true });
    send(widgets, { type: 'ADDED', object: widget('w1') });
    timers.advance(250);
    await settle();
    const line = logs.find((l) => l.message === 'publish failed');
    assert.ok(line, 'a publish failed line');
    assert.equal(line.severity, 'ERROR');
    assert.equal(line.controller, 'widget');
    assert.equal(line.key, 'ns/w1');
    assert.equal((await metrics.publishErrors.get()).values[0]?.value, 1);
  });

  it('flush publishes keys still in the window and waits for them', async () => {
    const { published, send, pipeline } = setup({ collapseMs: 60_000 });
    send(widgets, { type: 'ADDED', object: widget('w1') });
    send(pods, { type: 'ADDED', object: pod('p', 'w2') });
    await settle();
    assert.equal(pipeline.pending, 0, 'leading edges are published at once');
    send(widgets, { type: 'DELETED', object: widget('w1') });
    send(pods, { type: 'DELETED', object: pod('p', 'w2') });
    assert.equal(pipeline.pending, 2);
    await pipeline.flush();
    assert.deepEqual(
      published.map((m) => m.name),
      ['w1', 'w2', 'w1', 'w2'],
    );
    assert.equal(pipeline.pending, 0);
  });
});

describe('KeyPipeline: publishes in flight', () => {
  /** A pipeline whose publishes stay pending until the test releases them, one by one. */
  function bounded(maxInFlight: number) {
    const timers = new ManualTimers(Date.parse('2026-11-21T10:00:00.000Z'));
    const metrics = createRelayMetrics();
    /** Messages whose publish has started, in start order, each with its release. */
    const started: { message: KeyMessage; release(): void }[] = [];
    const routes = planInformers([widgetController()]).find((p) => p.resource === widgets)?.routes ?? [];
    const pipeline = new KeyPipeline({
      collapseMs: 250,
      timers,
      logger: createLogger('relay', { write: () => {} }),
      metrics,
      maxInFlight,
      primaryKeys: () => [],
      publish: (message) =>
        new Promise((resolve) => {
          started.push({ message, release: () => resolve(String(started.length)) });
        }),
    });
    metrics.trackWaitingPublishes(() => pipeline.waitingPublishes);
    const send = (event: WatchEvent) => pipeline.handle(routes, event);
    const names = () => started.map((s) => `${s.message.name}@${s.message.enqueuedAt.slice(17)}`);
    const waitingGauge = async () => (await metrics.publishesWaiting.get()).values[0]?.value;
    return { timers, pipeline, send, started, names, waitingGauge };
  }

  it('starts at most maxInFlight publishes, the rest in emit order as others settle, each key in order; flush waits for all', async () => {
    const { timers, pipeline, send, started, names, waitingGauge } = bounded(2);
    for (let i = 1; i <= 5; i++) send({ type: 'ADDED', object: widget(`w${i}`) });
    await settle();
    assert.deepEqual(names(), ['w1@00.000Z', 'w2@00.000Z'], 'two publishes started, three wait');
    assert.equal(pipeline.waitingPublishes, 3);
    assert.equal(await waitingGauge(), 3);
    // w1 changes again while its leading publish is in flight: its trailing publish (at the
    // window's end) queues behind the three waiting ones and starts after them.
    timers.advance(10);
    send({ type: 'DELETED', object: widget('w1') });
    timers.advance(240);
    assert.equal(pipeline.waitingPublishes, 4);
    let flushed = false;
    const flushing = pipeline.flush().then(() => {
      flushed = true;
    });
    started[1]?.release();
    await settle();
    assert.deepEqual(names().slice(2), ['w3@00.000Z'], 'one settled, the next in line started');
    started[0]?.release();
    started[2]?.release();
    await settle();
    assert.deepEqual(names().slice(3), ['w4@00.000Z', 'w5@00.000Z']);
    assert.equal(pipeline.waitingPublishes, 1);
    started[3]?.release();
    await settle();
    assert.deepEqual(names().slice(5), ['w1@00.010Z'], "w1's trailing publish, after its leading one");
    assert.equal(pipeline.waitingPublishes, 0);
    assert.equal(await waitingGauge(), 0);
    assert.equal(flushed, false, 'flush waits for the publishes still pending');
    started[4]?.release();
    await settle();
    assert.equal(flushed, false);
    started[5]?.release();
    await flushing;
    assert.equal(started.length, 6);
  });

  it('discard drops the publishes waiting for a slot; those started run on', async () => {
    const { pipeline, send, started, names } = bounded(1);
    for (let i = 1; i <= 3; i++) send({ type: 'ADDED', object: widget(`w${i}`) });
    await settle();
    pipeline.discard();
    assert.equal(pipeline.waitingPublishes, 0);
    for (const s of started) s.release();
    await pipeline.flush();
    assert.deepEqual(names(), ['w1@00.000Z']);
  });

  it('refuses a bound that is not an integer >= 1', () => {
    for (const maxInFlight of [0, 1.5, Number.NaN]) assert.throws(() => bounded(maxInFlight), RangeError);
  });
});
