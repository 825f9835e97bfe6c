/**
 * The topic controller against an API server (the local one, or TEST_KUBECONFIG's cluster) and the
 * real Pub/Sub emulator (in the controller's own project): its CRD and example applied with kubectl,
 * one reconcile creates the topic and its subscription (the finalizer first), the next writes
 * nothing; a topic deleted out of band is recreated; a foreign topic is never adopted; deleting the
 * Topic deletes what it created, and only that. Started from the scaffold's test.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { PubSub } from '@google-cloud/pubsub';
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { emulatorClientOptions } from '../../core/publish.ts';
import { topicController } from '../../functions/controllers/topic/index.ts';
import { CLOUD_OWNER_LABEL } from '../../functions/kit/external.ts';
import { finalizerName } from '../../functions/kit/finalizers.ts';
import { findCondition, parseConditions } from '../../functions/kit/index.ts';
import {
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
  writesOf,
} from '../../functions/kit/testing.ts';
import { type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);
const folder = new URL('../../functions/controllers/topic/', import.meta.url);
const resource = { group: 'pubsub.levelset.dev', version: 'v1alpha1', plural: 'topics' };
const PROJECT = 'levelset-external';

describe('topic controller', () => {
  let cluster: TestCluster;
  let emulator: PubSubEmulator;
  let pubsub: PubSub;
  let namespace: string;
  let t: ReconcilerForTest;
  let custom: CustomObjectsApi;
  // biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
  const get = (name = 'example-topic'): Promise<any> =>
    custom.getNamespacedCustomObject({ ...resource, namespace, name });
  const create = (name: string, spec: object) =>
    custom.createNamespacedCustomObject({
      ...resource,
      namespace,
      body: { apiVersion: 'pubsub.levelset.dev/v1alpha1', kind: 'Topic', metadata: { name }, spec },
    });
  const exists = async (r: { exists(): Promise<[boolean]> }) => (await r.exists())[0];
  const ready = (o: { status?: { conditions?: unknown } }) =>
    findCondition(parseConditions(o.status?.conditions), 'Ready');

  before(async () => {
    emulator = await startPubSubEmulator();
    // The controller's client reads these at its first use (one client per process).
    process.env.PUBSUB_EMULATOR_HOST = emulator.host;
    delete process.env.LEVELSET_CLOUD_PROJECT;
    pubsub = new PubSub({ projectId: PROJECT, ...emulatorClientOptions(emulator.host) });
    cluster = await startTestCluster();
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const kubectl = (...args: string[]) => exec('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args]);
    await kubectl('apply', '-f', new URL('crd.yaml', folder).pathname);
    namespace = await cluster.createNamespace('topic');
    await waitFor(
      () =>
        kubectl('apply', '-n', namespace, '-f', new URL('example.yaml', folder).pathname).then(() => true),
      { message: 'the CRD to be served and the example applied' },
    );
    t = reconcilerForTest(topicController, cluster.kubeconfigPath);
  });
  after(async () => {
    // What a test left carries the controller's finalizer: no controller runs after this file.
    try {
      if (t) await t.deleteAll(namespace);
    } finally {
      await pubsub?.close();
      await cluster?.stop();
      await emulator?.stop();
    }
  });

  it('adds the finalizer, creates topic and subscription labelled as its own; then a no-op writes nothing', async () => {
    const first = await t.reconcile({ namespace, name: 'example-topic' });
    assert.equal(first.error, undefined, first.error?.message);
    const object = await get();
    assert.deepEqual(object.metadata.finalizers, [finalizerName('topic')]);
    const topicId = `k8s.${namespace}.example-topic`;
    assert.equal(object.status.topic, `projects/${PROJECT}/topics/${topicId}`);
    assert.deepEqual(object.status.subscriptions, [`projects/${PROJECT}/subscriptions/example-topic-worker`]);
    const [topic] = await pubsub.topic(topicId).getMetadata();
    assert.deepEqual(topic.labels, { team: 'demo', [CLOUD_OWNER_LABEL]: object.metadata.uid });
    assert.equal(Number(topic.messageRetentionDuration?.seconds), 86400);
    const [sub] = await pubsub.subscription('example-topic-worker').getMetadata();
    assert.equal(sub.ackDeadlineSeconds, 30);
    assert.equal(sub.topic, `projects/${PROJECT}/topics/${topicId}`);
    assert.equal(ready(object)?.status, 'True');
    assert.equal(ready(object)?.observedGeneration, object.metadata.generation);
    assert.ok(
      !(await exists(
        new PubSub({ projectId: 'local-project', ...emulatorClientOptions(emulator.host) }).topic(topicId),
      )),
      'never in the keys project',
    );
    const again = await t.reconcile({ namespace, name: 'example-topic' });
    // Converged: one request, a read (the Topic), nothing written.
    assert.equal(again.requests.length, 1, again.requests.join(', '));
    assert.deepEqual(writesOf(again.requests), [], again.requests.join(', '));
    assert.equal(
      (await get()).metadata.resourceVersion,
      object.metadata.resourceVersion,
      'status not rewritten',
    );
  });

  it('recreates a topic deleted out of band', async () => {
    const topicId = `k8s.${namespace}.example-topic`;
    await pubsub.topic(topicId).delete();
    const run = await t.reconcile({ namespace, name: 'example-topic' });
    assert.equal(run.error, undefined, run.error?.message);
    assert.ok(await exists(pubsub.topic(topicId)), 'recreated');
    const [sub] = await pubsub.subscription('example-topic-worker').getMetadata();
    assert.equal(
      sub.topic,
      `projects/${PROJECT}/topics/${topicId}`,
      'its subscription replaced (it was detached)',
    );
  });

  it('never adopts a topic it did not create: Ready=False/ResourceExists and a Warning Event', async () => {
    const [foreign] = await pubsub.createTopic({ name: 'someone-elses', labels: { team: 'other' } });
    await create('wants-foreign', { topicId: 'someone-elses' });
    const run = await t.reconcile({ namespace, name: 'wants-foreign' });
    assert.equal(run.error?.reason, 'ResourceExists');
    assert.equal(ready(await get('wants-foreign'))?.reason, 'ResourceExists');
    const events = await cluster.kubeConfig.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace });
    const event = events.items.find(
      (e) => e.involvedObject.name === 'wants-foreign' && e.reason === 'ResourceExists',
    );
    assert.equal(event?.type, 'Warning');
    assert.equal(
      event?.message,
      `Resource "projects/${PROJECT}/topics/someone-elses" already exists and is not managed by Topic`,
    );
    assert.deepEqual((await foreign.getMetadata())[0].labels, { team: 'other' }, 'untouched');
    // Deleting the Topic leaves the foreign topic alone.
    await custom.deleteNamespacedCustomObject({ ...resource, namespace, name: 'wants-foreign' });
    await t.reconcile({ namespace, name: 'wants-foreign' });
    assert.ok(await exists(foreign), 'a topic it did not create is never deleted');
  });

  it('sorts a Pub/Sub INVALID_ARGUMENT: Ready=False/InvalidArgument with the API message, a Warning Event', async () => {
    // The emulator answers an update of a topic's labels with INVALID_ARGUMENT (Pub/Sub itself
    // accepts it): a real gRPC error to sort.
    await create('relabelled', { labels: { v: 'one' } });
    assert.equal((await t.reconcile({ namespace, name: 'relabelled' })).error, undefined);
    await custom.patchNamespacedCustomObject(
      { ...resource, namespace, name: 'relabelled', body: { spec: { labels: { v: 'two' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const run = await t.reconcile({ namespace, name: 'relabelled' });
    assert.equal(run.error?.reason, 'InvalidArgument');
    const condition = ready(await get('relabelled'));
    assert.equal(condition?.status, 'False');
    assert.match(
      condition?.message ?? '',
      /^update projects\/levelset-external\/topics\/k8s\..*relabelled: .*update_mask/,
    );
  });

  it("the API server refuses an invalid spec with 422 naming each field (the CRD's schema, generated from api.ts)", async () => {
    // As `kubectl create` does: a POST of the object. kube-apiserver validates a custom resource
    // against its CRD's openAPIV3Schema and answers 422 Invalid with one cause per field.
    const err = await create('invalid', {
      subscriptions: [{ id: 'bad id!' }, { id: 'fine', ackDeadlineSeconds: -5 }],
    }).then(
      () => assert.fail('created'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApiException, String(err));
    assert.equal(err.code, 422);
    const status = JSON.parse(err.body as string) as {
      reason: string;
      message: string;
      details: { causes: { field: string }[] };
    };
    assert.equal(status.reason, 'Invalid');
    assert.deepEqual(status.details.causes.map((c) => c.field).sort(), [
      'spec.subscriptions[0].id',
      'spec.subscriptions[1].ackDeadlineSeconds',
    ]);
    assert.match(
      status.message,
      /spec\.subscriptions\[1\]\.ackDeadlineSeconds in body should be greater than or equal to 10/,
    );
    // Nothing was stored: no reconcile ever sees it.
    await assert.rejects(get('invalid'), (e: unknown) => e instanceof ApiException && e.code === 404);
  });

  it('on delete removes the subscriptions and the topic, then lets the object go', async () => {
    const topicId = `k8s.${namespace}.example-topic`;
    await custom.deleteNamespacedCustomObject({ ...resource, namespace, name: 'example-topic' });
    const run = await t.reconcile({ namespace, name: 'example-topic' });
    assert.equal(run.error, undefined, run.error?.message);
    assert.ok(!(await exists(pubsub.subscription('example-topic-worker'))), 'subscription gone');
    assert.ok(!(await exists(pubsub.topic(topicId))), 'topic gone');
    await waitFor(
      () =>
        get().then(
          () => false,
          (err: unknown) => err instanceof ApiException && err.code === 404,
        ),
      { message: 'the Topic gone once finalized' },
    );
  });
});
