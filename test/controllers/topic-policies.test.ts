/**
 * The kit's external-resource policies, proven on the Topic controller against an API server (the
 * local one, or TEST_KUBECONFIG's cluster) and the real Pub/Sub emulator, whose every request goes
 * through the shared gRPC proxy (local/grpc-proxy.ts): counted by method, and answered with an
 * injected RESOURCE_EXHAUSTED where a test asks. One OpenTelemetry SDK is registered for this file's
 * process (the in-memory exporter), to see the span of each Google Cloud call.
 *
 * The emulator refuses every update of labels (`labels is not a known Topic field`; Pub/Sub itself
 * accepts it), so what adopting (mark) and abandoning (unmark) write is checked at the gRPC boundary:
 * the request is sent, and the emulator's refusal is reported as Pub/Sub's would be.
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
import { topicController } from '../../functions/controllers/topic/index.ts';
import { driftCorrected, recordDrift } from '../../functions/drift.ts';
import {
  ADOPTION_POLICY,
  CLOUD_OWNER_LABEL,
  DELETION_POLICY,
  EMULATOR_PROJECT,
  findCondition,
  parseConditions,
  policiesOf,
  RECONCILE_INTERVAL,
} from '../../functions/kit/index.ts';
import { type ReconcilerForTest, reconcilerForTest } from '../../functions/kit/testing.ts';
import type { EnqueueReason } from '../../functions/message.ts';
import { emulatorClientOptions } from '../../functions/publish.ts';
import { type GrpcProxy, startGrpcProxy } from '../../local/grpc-proxy.ts';
import { type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import { repoRoot } from '../../local/service.ts';
import { startTestCluster, type TestCluster } from '../support/cluster.ts';
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
  let pubsub: PubSub;
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
  /** The Pub/Sub methods called since `counts.clear()`, e.g. `['GetTopic']`. */
  const called = () => [...proxy.counts.keys()].map((p) => p.split('/').at(-1));

  before(async () => {
    emulator = await startPubSubEmulator();
    proxy = await startGrpcProxy(emulator.host);
    // The controller's client (one per process) reads these at its first use: through the proxy.
    process.env.LEVELSET_CLOUD_EMULATOR_HOST = proxy.host;
    delete process.env.LEVELSET_CLOUD_PROJECT;
    pubsub = new PubSub({ projectId: EMULATOR_PROJECT, ...emulatorClientOptions(emulator.host) });
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

  it('adopt: marks an unmarked topic (the UpdateTopic of its labels, which the emulator refuses)', async () => {
    await pubsub.createTopic({ name: topicId('orphan'), labels: { team: 'other' } });
    await create('orphan', { [ADOPTION_POLICY]: 'adopt' });
    proxy.counts.clear();
    const run = await t.reconcile({ namespace, name: 'orphan' });
    assert.deepEqual(called(), ['GetTopic', 'UpdateTopic'], 'read, then marked');
    // On Pub/Sub the topic is now the Topic's; the emulator answers the label update INVALID_ARGUMENT.
    assert.equal(run.error?.reason, 'InvalidArgument');
    assert.match(run.error?.message ?? '', new RegExp(`^update ${topicName('orphan')}: .*labels`));
    // Under `never`, the same topic is refused without a write.
    await annotate('orphan', { [ADOPTION_POLICY]: 'never' });
    proxy.counts.clear();
    assert.equal((await t.reconcile({ namespace, name: 'orphan' })).error?.reason, 'ResourceExists');
    assert.deepEqual(called(), ['GetTopic']);
  });

  it('abandon: the finalizer leaves the topic and removes the mark (a label update); a policy changed while deleting takes effect', async () => {
    await create('kept', { [DELETION_POLICY]: 'abandon' });
    assert.equal((await t.reconcile({ namespace, name: 'kept' })).error, undefined);
    assert.ok(await exists('kept'));
    await remove('kept');
    proxy.counts.clear();
    const run = await t.reconcile({ namespace, name: 'kept' });
    assert.deepEqual(called(), ['GetTopic', 'UpdateTopic'], 'the mark removed, nothing deleted');
    assert.equal(
      run.error?.reason,
      'InvalidArgument',
      'the emulator refuses the label update; the finalizer stays',
    );
    assert.ok((await get('kept')).metadata.deletionTimestamp, 'held by the finalizer');
    // The policy changed on the object being deleted: the next reconcile deletes the topic.
    await annotate('kept', { [DELETION_POLICY]: 'delete' });
    proxy.counts.clear();
    assert.equal((await t.reconcile({ namespace, name: 'kept' })).error, undefined);
    assert.deepEqual(called(), ['GetTopic', 'DeleteTopic']);
    assert.ok(!(await exists('kept')), 'deleted');
    await waitFor(() => gone('kept'), { message: 'the Topic gone' });
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

  it('RESOURCE_EXHAUSTED is a requeue after per-key exponential backoff (5 ms, 10 ms…), and the key converges when it clears', async () => {
    await create('quota', {});
    proxy.fail({ path: /\/GetTopic$/, code: 8, message: 'quota exceeded by the test’s proxy', times: 2 });
    const first = await t.reconcile({ namespace, name: 'quota' });
    assert.equal(first.error, undefined, 'not terminal');
    assert.equal(first.result?.requeueAfterMs, 5);
    assert.equal((await t.reconcile({ namespace, name: 'quota' })).result?.requeueAfterMs, 10);
    const cleared = await t.reconcile({ namespace, name: 'quota' });
    assert.equal(cleared.error, undefined);
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
