// The relay against the local API server (or TEST_KUBECONFIG's cluster) and the real Pub/Sub
// emulator: readiness after the first LIST, collapse of a burst, deletions, metadata only,
// restart + re-list after the watch breaks, a CRD that appears later, status-only updates.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Message, PubSub, type Subscription } from '@google-cloud/pubsub';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { Controller, ResourceType, WatchEvent } from '../../core/contract/controller.ts';
import type { Key } from '../../core/contract/key.ts';
import { createLogger } from '../../core/log.ts';
import { type KeyMessage, keyMessageSchema } from '../../core/message.ts';
import { createKeyPublisher, emulatorClientOptions, type KeyPublisher } from '../../core/publish.ts';
import { configmaps, secrets } from '../../functions/kit/resources.ts';
import { startTestCluster, type TestCluster, uniqueSuffix } from '../../functions/kit/testing.ts';
import { type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import type { RelayMetrics } from '../../relay/metrics.ts';
import { type Relay, startRelay } from '../../relay/relay.ts';
import { startAll } from '../support/start.ts';
import { waitFor } from '../support/wait.ts';

const OWNER_LABEL = 'relay-test.levelset.dev/owner';
const SECRET_VALUE = 'dG9wLXNlY3JldC12YWx1ZQ=='; // must never reach the relay

const keyOf = (o: KubernetesObject): Key => ({
  namespace: o.metadata?.namespace ?? '',
  name: o.metadata?.name ?? '',
});

/** Every event a test controller's maps saw, to check what the relay holds. */
const seen: WatchEvent[] = [];

/** ConfigMaps are the primaries; a Secret labelled with an owner maps to that ConfigMap's key. */
function configMapController(name: string, namespace: string): Controller {
  return {
    name,
    primary: configmaps,
    rbac: [],
    watches: [
      {
        resource: configmaps,
        namespace,
        map: (e) => {
          seen.push(e);
          return [keyOf(e.object)];
        },
      },
      {
        resource: secrets,
        namespace,
        labelSelector: OWNER_LABEL,
        map: (e) => {
          seen.push(e);
          const owner = e.object.metadata?.labels?.[OWNER_LABEL];
          return owner ? [{ namespace: e.object.metadata?.namespace ?? '', name: owner }] : [];
        },
      },
    ],
    reconcile: async () => undefined,
  };
}

/** A pull subscription on the keys topic that collects every key message. */
class Inbox {
  readonly messages: KeyMessage[] = [];
  readonly #subscription: Subscription;
  constructor(subscription: Subscription) {
    this.#subscription = subscription;
    subscription.on('message', (m: Message) => {
      this.messages.push(keyMessageSchema.parse(JSON.parse(m.data.toString('utf8'))));
      m.ack();
    });
  }
  for(controller: string, name: string, since = 0): KeyMessage[] {
    return this.messages.filter(
      (m) => m.controller === controller && m.name === name && Date.parse(m.enqueuedAt) >= since,
    );
  }
  async close(): Promise<void> {
    this.#subscription.removeAllListeners('message');
    await this.#subscription.close();
  }
}

const sum = async (metric: { get(): Promise<{ values: { value: number }[] }> }) =>
  (await metric.get()).values.reduce((s, v) => s + v.value, 0);

/** Waits until every key the relay enqueued is published and every published message has arrived. */
async function drained(metrics: RelayMetrics, inbox: Inbox): Promise<void> {
  await waitFor(
    async () => {
      const enqueued = await sum(metrics.keysEnqueued);
      const published = await sum(metrics.keysPublished);
      const failed = await sum(metrics.publishErrors);
      return enqueued === published + failed && inbox.messages.length >= published;
    },
    { message: 'relay drained and messages delivered' },
  );
}

describe('relay (integration)', () => {
  let cluster: TestCluster;
  let emulator: PubSubEmulator;
  let pubsub: PubSub;
  let publisher: KeyPublisher;
  let core: CoreV1Api;
  const topic = `relay-keys-${uniqueSuffix()}`;
  const logs: { severity: string; message: string; [k: string]: unknown }[] = [];
  const logger = createLogger('relay', {
    write: (s: string) => {
      logs.push(JSON.parse(s));
      if (process.env.LEVELSET_TEST_VERBOSE) process.stderr.write(s);
    },
  });

  const newInbox = async (): Promise<Inbox> => {
    const [subscription] = await pubsub.topic(topic).createSubscription(`inbox-${uniqueSuffix()}`, {
      enableMessageOrdering: true,
    });
    return new Inbox(subscription);
  };

  before(async () => {
    [cluster, emulator] = await startAll([startTestCluster(), startPubSubEmulator()]);
    pubsub = new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.host) });
    await pubsub.createTopic(topic);
    publisher = createKeyPublisher({
      projectId: emulator.projectId,
      topic,
      emulatorHost: emulator.host,
      logger,
    });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  });

  after(async () => {
    await publisher?.close();
    await pubsub?.close();
    await Promise.allSettled([cluster?.stop(), emulator?.stop()]);
  });

  describe('with ConfigMaps as primaries and labelled Secrets as secondaries', () => {
    let ns: string;
    let relay: Relay;
    let inbox: Inbox;
    const controller = `relay-cm-${uniqueSuffix()}`;

    before(async () => {
      ns = await cluster.createNamespace('relay');
      inbox = await newInbox();
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: 'existing' }, data: { a: '1' } },
      });
    });

    after(async () => {
      await relay?.stop();
      await inbox?.close();
    });

    it('is ready only after the initial list, and publishes the keys it found', async () => {
      // On the local API server, make the first LISTs fail so the initial list is visibly late.
      cluster.local?.faults.failNext({ verb: 'list', resource: 'configmaps', namespace: ns }, 2, {
        status: 500,
      });
      relay = await startRelay({
        kubeConfig: cluster.kubeConfig,
        publisher,
        controllers: [configMapController(controller, ns)],
        // Wider than the default 250 ms so that a burst on a loaded machine still fits one window
        // (the default window is measured by npm run bench).
        collapseMs: 1000,
        logger,
        port: 0,
        host: '127.0.0.1',
        informers: { backoff: { initialMs: 100, maxMs: 400 }, discoveryIntervalMs: 200 },
      });
      assert.equal(relay.ready(), false);
      if (cluster.local) {
        // The LISTs fail (above), so this is before the first successful one.
        const notReady = await fetch(`http://127.0.0.1:${relay.port}/readyz`);
        assert.equal(notReady.status, 503);
        assert.match(await notReady.text(), new RegExp(`v1/configmaps@${ns}`));
      }
      assert.equal((await fetch(`http://127.0.0.1:${relay.port}/healthz`)).status, 200);

      await relay.whenReady();
      assert.equal(relay.ready(), true);
      assert.equal((await fetch(`http://127.0.0.1:${relay.port}/readyz`)).status, 200);
      if (cluster.local) {
        assert.ok(relay.informers().find((i) => i.id === `v1/configmaps@${ns}`)?.restarts === 2);
      }
      await waitFor(() => inbox.for(controller, 'existing').length === 1, {
        message: 'key of the existing ConfigMap',
      });
    });

    it('publishes at most a leading and a trailing message for a burst of 100 updates to one object', async () => {
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: 'hot' }, data: { n: '0' } },
      });
      await waitFor(() => inbox.for(controller, 'hot').length === 1, { message: 'key of the new ConfigMap' });
      await drained(relay.metrics, inbox);
      const receivedBefore = await sum(relay.metrics.eventsReceived);
      const publishedBefore = await sum(relay.metrics.keysPublished);

      // 100 updates sent together, so that the burst falls inside one collapse window (1000 ms) on an
      // idle machine; on a loaded one it may span more windows, each costing one trailing message.
      const burstStarted = performance.now();
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          core.patchNamespacedConfigMap(
            { namespace: ns, name: 'hot', body: { data: { [`k${i}`]: String(i) } } },
            setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
          ),
        ),
      );
      await waitFor(async () => (await sum(relay.metrics.eventsReceived)) >= receivedBefore + 100, {
        message: '100 MODIFIED events received',
      });
      const burstMs = performance.now() - burstStarted;
      await drained(relay.metrics, inbox);
      const published = (await sum(relay.metrics.keysPublished)) - publishedBefore;
      // The first event is published at once when the key is quiet, the rest as one trailing message
      // per window the burst spans: at most 1 + ⌈burst / window⌉ (2 when it fits in one window).
      const bound = 1 + Math.max(1, Math.ceil(burstMs / 1000));
      assert.ok(
        published >= 1 && published <= bound,
        `published ${published} messages for a burst of ${Math.round(burstMs)} ms (at most ${bound})`,
      );
      assert.equal(inbox.for(controller, 'hot').length, 1 + published);
    });

    it('publishes a key for a deleted primary and for a deleted secondary', async () => {
      await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'doomed' } } });
      await core.createNamespacedSecret({
        namespace: ns,
        body: {
          metadata: { name: 'creds', labels: { [OWNER_LABEL]: 'owner-a' } },
          data: { password: SECRET_VALUE },
        },
      });
      await waitFor(
        () => inbox.for(controller, 'doomed').length === 1 && inbox.for(controller, 'owner-a').length === 1,
        {
          message: 'keys of the created objects',
        },
      );
      const since = Date.now();
      await core.deleteNamespacedConfigMap({ namespace: ns, name: 'doomed' });
      await core.deleteNamespacedSecret({ namespace: ns, name: 'creds' });
      await waitFor(
        () =>
          inbox.for(controller, 'doomed', since).length === 1 &&
          inbox.for(controller, 'owner-a', since).length === 1,
        { message: 'keys of the deleted objects' },
      );
      const deletes = seen.filter((e) => e.type === 'DELETED').map((e) => e.object.metadata?.name);
      assert.ok(deletes.includes('doomed') && deletes.includes('creds'));
    });

    it('holds metadata only: no Secret data, no object bodies', () => {
      assert.ok(seen.some((e) => e.object.kind === 'Secret'));
      for (const e of seen) {
        assert.deepEqual(Object.keys(e.object).sort(), ['apiVersion', 'kind', 'metadata']);
        // Who wrote it and when (for predicates), never which fields (fieldsV1 names a Secret's keys).
        for (const m of e.object.metadata?.managedFields ?? [])
          assert.deepEqual(
            Object.keys(m).filter((k) => !['manager', 'operation', 'subresource', 'time'].includes(k)),
            [],
          );
        assert.equal(e.oldObject?.metadata?.managedFields, undefined, 'the cache keeps no managers');
      }
      assert.doesNotMatch(JSON.stringify(seen), new RegExp(SECRET_VALUE));
      assert.ok(!logs.some((l) => JSON.stringify(l).includes(SECRET_VALUE)));
      // The API server honoured the metadata-only Accept header on the watches, too.
      assert.ok(seen.some((e) => e.type === 'MODIFIED'));
      assert.ok(!logs.some((l) => l.message.startsWith('API server sent whole objects')));
    });

    it('supplies the cached old object on MODIFIED', () => {
      const modified = seen.find((e) => e.type === 'MODIFIED' && e.object.metadata?.name === 'hot');
      assert.ok(modified?.oldObject, 'oldObject present');
      assert.notEqual(
        modified.oldObject.metadata?.resourceVersion,
        modified.object.metadata?.resourceVersion,
      );
    });

    it('re-watches after a clean server-side close of the watch, without a re-list', async (t) => {
      if (!cluster.local) return t.skip('needs the local API server fault injection');
      const informerId = `v1/configmaps@${ns}`;
      const lists = () =>
        cluster.local?.requests.count({ verb: 'list', resource: 'configmaps', namespace: ns }) ?? 0;
      const restarts = () => relay.informers().find((i) => i.id === informerId)?.restarts;
      const [listsBefore, restartsBefore] = [lists(), restarts()];
      const dropped = cluster.local.faults.dropWatches('close');
      assert.ok(dropped >= 2, `dropped ${dropped} watches`);
      const since = Date.now();
      await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'after-close' } } });
      await waitFor(() => inbox.for(controller, 'after-close', since).length === 1, {
        message: 'key after re-watch',
      });
      assert.equal(lists(), listsBefore, 'resumed from the last resourceVersion');
      assert.equal(restarts(), restartsBefore);
    });

    it('restarts a broken list+watch with backoff and re-lists: changes made meanwhile are published', async (t) => {
      if (!cluster.local) return t.skip('needs the local API server fault injection');
      const faults = cluster.local.faults;
      const informerId = `v1/configmaps@${ns}`;
      const restartsBefore = relay.informers().find((i) => i.id === informerId)?.restarts ?? 0;
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: 'gone-while-down' } },
      });
      await waitFor(() => inbox.for(controller, 'gone-while-down').length === 1, {
        message: 'key of gone-while-down',
      });

      // Break every watch (connection reset) and keep LISTs failing: the informer errors and retries.
      faults.failNext({ verb: 'list', resource: 'configmaps', namespace: ns }, Number.POSITIVE_INFINITY, {
        status: 503,
      });
      faults.dropWatches('reset');
      await waitFor(
        () => (relay.informers().find((i) => i.id === informerId)?.restarts ?? 0) >= restartsBefore + 2,
        {
          message: 'informer restarting',
        },
      );
      const since = Date.now();
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: 'made-while-down' } },
      });
      await core.deleteNamespacedConfigMap({ namespace: ns, name: 'gone-while-down' });
      faults.clear();

      // Nothing watched while these happened: only the fresh LIST can find them.
      await waitFor(
        () =>
          inbox.for(controller, 'made-while-down', since).length >= 1 &&
          inbox.for(controller, 'gone-while-down', since).length >= 1,
        { message: 'keys of the changes made while the watch was down' },
      );
      const tombstone = seen.find(
        (e) => e.type === 'DELETED' && e.object.metadata?.name === 'gone-while-down',
      );
      assert.ok(tombstone, 'a DELETED event from the re-list');
      const metrics = await (await fetch(`http://127.0.0.1:${relay.port}/metrics`)).text();
      assert.match(
        metrics,
        new RegExp(`levelset_relay_informer_restarts_total\\{resource="${informerId}"\\} [1-9]`),
      );
      assert.ok(logs.some((l) => l.severity === 'WARNING' && l.message.startsWith('list+watch failed')));
    });

    it('re-lists after 410 Gone (compacted history)', async (t) => {
      if (!cluster.local) return t.skip('needs the local API server fault injection');
      const lists = () =>
        cluster.local?.requests.count({ verb: 'list', resource: 'configmaps', namespace: ns }) ?? 0;
      const listsBefore = lists();
      // A write the relay does not watch moves the cluster's resourceVersion past the informer's;
      // compacting then makes the informer's resourceVersion too old to resume from.
      await core.createNamespacedConfigMap({
        namespace: 'default',
        body: { metadata: { name: `unwatched-${uniqueSuffix()}` } },
      });
      cluster.local.faults.compactHistory();
      cluster.local.faults.dropWatches('close');
      await waitFor(() => lists() > listsBefore, { message: 'a re-list after 410' });
      const since = Date.now();
      await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'after-410' } } });
      await waitFor(() => inbox.for(controller, 'after-410', since).length === 1, {
        message: 'key after 410 re-list',
      });
    });

    it('flushes keys still in the collapse window on stop', async () => {
      const r = await startRelay({
        kubeConfig: cluster.kubeConfig,
        publisher,
        controllers: [configMapController(`${controller}-flush`, ns)],
        collapseMs: 60_000,
        logger,
        port: 0,
        host: '127.0.0.1',
      });
      await r.whenReady();
      // The initial list published every ConfigMap at once (leading edge); an update inside the
      // 60 s window waits for the trailing edge.
      await waitFor(() => inbox.for(`${controller}-flush`, 'existing').length === 1, {
        message: 'leading-edge key of the listed ConfigMap',
      });
      const received = await sum(r.metrics.eventsReceived);
      await core.patchNamespacedConfigMap(
        { namespace: ns, name: 'existing', body: { data: { flushed: 'yes' } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await waitFor(async () => (await sum(r.metrics.eventsReceived)) > received, {
        message: 'MODIFIED event received',
      });
      assert.equal(inbox.for(`${controller}-flush`, 'existing').length, 1, 'held for the trailing edge');
      await r.stop();
      await waitFor(() => inbox.for(`${controller}-flush`, 'existing').length === 2, {
        message: 'flushed key',
      });
    });
  });

  describe('with a custom resource whose CRD appears later', () => {
    const suffix = uniqueSuffix();
    const group = 'relay-test.levelset.dev';
    const plural = `widgets${suffix}`;
    const kind = `Widget${suffix.replace(/^./, (c) => c.toUpperCase())}`.replace(/[^A-Za-z0-9]/g, '');
    const widgets: ResourceType = { group, version: 'v1', plural, kind, namespaced: true };
    const controller = `relay-crd-${suffix}`;
    let ns: string;
    let relay: Relay;
    let inbox: Inbox;
    let crds: ApiextensionsV1Api;
    let custom: CustomObjectsApi;

    before(async () => {
      ns = await cluster.createNamespace('relay-crd');
      inbox = await newInbox();
      crds = cluster.kubeConfig.makeApiClient(ApiextensionsV1Api);
      custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    });

    after(async () => {
      await relay?.stop();
      await inbox?.close();
      await crds?.deleteCustomResourceDefinition({ name: `${plural}.${group}` }).catch(() => {});
    });

    it('is ready without the CRD, and picks the resource up once the CRD exists', async () => {
      relay = await startRelay({
        kubeConfig: cluster.kubeConfig,
        publisher,
        controllers: [
          {
            name: controller,
            primary: widgets,
            rbac: [],
            watches: [{ resource: widgets, namespace: ns, map: (e) => [keyOf(e.object)] }],
            reconcile: async () => undefined,
          },
        ],
        collapseMs: 50,
        logger,
        port: 0,
        host: '127.0.0.1',
        informers: { backoff: { initialMs: 100, maxMs: 400 }, discoveryIntervalMs: 200 },
      });
      await relay.whenReady();
      assert.equal(relay.informers()[0]?.state, 'waiting-for-resource');
      // Ready, but not reported synced: `levelset status` names the informer waiting for its resource.
      const synced = async () =>
        (await relay.metrics.registry.getSingleMetric('levelset_relay_informer_synced')?.get())?.values.map(
          (v) => v.value,
        );
      assert.deepEqual(await synced(), [0]);

      await crds.createCustomResourceDefinition({
        body: {
          metadata: { name: `${plural}.${group}` },
          spec: {
            group,
            scope: 'Namespaced',
            names: { plural, kind, singular: plural.slice(0, -1), listKind: `${kind}List` },
            versions: [
              {
                name: 'v1',
                served: true,
                storage: true,
                subresources: { status: {} },
                schema: {
                  openAPIV3Schema: {
                    type: 'object',
                    properties: {
                      spec: { type: 'object', properties: { size: { type: 'integer' } } },
                      status: { type: 'object', properties: { seen: { type: 'integer' } } },
                    },
                  },
                },
              },
            ],
          },
        },
      });
      await waitFor(() => relay.informers()[0]?.state === 'running', { message: 'informer running' });
      await waitFor(async () => (await synced())?.[0] === 1, { message: 'the informer reported synced' });
      await waitFor(
        async () => {
          try {
            await custom.createNamespacedCustomObject({
              group,
              version: 'v1',
              namespace: ns,
              plural,
              body: { apiVersion: `${group}/v1`, kind, metadata: { name: 'w1' }, spec: { size: 1 } },
            });
            return true;
          } catch {
            return false; // the CRD may not be established yet on a real cluster
          }
        },
        { message: 'custom resource created' },
      );
      await waitFor(() => inbox.for(controller, 'w1').length === 1, {
        message: 'key of the custom resource',
      });
    });

    it('does not publish a status-only update of the primary, but does publish a spec change', async () => {
      const patch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
      await drained(relay.metrics, inbox);
      const filteredBefore = await sum(relay.metrics.eventsFiltered);
      await custom.patchNamespacedCustomObjectStatus(
        { group, version: 'v1', namespace: ns, plural, name: 'w1', body: { status: { seen: 1 } } },
        patch,
      );
      await waitFor(async () => (await sum(relay.metrics.eventsFiltered)) === filteredBefore + 1, {
        message: 'status-only update filtered',
      });
      const since = Date.now();
      await custom.patchNamespacedCustomObject(
        { group, version: 'v1', namespace: ns, plural, name: 'w1', body: { spec: { size: 2 } } },
        patch,
      );
      await waitFor(() => inbox.for(controller, 'w1', since).length === 1, {
        message: 'key after spec change',
      });
      await drained(relay.metrics, inbox);
      assert.equal(
        inbox.for(controller, 'w1').length,
        2,
        'created + spec change; the status update published nothing',
      );
    });

    it('publishes the keys of its objects when the CRD is deleted, and waits for it again', async () => {
      const since = Date.now();
      await crds.deleteCustomResourceDefinition({ name: `${plural}.${group}` });
      await waitFor(() => inbox.for(controller, 'w1', since).length >= 1, {
        message: 'key of the deleted custom resource',
      });
      // kube-apiserver ends the watches of a CRD it stops serving; the local API server leaves them
      // open (the relay would notice at the watch's 30 s inactivity timeout), so end them here.
      cluster.local?.faults.dropWatches('close');
      await waitFor(() => relay.informers()[0]?.state === 'waiting-for-resource', {
        message: 'informer waiting for the CRD again',
      });
      assert.equal(relay.informers()[0]?.objects, 0);
      assert.equal(relay.ready(), true);
    });
  });
});
