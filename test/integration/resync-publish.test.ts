/**
 * The resync's message shape (docs/architecture.md decision 33), against the Pub/Sub emulator: the
 * resync's publisher (RESYNC_PUBLISHING) sends its keys without ordering key, many keys per publish
 * request (counted by a gRPC proxy in front of the emulator), and every key enumerated arrives on
 * the subscription, a valid key message with `reason: "resync"`; its metadata-only LIST still
 * skips a resource that is not served. Conditions only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import { CoreV1Api } from '@kubernetes/client-node';
import { createSubscriber } from '../../cli/pubsub.ts';
import type { Controller, ResourceType } from '../../core/contract/controller.ts';
import { createLogger } from '../../core/log.ts';
import { type KeyMessage, keyMessageSchema } from '../../core/message.ts';
import { createKeyPublisher, emulatorClientOptions } from '../../core/publish.ts';
import { configmaps } from '../../functions/kit/resources.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { RESYNC_PUBLISHING, resyncAll } from '../../functions/runtime/resync.ts';
import { type GrpcProxy, startGrpcProxy } from '../../local/grpc-proxy.ts';
import { type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import { startAll } from '../support/start.ts';
import { waitFor } from '../support/wait.ts';

/** ConfigMaps enumerated: more than one LIST page (500) and more than one publish batch (1000). */
const KEYS = 1200;
const PUBLISH = '/google.pubsub.v1.Publisher/Publish';

describe('the resync publishes its keys batched, without ordering key', () => {
  let cluster: TestCluster;
  let emulator: PubSubEmulator;
  let proxy: GrpcProxy;
  let pubsub: PubSub;
  let ns: string;

  before(async () => {
    [cluster, emulator] = await startAll([startTestCluster(), startPubSubEmulator()]);
    proxy = await startGrpcProxy(emulator.host);
    pubsub = new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.host) });
    ns = await cluster.createNamespace('resync-publish');
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < KEYS) {
          const name = `cm-${next++}`;
          await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
        }
      }),
    );
  });

  after(async () => {
    await pubsub?.close();
    await proxy?.close();
    await emulator?.stop();
    await cluster?.stop();
  });

  /** A controller the resync lists keys for (its primary) and nothing else. */
  const listingOnly = (name: string, primary: ResourceType): Controller => ({
    name,
    primary,
    watches: [],
    rbac: [],
    reconcile: async () => undefined,
  });
  /** The resync's publisher (RESYNC_PUBLISHING) on the resync topic, through `host`. */
  const resyncPublisher = (host: string) =>
    createKeyPublisher({
      projectId: emulator.projectId,
      topic: 'levelset-keys-resync',
      emulatorHost: host,
      ...RESYNC_PUBLISHING,
    });

  it('sends many keys per publish request, none with an ordering key, and every key arrives', async () => {
    const [topic] = await pubsub.createTopic('levelset-keys-resync');
    const [subscription] = await topic.createSubscription('levelset-keys-resync-reconcile');
    const controller = listingOnly('resync-publish', configmaps);
    const publisher = resyncPublisher(proxy.host);
    proxy.counts.clear();
    let report: Awaited<ReturnType<typeof resyncAll>>;
    try {
      report = await resyncAll(
        [controller],
        cluster.kubeConfig,
        publisher,
        createLogger('test', { write: () => {} }),
      );
    } finally {
      await publisher.close();
    }
    assert.equal(report.controllers['resync-publish']?.error, undefined);
    assert.ok(report.published >= KEYS, `${report.published} keys published, at least ${KEYS} expected`);
    const requests = proxy.counts.get(PUBLISH) ?? 0;
    // One publish request per key before (an ordering key each); now up to 1000 keys share one.
    assert.ok(
      requests > 0 && requests <= report.published / 50,
      `${requests} publish requests for ${report.published} keys: expected batches of many keys`,
    );

    // Every key arrives: pulled (and acknowledged) until each of ours is in.
    const subscriber = createSubscriber({
      kind: 'local',
      projectId: emulator.projectId,
      emulatorHost: emulator.host,
      topic: topic.name,
      subscription: subscription.name,
      deadLetterSubscription: subscription.name,
      describe: 'the test emulator',
    });
    const received = new Map<string, { message: KeyMessage; orderingKey: string }>();
    const invalid: string[] = [];
    try {
      await waitFor(
        async () => {
          const pulled = await subscriber.pull(subscription.name, 1000);
          if (pulled.length)
            await subscriber.ack(
              subscription.name,
              pulled.map((m) => m.ackId),
            );
          for (const m of pulled) {
            const parsed = keyMessageSchema.safeParse(JSON.parse(m.data.toString('utf8')));
            if (!parsed.success) invalid.push(m.data.toString('utf8'));
            // Ours only (the namespace also holds kube-root-ca.crt).
            else if (parsed.data.namespace === ns && parsed.data.name.startsWith('cm-'))
              received.set(parsed.data.name, { message: parsed.data, orderingKey: m.orderingKey });
          }
          return received.size === KEYS;
        },
        { timeoutMs: 60_000, message: `every one of the ${KEYS} resync keys on the subscription` },
      );
    } finally {
      await subscriber.close();
    }
    assert.deepEqual(invalid, []);
    for (let i = 0; i < KEYS; i++) {
      const got = received.get(`cm-${i}`);
      assert.ok(got, `cm-${i} arrived`);
      assert.equal(got.orderingKey, '', `cm-${i} carries no ordering key`);
      assert.equal(got.message.reason, 'resync');
      assert.equal(got.message.controller, 'resync-publish');
    }
  });
  it('skips a controller whose resource is not served (the metadata-only LIST answers 404)', async () => {
    const controller = listingOnly('not-served', {
      group: 'absent.levelset.dev',
      version: 'v1',
      kind: 'Absent',
      plural: 'absents',
      namespaced: true,
    });
    const publisher = resyncPublisher(emulator.host);
    try {
      const report = await resyncAll(
        [controller],
        cluster.kubeConfig,
        publisher,
        createLogger('test', { write: () => {} }),
      );
      assert.deepEqual(report.controllers['not-served'], { published: 0, skipped: 'resource not served' });
    } finally {
      await publisher.close();
    }
  });
});
