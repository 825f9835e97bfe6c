/**
 * The kit's external-resource policies, proven on the Topic controller against an API server (the
 * local one, or TEST_KUBECONFIG's cluster) and the real Pub/Sub emulator, whose every request goes
 * through the shared gRPC proxy (local/grpc-proxy.ts): counted by method, and answered with an
 * injected RESOURCE_EXHAUSTED where a test asks. One OpenTelemetry SDK is registered for this file's
 * process (the in-memory exporter), to see the span of each Google Cloud call.
 *
 * The emulator refuses every update of labels (`labels is not a known Topic field`; Pub/Sub itself
 * accepts it), so the proxy answers them with its model of Pub/Sub's UpdateTopic (`topicLabels`):
 * adopting (mark) and abandoning (unmark) are checked to their end, the topic's labels read back
 * through the proxy.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { PubSub } from '@google-cloud/pubsub';
import { ApiException, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { pino } from 'pino';
import type { EnqueueReason } from '../../core/message.ts';
import { emulatorClientOptions } from '../../core/publish.ts';
import { topicController } from '../../functions/controllers/topic/index.ts';
import {
  ADOPTION_POLICY,
  CLOUD_OWNER_LABEL,
  DELETION_POLICY,
  policiesOf,
  RECONCILE_INTERVAL,
} from '../../functions/kit/external.ts';
import { EMULATOR_PROJECT } from '../../functions/kit/google-cloud.ts';
import { findCondition, parseConditions } from '../../functions/kit/index.ts';
import {
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
} from '../../functions/kit/testing.ts';
import { driftCorrected, recordDrift } from '../../functions/runtime/drift.ts';
import { type GrpcProxy, startGrpcProxy } from '../../local/grpc-proxy.ts';
import { type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import { repoRoot } from '../../local/service.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);
const resource = { group: 'pubsub.levelset.dev', version: 'v1alpha1', plural: 'topics' };
const PUBLISHER = '/google.pubsub.v1.Publisher/';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const spans = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
provider.register();

describe('topic controller: the kit policies', () => {
  let cluster: TestCluster;
  let emulator: PubSubEmulator;
  let proxy: GrpcProxy;
  /** The emulator, past the proxy (not counted). */
  let pubsub: PubSub;
  /** Through the proxy: a topic's labels as Pub/Sub answers them (the model's, once set). */
  let viaProxy: PubSub;
  let namespace: string;
  let t: ReconcilerForTest;
  let custom: CustomObjectsApi;
  // biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
  const get = (name: string): Promise<any> =>
    custom.getNamespacedCustomObject({ ...resource, namespace, name });
  const create = (name: string, annotations: Record<string, string>, spec: object = {}) =>
    custom.createNamespacedCustomObject({
      ...resource,
      namespace,
      body: {
        apiVersion: 'pubsub.levelset.dev/v1alpha1',
        kind: 'Topic',
        metadata: { name, annotations },
        spec,
      },
    });
  const annotate = (name: string, annotations: Record<string, string>) =>
    custom.patchNamespacedCustomObject(
      { ...resource, namespace, name, body: { metadata: { annotations } } },
      mergePatch,
    );
  const remove = (name: string) => custom.deleteNamespacedCustomObject({ ...resource, namespace, name });
  const gone = (name: string) =>
    get(name).then(
      () => false,
      (err: unknown) => err instanceof ApiException && err.code === 404,
    );
  const ready = (o: { status?: { conditions?: unknown } }) =>
    findCondition(parseConditions(o.status?.conditions), 'Ready');
  const topicId = (name: string) => `k8s.${namespace}.${name}`;
  const topicName = (name: string) => `projects/${EMULATOR_PROJECT}/topics/${topicId(name)}`;
  const exists = async (name: string) => (await pubsub.topic(topicId(name)).exists())[0];
  /** Its topic's labels, read through the proxy (counted). */
  const labelsOf = async (name: string) => (await viaProxy.topic(topicId(name)).getMetadata())[0].labels;
  /** The Pub/Sub methods called since `counts.clear()`, e.g. `['GetTopic']`. */
  const called = () => [...proxy.counts.keys()].map((p) => p.split('/').at(-1));

  before(async () => {
    emulator = await startPubSubEmulator();
    proxy = await startGrpcProxy(emulator.host, { topicLabels: true });
    // The controller's client (one per process) reads these at its first use: through the proxy.
    process.env.LEVELSET_CLOUD_EMULATOR_HOST = proxy.host;
    delete process.env.LEVELSET_CLOUD_PROJECT;
    pubsub = new PubSub({ projectId: EMULATOR_PROJECT, ...emulatorClientOptions(emulator.host) });
    viaProxy = new PubSub({ projectId: EMULATOR_PROJECT, ...emulatorClientOptions(proxy.host) });
    cluster = await startTestCluster();
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    namespace = await cluster.createNamespace('topic-policy');
    await cluster.applyCrd(join(repoRoot, 'functions/controllers/topic/crd.yaml'), resource, namespace);
    t = reconcilerForTest(topicController, cluster.kubeconfigPath);
  });
  after(async () => {
    // What a test left carries the controller's finalizer: no controller runs after this file.
    try {
      if (t) await t.deleteAll(namespace);
    } finally {
      delete process.env.LEVELSET_CLOUD_EMULATOR_HOST;
      await pubsub?.close();
      await viaProxy?.close();
      await cluster?.stop();
      await proxy?.close();
      await emulator?.stop();
      await provider.shutdown();
    }
  });

  it('policies.yaml (the guide’s example) applies, and each object gets the policies it names', async () => {
    await exec('kubectl', [
      '--kubeconfig',
      cluster.kubeconfigPath,
      'apply',
      '-n',
      namespace,
      '-f',
      join(repoRoot, 'functions/controllers/topic/policies.yaml'),
    ]);
    const of = async (name: string) => policiesOf(await get(name));
    assert.deepEqual(await of('audit-events'), {
      deletion: 'abandon',
      adoption: 'never',
      intervalMs: 600_000,
    });
    assert.deepEqual(await of('legacy-orders'), { deletion: 'delete', adoption: 'adopt', intervalMs: 0 });
    assert.deepEqual(await of('billing-export'), { deletion: 'delete', adoption: 'observe', intervalMs: 0 });
  });

  it('observe: reads the topic into status, never writes it, never deletes it (counted requests)', async () => {
    await pubsub.createTopic({ name: topicId('watched'), labels: { team: 'other' } });
    await create('watched', { [ADOPTION_POLICY]: 'observe' });
    proxy.counts.clear();
    for (let i = 0; i < 2; i++)
      assert.equal((await t.reconcile({ namespace, name: 'watched' })).error, undefined);
    const object = await get('watched');
    assert.equal(object.status.topic, topicName('watched'));
    assert.deepEqual([ready(object)?.status, ready(object)?.reason], ['True', 'Observed']);
    await remove('watched');
    await t.reconcile({ namespace, name: 'watched' });
    await waitFor(() => gone('watched'), { message: 'the observing Topic gone' });
    assert.deepEqual(called(), ['GetTopic'], 'reads only');
    assert.equal(
      proxy.counts.get(`${PUBLISHER}GetTopic`),
      2,
      'one read per reconcile, none at the finalizer',
    );
    const [live] = await pubsub.topic(topicId('watched')).getMetadata();
    assert.deepEqual(live.labels, { team: 'other' }, 'untouched');
  });

  it('observe of a topic that does not exist: Ready=False/NotFound, nothing created', async () => {
    await create('absent', { [ADOPTION_POLICY]: 'observe' });
    proxy.counts.clear();
    assert.equal((await t.reconcile({ namespace, name: 'absent' })).error, undefined);
    assert.deepEqual(
      [ready(await get('absent'))?.status, ready(await get('absent'))?.reason],
      ['False', 'NotFound'],
    );
    assert.deepEqual(called(), ['GetTopic']);
    assert.ok(!(await exists('absent')));
  });

  it('never adopts a topic marked by another object, whatever the policy: Ready=False/ManagementConflict naming it', async () => {
    await pubsub.createTopic({
      name: topicId('held'),
      labels: { [CLOUD_OWNER_LABEL]: 'uid-of-another-object' },
    });
    await create('held', { [ADOPTION_POLICY]: 'adopt' });
    proxy.counts.clear();
    const run = await t.reconcile({ namespace, name: 'held' });
    assert.equal(run.error?.reason, 'ManagementConflict');
    const condition = ready(await get('held'));
    assert.equal(condition?.reason, 'ManagementConflict');
    assert.match(condition?.message ?? '', new RegExp(`${CLOUD_OWNER_LABEL}=uid-of-another-object`));
    assert.deepEqual(called(), ['GetTopic'], 'nothing written');
    await remove('held');
    await t.reconcile({ namespace, name: 'held' });
    assert.ok(await exists('held'), 'another object’s topic is never deleted');
  });

  it('adopt: marks an unmarked topic (its labels: the spec’s and the uid), Ready=True, then manages it; under never it is refused', async () => {
    await pubsub.createTopic({ name: topicId('orphan'), labels: { team: 'other' } });
    await create('orphan', { [ADOPTION_POLICY]: 'never' }, { labels: { team: 'mine' } });
    proxy.counts.clear();
    assert.equal((await t.reconcile({ namespace, name: 'orphan' })).error?.reason, 'ResourceExists');
    assert.deepEqual(called(), ['GetTopic'], 'under never: refused, nothing written');
    await annotate('orphan', { [ADOPTION_POLICY]: 'adopt' });
    proxy.counts.clear();
    proxy.modelled.clear();
    assert.equal((await t.reconcile({ namespace, name: 'orphan' })).error, undefined);
    assert.deepEqual(called(), ['GetTopic', 'UpdateTopic'], 'read, then marked');
    assert.equal(proxy.modelled.get(`${PUBLISHER}UpdateTopic`), 1, "the mark answered by the proxy's model");
    const { uid } = (await get('orphan')).metadata;
    assert.deepEqual(await labelsOf('orphan'), { team: 'mine', [CLOUD_OWNER_LABEL]: uid });
    // The Topic's now: read, found converged, Ready; deleted with its Topic (the default policy).
    proxy.counts.clear();
    assert.equal((await t.reconcile({ namespace, name: 'orphan' })).error, undefined);
    assert.deepEqual(called(), ['GetTopic'], 'converged');
    assert.deepEqual(
      [ready(await get('orphan'))?.status, ready(await get('orphan'))?.reason],
      ['True', 'Available'],
    );
    await remove('orphan');
    proxy.counts.clear();
    assert.equal((await t.reconcile({ namespace, name: 'orphan' })).error, undefined);
    assert.deepEqual(called(), ['GetTopic', 'DeleteTopic']);
    assert.ok(!(await exists('orphan')), 'deleted');
    await waitFor(() => gone('orphan'), { message: 'the Topic gone' });
  });

  it('abandon: the finalizer leaves the topic with the owner mark removed (a label update), and the object goes', async () => {
    await create('kept', { [DELETION_POLICY]: 'abandon' }, { labels: { team: 'kept' } });
    assert.equal((await t.reconcile({ namespace, name: 'kept' })).error, undefined);
    const { uid } = (await get('kept')).metadata;
    assert.deepEqual(await labelsOf('kept'), { team: 'kept', [CLOUD_OWNER_LABEL]: uid }, 'marked');
    await remove('kept');
    proxy.counts.clear();
    assert.equal((await t.reconcile({ namespace, name: 'kept' })).error, undefined);
    assert.deepEqual(called(), ['GetTopic', 'UpdateTopic'], 'the mark removed, nothing deleted');
    await waitFor(() => gone('kept'), { message: 'the Topic gone' });
    assert.ok(await exists('kept'), 'the topic left in place');
    assert.deepEqual(await labelsOf('kept'), { team: 'kept' }, 'the owner mark removed, the rest kept');
  });

  it('a deletion policy changed on an object being deleted takes effect: an abandon held by a refused unmark becomes a delete', async () => {
    await create('abandoning', { [DELETION_POLICY]: 'abandon' });
    assert.equal((await t.reconcile({ namespace, name: 'abandoning' })).error, undefined);
    await remove('abandoning');
    // The unmark refused, as Pub/Sub refuses an identity without pubsub.topics.update.
    proxy.fail({
      path: /\/UpdateTopic$/,
      code: 7,
      message: 'permission denied by the test’s proxy',
      times: 1,
    });
    const run = await t.reconcile({ namespace, name: 'abandoning' });
    assert.equal(run.error?.reason, 'PermissionDenied');
    assert.ok((await get('abandoning')).metadata.deletionTimestamp, 'held by the finalizer');
    await annotate('abandoning', { [DELETION_POLICY]: 'delete' });
    proxy.counts.clear();
    assert.equal((await t.reconcile({ namespace, name: 'abandoning' })).error, undefined);
    assert.deepEqual(called(), ['GetTopic', 'DeleteTopic']);
    assert.ok(!(await exists('abandoning')), 'deleted');
    await waitFor(() => gone('abandoning'), { message: 'the Topic gone' });
  });

  it('reconcile-interval: 10m requeues after 600000 ms; 0 and none ask for no requeue (only events and the resync)', async () => {
    await create('periodic', { [RECONCILE_INTERVAL]: '10m' });
    assert.equal((await t.reconcile({ namespace, name: 'periodic' })).result?.requeueAfterMs, 600_000);
    await annotate('periodic', { [RECONCILE_INTERVAL]: '0' });
    const quiet = await t.reconcile({ namespace, name: 'periodic' });
    assert.equal(quiet.error, undefined);
    assert.equal(quiet.result?.requeueAfterMs, undefined, 'no periodic call');
    await annotate('periodic', { [RECONCILE_INTERVAL]: 'ten minutes' });
    assert.equal((await t.reconcile({ namespace, name: 'periodic' })).error?.reason, 'InvalidPolicy');
  });

  it('RESOURCE_EXHAUSTED is answered rateLimited, naming no delay (the runtime backs off), and the key converges when it clears', async () => {
    await create('quota', {});
    proxy.fail({ path: /\/GetTopic$/, code: 8, message: 'quota exceeded by the test’s proxy', times: 2 });
    const first = await t.reconcile({ namespace, name: 'quota' });
    assert.equal(first.error, undefined, 'not terminal');
    assert.deepEqual(first.result, { rateLimited: {} });
    assert.deepEqual((await t.reconcile({ namespace, name: 'quota' })).result, { rateLimited: {} });
    const cleared = await t.reconcile({ namespace, name: 'quota' });
    assert.equal(cleared.error, undefined);
    assert.equal(cleared.result?.rateLimited, undefined);
    assert.equal(cleared.result?.requeueAfterMs, undefined);
    assert.equal(ready(await get('quota'))?.status, 'True');
    assert.ok(await exists('quota'));
  });

  it('a topic deleted outside Kubernetes is recreated and counted as drift, by the source that brought the key', async () => {
    await create('drifted', {});
    const converged = await t.reconcile({ namespace, name: 'drifted' });
    assert.equal(converged.result?.driftCorrected, undefined, 'creating it is not drift');
    await pubsub.topic(topicId('drifted')).delete();
    const run = await t.reconcile({ namespace, name: 'drifted' });
    assert.equal(run.result?.driftCorrected, true);
    assert.ok(await exists('drifted'), 'recreated');
    const count = async (source: string) =>
      (await driftCorrected.get()).values.find(
        (v) => v.labels.controller === 'topic' && v.labels.source === source,
      )?.value ?? 0;
    const before = await count('audit-log');
    // `audit-log` is the reason of keys published from Cloud Audit Logs (the drift part of issue 32).
    assert.ok(recordDrift('topic', 'audit-log' as EnqueueReason, run.result, pino({ level: 'silent' })));
    assert.equal(await count('audit-log'), before + 1);
    assert.equal(
      (await t.reconcile({ namespace, name: 'drifted' })).result?.driftCorrected,
      undefined,
      'converged',
    );
  });

  it('a span per Google Cloud call, with the API and the resource name', async () => {
    spans.reset();
    await create('traced', {});
    assert.equal((await t.reconcile({ namespace, name: 'traced' })).error, undefined);
    const external = spans
      .getFinishedSpans()
      .filter((s) => s.name.startsWith('external '))
      .map((s) => [
        s.name,
        s.attributes['levelset.external.service'],
        s.attributes['levelset.external.resource'],
      ]);
    assert.deepEqual(external, [
      ['external observe', 'pubsub.googleapis.com', topicName('traced')],
      ['external create', 'pubsub.googleapis.com', topicName('traced')],
    ]);
  });

  it('levelset plan reports the would-create of the topic as a planned change, writes nothing there, exits 1', async () => {
    await create('planned', {});
    const stateDir = mkdtempSync(join(tmpdir(), 'levelset-state-'));
    const bin = join(
      repoRoot,
      (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> })
        .bin.levelset ?? 'missing',
    );
    proxy.counts.clear();
    const run = await exec(process.execPath, [bin, 'plan', 'topic', `${namespace}/planned`, '-o', 'json'], {
      cwd: repoRoot,
      env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath, LEVELSET_STATE_DIR: stateDir },
    }).then(
      (r) => ({ code: 0, stdout: r.stdout }),
      (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
    );
    rmSync(stateDir, { recursive: true, force: true });
    assert.equal(run.code, 1, run.stdout);
    const plan = JSON.parse(run.stdout) as {
      changes: { action: string; object: string; external?: { action: string } }[];
    };
    assert.deepEqual(
      plan.changes.filter((c) => c.external).map((c) => [c.action, c.object, c.external?.action]),
      [['create', topicName('planned'), 'create']],
    );
    assert.deepEqual(called(), ['GetTopic'], 'only read');
    assert.ok(!(await exists('planned')), 'nothing created');
  });
});
