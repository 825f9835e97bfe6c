/**
 * The Subscription controller against an API server (the local one, or TEST_KUBECONFIG's cluster)
 * and the real Pub/Sub emulator, beside the Topic controller it depends on: DependencyNotReady until
 * its Topic is Ready (and an event of that Topic maps back to it through the spec index), then
 * created in the topic's project; a changed ack deadline is updated; a topic deleted out of band is
 * reported, then the subscription replaced once the topic is back; a Topic's delete waits while the
 * Subscription references it; the finalizer deletes the subscription. Started from the scaffold's test.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { PubSub } from '@google-cloud/pubsub';
import {
  ApiException,
  CustomObjectsApi,
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { emulatorClientOptions } from '../../core/publish.ts';
import { subscriptionController } from '../../functions/controllers/subscription/index.ts';
import { topicController } from '../../functions/controllers/topic/index.ts';
import { CLOUD_OWNER_LABEL } from '../../functions/kit/external.ts';
import { findCondition, parseConditions } from '../../functions/kit/index.ts';
import {
  keysFor,
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
  writesOf,
} from '../../functions/kit/testing.ts';
import { type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);
const controllers = new URL('../../functions/controllers/', import.meta.url);
const group = 'pubsub.levelset.dev';
const version = 'v1alpha1';
const PROJECT = 'levelset-external';

describe('subscription controller', () => {
  let cluster: TestCluster;
  let emulator: PubSubEmulator;
  let pubsub: PubSub;
  let namespace: string;
  let subs: ReconcilerForTest;
  let topics: ReconcilerForTest;
  let custom: CustomObjectsApi;
  // biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
  const get = (plural: string, name: string): Promise<any> =>
    custom.getNamespacedCustomObject({ group, version, plural, namespace, name });
  const create = (kind: 'Topic' | 'Subscription', name: string, spec: object) =>
    custom.createNamespacedCustomObject({
      group,
      version,
      plural: `${kind.toLowerCase()}s`,
      namespace,
      body: { apiVersion: `${group}/${version}`, kind, metadata: { name }, spec },
    });
  const remove = (plural: string, name: string) =>
    custom.deleteNamespacedCustomObject({ group, version, plural, namespace, name });
  const gone = (plural: string, name: string) =>
    get(plural, name).then(
      () => false,
      (err: unknown) => err instanceof ApiException && err.code === 404,
    );
  const ready = (o: { status?: { conditions?: unknown } }) =>
    findCondition(parseConditions(o.status?.conditions), 'Ready');
  const topicId = () => `k8s.${namespace}.orders`;
  const topicName = () => `projects/${PROJECT}/topics/${topicId()}`;
  const reconcileSub = async (name = 'orders-worker') => subs.reconcile({ namespace, name });

  before(async () => {
    emulator = await startPubSubEmulator();
    // The controllers' client reads these at its first use (one client per process).
    process.env.PUBSUB_EMULATOR_HOST = emulator.host;
    delete process.env.LEVELSET_CLOUD_PROJECT;
    pubsub = new PubSub({ projectId: PROJECT, ...emulatorClientOptions(emulator.host) });
    // The dead-letter topic: Pub/Sub refuses a dead-letter policy naming a topic that does not exist.
    await pubsub.createTopic('orders-dead');
    cluster = await startTestCluster();
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const kubectl = (...args: string[]) => exec('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args]);
    for (const folder of ['topic', 'subscription'])
      await kubectl('apply', '-f', new URL(`${folder}/crd.yaml`, controllers).pathname);
    namespace = await cluster.createNamespace('subscription');
    subs = reconcilerForTest(subscriptionController, cluster.kubeconfigPath);
    topics = reconcilerForTest(topicController, cluster.kubeconfigPath);
    await waitFor(
      () =>
        create('Subscription', 'orders-worker', {
          topicRef: { name: 'orders' },
          subscriptionId: 'orders-worker',
          ackDeadlineSeconds: 20,
          messageRetentionDuration: '3600s',
          deadLetter: { topicId: 'orders-dead', maxDeliveryAttempts: 7 },
        }).then(() => true),
      { message: 'the CRDs to be served and the Subscription created' },
    );
  });
  after(async () => {
    // What a test left carries the controllers' finalizers: Subscriptions first (they hold their Topics).
    try {
      if (subs) await subs.deleteAll(namespace);
      if (topics) await topics.deleteAll(namespace);
    } finally {
      await pubsub?.close();
      await cluster?.stop();
      await emulator?.stop();
    }
  });

  it('waits with Ready=False/DependencyNotReady until its Topic exists and is Ready; a Topic event maps to it', async () => {
    const first = await reconcileSub();
    assert.equal(first.error, undefined, first.error?.message);
    let sub = await get('subscriptions', 'orders-worker');
    assert.equal(ready(sub)?.status, 'False');
    assert.equal(ready(sub)?.reason, 'DependencyNotReady');
    assert.equal(ready(sub)?.message, 'Topic orders is not found');
    assert.equal(sub.status.subscription, undefined);

    await create('Topic', 'orders', {});
    await reconcileSub();
    assert.equal(ready(await get('subscriptions', 'orders-worker'))?.message, 'Topic orders is not Ready');
    assert.ok(!(await pubsub.subscription('orders-worker').exists())[0], 'nothing created yet');

    // The relay maps an event of the Topic to the Subscriptions whose `topicRef` index holds it.
    const topic = (await get('topics', 'orders')) as KubernetesObject;
    const indexed = subscriptionController.indexes?.topicRef?.(sub) ?? [];
    assert.deepEqual(indexed, [`${namespace}/orders`]);
    const byIndex = (index: string, value: string) =>
      index === 'topicRef' && indexed.includes(value) ? [{ namespace, name: 'orders-worker' }] : [];
    assert.deepEqual(
      keysFor(subscriptionController, { type: 'MODIFIED', object: topic }, { context: { byIndex } }),
      [{ namespace, name: 'orders-worker' }],
    );

    assert.equal((await topics.reconcile({ namespace, name: 'orders' })).error, undefined);
    const run = await reconcileSub();
    assert.equal(run.error, undefined, run.error?.message);
    sub = await get('subscriptions', 'orders-worker');
    assert.equal(ready(sub)?.status, 'True', ready(sub)?.message);
    assert.equal(sub.status.subscription, `projects/${PROJECT}/subscriptions/orders-worker`);
    const [live] = await pubsub.subscription('orders-worker').getMetadata();
    assert.equal(live.topic, topicName(), "in the topic's project, of its topic");
    assert.equal(live.ackDeadlineSeconds, 20);
    assert.equal(Number(live.messageRetentionDuration?.seconds), 3600);
    assert.equal(live.deadLetterPolicy?.deadLetterTopic, `projects/${PROJECT}/topics/orders-dead`);
    assert.equal(live.deadLetterPolicy?.maxDeliveryAttempts, 7);
    assert.equal(live.pushConfig?.pushEndpoint ?? '', '', 'pull');
    assert.equal(live.labels?.[CLOUD_OWNER_LABEL], sub.metadata.uid);

    // Converged: its GET and its Topic's GET, nothing written.
    const again = await reconcileSub();
    assert.equal(again.requests.length, 2, again.requests.join(', '));
    assert.deepEqual(writesOf(again.requests), [], again.requests.join(', '));
  });

  it('creates a push subscription with its endpoint', async () => {
    await create('Subscription', 'orders-push', {
      topicRef: { name: 'orders' },
      subscriptionId: 'orders-push',
      push: { endpoint: 'https://orders.example.com/push' },
    });
    const run = await reconcileSub('orders-push');
    assert.equal(run.error, undefined, run.error?.message);
    const [live] = await pubsub.subscription('orders-push').getMetadata();
    assert.equal(live.pushConfig?.pushEndpoint, 'https://orders.example.com/push');
    assert.equal(live.ackDeadlineSeconds, 10, "Pub/Sub's default");
    assert.equal(Number(live.messageRetentionDuration?.seconds), 604800, "Pub/Sub's default, 7 days");
  });

  it('updates a changed ack deadline in place', async () => {
    await custom.patchNamespacedCustomObject(
      {
        group,
        version,
        plural: 'subscriptions',
        namespace,
        name: 'orders-worker',
        body: { spec: { ackDeadlineSeconds: 60 } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const run = await reconcileSub();
    assert.equal(run.error, undefined, run.error?.message);
    const [live] = await pubsub.subscription('orders-worker').getMetadata();
    assert.equal(live.ackDeadlineSeconds, 60);
    assert.equal(live.topic, topicName(), 'the same subscription, its topic unchanged');
  });

  it('reports a topic deleted out of band (TopicDeleted), then replaces the subscription once the topic is back', async () => {
    await pubsub.topic(topicId()).delete();
    assert.equal((await pubsub.subscription('orders-worker').getMetadata())[0].topic, '_deleted-topic_');
    const reported = await reconcileSub();
    assert.equal(reported.error?.reason, 'TopicDeleted');
    const condition = ready(await get('subscriptions', 'orders-worker'));
    assert.equal(condition?.status, 'False');
    assert.equal(condition?.reason, 'TopicDeleted');
    assert.ok((await pubsub.subscription('orders-worker').exists())[0], 'kept (with its backlog) meanwhile');

    assert.equal((await topics.reconcile({ namespace, name: 'orders' })).error, undefined, 'topic recreated');
    const replaced = await reconcileSub();
    assert.equal(replaced.error, undefined, replaced.error?.message);
    const [live] = await pubsub.subscription('orders-worker').getMetadata();
    assert.equal(live.topic, topicName());
    assert.equal(live.ackDeadlineSeconds, 60);
    assert.equal(ready(await get('subscriptions', 'orders-worker'))?.status, 'True');
  });

  it('the API server refuses an ack deadline out of 10..600 and a push endpoint that is not https', async () => {
    const err = await create('Subscription', 'invalid', {
      topicRef: { name: 'orders' },
      subscriptionId: 'invalid',
      ackDeadlineSeconds: 5,
      push: { endpoint: 'http://plain.example.com' },
    }).then(
      () => assert.fail('created'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApiException, String(err));
    assert.equal(err.code, 422);
    const causes = (JSON.parse(err.body as string) as { details: { causes: { field: string }[] } }).details
      .causes;
    assert.deepEqual(causes.map((c) => c.field).sort(), ['spec.ackDeadlineSeconds', 'spec.push.endpoint']);
  });

  it("holds the Topic's delete while the Subscription references it; the finalizer deletes the subscription, then the Topic goes", async () => {
    await remove('subscriptions', 'orders-push');
    assert.equal((await reconcileSub('orders-push')).error, undefined);
    await waitFor(() => gone('subscriptions', 'orders-push'), { message: 'orders-push finalized' });

    await remove('topics', 'orders');
    const held = await topics.reconcile({ namespace, name: 'orders' });
    assert.equal(held.error, undefined, held.error?.message);
    const topic = await get('topics', 'orders');
    assert.equal(ready(topic)?.reason, 'StillReferenced');
    assert.match(ready(topic)?.message ?? '', /Subscription .*\/orders-worker/);
    assert.ok((await pubsub.topic(topicId()).exists())[0], 'the topic stays while referenced');

    await remove('subscriptions', 'orders-worker');
    const finalized = await reconcileSub();
    assert.equal(finalized.error, undefined, finalized.error?.message);
    assert.ok(!(await pubsub.subscription('orders-worker').exists())[0], 'subscription deleted');
    await waitFor(() => gone('subscriptions', 'orders-worker'), {
      message: 'the Subscription gone once finalized',
    });

    assert.equal((await topics.reconcile({ namespace, name: 'orders' })).error, undefined);
    assert.ok(!(await pubsub.topic(topicId()).exists())[0], 'topic deleted');
    await waitFor(() => gone('topics', 'orders'), { message: 'the Topic gone once nothing references it' });
  });
});
