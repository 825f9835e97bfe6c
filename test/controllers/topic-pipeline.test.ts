/**
 * The Topic controller end to end, in both modes, on real parts: relay → Pub/Sub emulator →
 * `reconcile` under functions-framework (or the in-process manager) → Kubernetes API, and the
 * Topic's topics in the same emulator, in the controller's own project (`levelset-external`, never the
 * keys project). Observes only through the Kubernetes API, the emulator and the logs: the finalizer
 * is on before anything is created in Pub/Sub; delete → subscriptions and topic gone → object gone,
 * also when the functions were down at the delete; a topic deleted out of band is recreated; a
 * foreign topic is never adopted; Google Cloud errors are sorted: INVALID_ARGUMENT (the emulator's)
 * and PERMISSION_DENIED (injected by the shared gRPC proxy, local/grpc-proxy.ts, which the
 * controller's Pub/Sub traffic goes through) answered once, not retried; RESOURCE_EXHAUSTED requeued
 * after per-key backoff (acknowledged, never 5xx) until it clears, and after the delay its
 * google.rpc.RetryInfo asks when it carries one; DEADLINE_EXCEEDED and UNAVAILABLE retried until they pass.
 * The kit's policies, with the controller's Pub/Sub requests kept by the proxy and decoded with
 * Pub/Sub's protos, and label updates of topics answered by the proxy's model of them (the emulator
 * refuses them, Pub/Sub accepts them: `startGrpcProxy`'s `topicLabels`): `observe` writes nothing;
 * `adopt` refuses a topic marked by another object, and takes an unmarked one (marked, Ready, then
 * deleted with its Topic); `abandon` leaves the topic with the owner mark removed and lets the object
 * go, and a deletion policy changed while deleting takes effect; `reconcile-interval: 0` makes no
 * call while another Topic's interval brings it back twice.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import protos from '@google-cloud/pubsub/build/protos/protos.js';
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { LABELS } from '../../core/log.ts';
import { emulatorClientOptions } from '../../core/publish.ts';
import {
  ADOPTION_POLICY,
  CLOUD_OWNER_LABEL,
  DELETION_POLICY,
  RECONCILE_INTERVAL,
} from '../../functions/kit/external.ts';
import { finalizerName } from '../../functions/kit/finalizers.ts';
import { findCondition, parseConditions } from '../../functions/kit/index.ts';
import { type GrpcProxy, type RecordedRequest, startGrpcProxy } from '../../local/grpc-proxy.ts';
import { type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import type { LogLine } from '../../local/service.ts';
import type { StackMode } from '../../local/stack.ts';
import { stackFaults } from '../../local/stack-faults.ts';
import {
  outcomeLines,
  PIPELINE_MODES,
  type Pipeline,
  reconcilesOwed,
  serverlessStack,
  startPipeline,
} from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const root = new URL('../../', import.meta.url);
const CRD = new URL('functions/controllers/topic/crd.yaml', root).pathname;
const group = 'pubsub.levelset.dev';
const version = 'v1alpha1';
const plural = 'topics';
const PROJECT = 'levelset-external';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const pb = protos.google.pubsub.v1;
/** The Pub/Sub method of a request, e.g. `GetTopic`. */
const methodOf = (r: RecordedRequest) => r.path.split('/').at(-1) ?? '';
/** Whether a Pub/Sub method writes (everything but Get… and List…). */
const writes = (method: string) => !/^(Get|List)/.test(method);
/** The topic (full name) a Publisher request names; `undefined` for another method. */
const topicNamedBy = (r: RecordedRequest): string | undefined => {
  const decoders: Record<string, () => string | undefined> = {
    GetTopic: () => pb.GetTopicRequest.decode(r.message).topic,
    CreateTopic: () => pb.Topic.decode(r.message).name,
    UpdateTopic: () => pb.UpdateTopicRequest.decode(r.message).topic?.name ?? undefined,
    DeleteTopic: () => pb.DeleteTopicRequest.decode(r.message).topic,
  };
  return decoders[methodOf(r)]?.();
};

// biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
type Json = any;

const suite = (mode: StackMode) => () => {
  let p: Pipeline;
  let ns: string;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let ownEmulator: PubSubEmulator | undefined;
  /** The emulator, past the proxy: what exists there (not counted). */
  let pubsub: PubSub;
  /** Through the proxy: a topic's labels as Pub/Sub answers them (the model's, once set). */
  let viaProxy: PubSub;
  let proxy: GrpcProxy;

  const getTopic = (name: string): Promise<Json> =>
    custom.getNamespacedCustomObject({ group, version, plural, namespace: ns, name });
  const createTopic = (name: string, spec: object, annotations: Record<string, string> = {}) =>
    custom.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      body: { apiVersion: `${group}/${version}`, kind: 'Topic', metadata: { name, annotations }, spec },
    });
  const deleteTopic = (name: string) =>
    custom.deleteNamespacedCustomObject({ group, version, plural, namespace: ns, name });
  const gone = (name: string) =>
    getTopic(name).then(
      () => false,
      (err: unknown) => err instanceof ApiException && err.code === 404,
    );
  const exists = async (r: { exists(): Promise<[boolean]> }) => (await r.exists())[0];
  const ready = (o: Json) => findCondition(parseConditions(o?.status?.conditions), 'Ready');
  const topicIdOf = (name: string) => `k8s.${ns}.${name}`;
  const topicNameOf = (name: string) => `projects/${PROJECT}/topics/${topicIdOf(name)}`;
  /** The live labels of Topic `name`'s topic, read through the proxy (counted, and kept while recording). */
  const liveLabels = async (name: string) => (await viaProxy.topic(topicIdOf(name)).getMetadata())[0].labels;
  const waitReady = (name: string, status: 'True' | 'False', reason: string) =>
    waitFor(
      async () => {
        const condition = ready(await getTopic(name));
        return condition?.status === status && condition.reason === reason ? condition : undefined;
      },
      { message: `${name} Ready=${status}/${reason}` },
    );
  /** Every log line about `topic/<ns>/<name>`, in the order its process wrote them. */
  const linesOf = (name: string) =>
    p.logs
      .map(({ line }) => line)
      .filter((line) => {
        const labels = line[LABELS] as { controller?: string; key?: string } | undefined;
        return labels?.controller === 'topic' && labels.key === `${ns}/${name}`;
      });
  /** Makes every primary key come round again: the resync (serverless) or a restart (in-process lists all). */
  const resync = async () => {
    if (p.mode === 'serverless') await serverlessStack(p).runResync();
    else {
      await p.stack.stopRelay();
      await p.stack.startRelay();
    }
  };

  before(async () => {
    // The controller's Pub/Sub requests go through the proxy (LEVELSET_CLOUD_EMULATOR_HOST), to
    // the stack's emulator (serverless) or this test's (in-process), known once started; the proxy
    // answers the label updates of topics as Pub/Sub does (the emulator refuses them).
    proxy = await startGrpcProxy(() => ownEmulator?.host ?? serverlessStack(p).emulator.host, {
      topicLabels: true,
    });
    p = await startPipeline(
      async (cluster): Promise<Record<string, string>> => {
        custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
        core = cluster.kubeConfig.makeApiClient(CoreV1Api);
        ns = await cluster.createNamespace('topic-e2e');
        await cluster.applyCrd(CRD, { group, version, plural }, ns);
        if (mode === 'serverless') return { LEVELSET_CLOUD_EMULATOR_HOST: proxy.host };
        // The in-process mode runs no emulator of its own: the Topics' Pub/Sub is this one.
        ownEmulator = await startPubSubEmulator();
        return { PUBSUB_EMULATOR_HOST: ownEmulator.host, LEVELSET_CLOUD_EMULATOR_HOST: proxy.host };
      },
      { mode },
    );
    const host = ownEmulator?.host ?? serverlessStack(p).emulator.host;
    pubsub = new PubSub({ projectId: PROJECT, ...emulatorClientOptions(host) });
    viaProxy = new PubSub({ projectId: PROJECT, ...emulatorClientOptions(proxy.host) });
  });

  after(async () => {
    await pubsub?.close();
    await viaProxy?.close();
    await p?.stop();
    await proxy?.close();
    await ownEmulator?.stop();
  });

  it('puts its finalizer on before creating anything in Pub/Sub, then creates topic and subscription', async () => {
    await createTopic('orders', { subscriptions: [{ id: `orders-worker-${ns}`, ackDeadlineSeconds: 20 }] });
    const topic = await waitFor(
      async () => {
        const t = await getTopic('orders');
        return ready(t)?.status === 'True' ? t : undefined;
      },
      { message: 'Topic orders Ready' },
    );
    assert.deepEqual(topic.metadata.finalizers, [finalizerName('topic')]);
    assert.equal(topic.status.topic, `projects/${PROJECT}/topics/${topicIdOf('orders')}`);
    assert.ok(await exists(pubsub.topic(topicIdOf('orders'))));
    assert.ok(await exists(pubsub.subscription(`orders-worker-${ns}`)));
    const messages = linesOf('orders').map((l) => l.message);
    const added = messages.indexOf('finalizer added');
    assert.ok(added >= 0, JSON.stringify(messages));
    assert.ok(added < messages.indexOf('created'), `finalizer first: ${JSON.stringify(messages)}`);
    assert.ok(added < messages.lastIndexOf('created'), `finalizer first: ${JSON.stringify(messages)}`);
  });

  it('recreates a topic deleted out of band at the next resync', async () => {
    await pubsub.topic(topicIdOf('orders')).delete();
    await resync();
    await waitFor(() => exists(pubsub.topic(topicIdOf('orders'))), { message: 'the topic recreated' });
    await waitFor(
      async () =>
        (await pubsub.subscription(`orders-worker-${ns}`).getMetadata())[0].topic ===
        `projects/${PROJECT}/topics/${topicIdOf('orders')}`,
      { message: 'its subscription attached to the new topic' },
    );
  });

  it('never adopts a foreign topic of the same id: Ready=False/ResourceExists and a Warning Event', async () => {
    const foreignId = `foreign-${ns}`;
    const [foreign] = await pubsub.createTopic({ name: foreignId, labels: { team: 'other' } });
    await createTopic('wants-foreign', { topicId: foreignId });
    await waitFor(async () => ready(await getTopic('wants-foreign'))?.reason === 'ResourceExists', {
      message: 'Ready=False/ResourceExists',
    });
    await waitFor(
      async () =>
        (await core.listNamespacedEvent({ namespace: ns })).items.some(
          (e) =>
            e.involvedObject.name === 'wants-foreign' &&
            e.type === 'Warning' &&
            e.reason === 'ResourceExists',
        ),
      { message: 'a Warning ResourceExists Event' },
    );
    assert.deepEqual((await foreign.getMetadata())[0].labels, { team: 'other' });
    await deleteTopic('wants-foreign');
    await waitFor(() => gone('wants-foreign'), { message: 'the Topic that never owned anything goes' });
    assert.ok(await exists(foreign), 'the foreign topic is never deleted');
  });

  /** Waits until the relay has nothing left to hand on for the topic controller (no sleeps: metrics). */
  const settled = () =>
    waitFor(
      async () =>
        (await reconcilesOwed(p, 'topic')) <= outcomeLines(p, 'topic').length ||
        Promise.reject(new Error('reconciles still owed')),
      { message: 'every topic key reconciled' },
    );
  const outcomesOf = (name: string) =>
    outcomeLines(p, 'topic')
      .filter((l) => (l[LABELS] as { key?: string }).key === `${ns}/${name}`)
      .map((l) => l.outcome);

  it('answers a Google Cloud INVALID_ARGUMENT with Ready=False and the API message, once (not retried)', async () => {
    // The emulator refuses updates of a topic's labels (INVALID_ARGUMENT): a real gRPC error, when
    // the proxy forwards them to it (its model off for this case).
    await createTopic('relabel', { labels: { v: 'one' } });
    await waitFor(async () => ready(await getTopic('relabel'))?.status === 'True', {
      message: 'relabel Ready',
    });
    // Ready is written before its reconcile's outcome line, and the finalizer's own event may still
    // be queued: count from a quiet pipeline.
    await settled();
    const before = outcomesOf('relabel').length;
    proxy.topicLabels = false;
    try {
      await custom.patchNamespacedCustomObject(
        { group, version, plural, namespace: ns, name: 'relabel', body: { spec: { labels: { v: 'two' } } } },
        mergePatch,
      );
      await waitFor(async () => ready(await getTopic('relabel'))?.reason === 'InvalidArgument', {
        message: 'Ready=False/InvalidArgument',
      });
      await waitFor(() => outcomesOf('relabel').slice(before).includes('terminal'), {
        message: 'a terminal outcome',
      });
      assert.match(ready(await getTopic('relabel'))?.message ?? '', /update_mask/);
      await settled();
    } finally {
      proxy.topicLabels = true;
    }
    // Acknowledged, never retried. The finalizer's own addition is an event of its own: when its key
    // was handed out before Ready was seen, its reconcile runs after that, before the patch (a
    // success) or after it (reading the new spec: a second terminal). Nothing else delivers.
    const outcomes = outcomesOf('relabel').slice(before);
    assert.ok(
      outcomes.length <= 2 &&
        outcomes.every((o) => o === 'terminal' || o === 'success') &&
        outcomes.filter((o) => o === 'success').length <= 1,
      JSON.stringify(outcomes),
    );
  });

  for (const [code, grpc, reason] of [[7, 'PERMISSION_DENIED', 'PermissionDenied']] as const)
    it(`answers ${grpc} with a Warning, Ready=False/${reason} and the API message, once (no hot loop)`, async () => {
      const name = `denied-${code}`;
      const message = `${grpc.toLowerCase()} by the test's proxy`;
      const remove = proxy.fail({ path: /\/CreateTopic$/, code, message });
      try {
        await createTopic(name, {});
        await waitFor(async () => ready(await getTopic(name))?.reason === reason, {
          message: `Ready=False/${reason}`,
        });
        assert.equal(
          ready(await getTopic(name))?.message,
          `create projects/${PROJECT}/topics/${topicIdOf(name)}: ${message}`,
        );
        await waitFor(
          async () =>
            (await core.listNamespacedEvent({ namespace: ns })).items.some(
              (e) => e.involvedObject.name === name && e.type === 'Warning' && e.reason === reason,
            ),
          { message: `a Warning ${reason} Event` },
        );
        await waitFor(() => outcomesOf(name).includes('terminal'), { message: 'a terminal outcome' });
        // Acknowledged, never retried: the only other delivery is the one the finalizer's own addition
        // enqueues (a finalizers change is a significant event of the primary), when it was not
        // collapsed with the first.
        await settled();
        const outcomes = outcomesOf(name);
        assert.ok(outcomes.length <= 2 && outcomes.every((o) => o === 'terminal'), JSON.stringify(outcomes));
      } finally {
        remove();
      }
      await deleteTopic(name);
      await waitFor(() => gone(name), { message: `${name} gone (nothing was created)` });
    });

  for (const [code, grpc, times] of [
    [4, 'DEADLINE_EXCEEDED', 1],
    [14, 'UNAVAILABLE', 2],
  ] as const)
    it(`retries ${grpc} with backoff until it passes`, async () => {
      const name = `flaky-${code}`;
      const before = proxy.failed.get('/google.pubsub.v1.Publisher/GetTopic') ?? 0;
      proxy.fail({ path: /\/GetTopic$/, code, message: `${grpc.toLowerCase()} by the test's proxy`, times });
      await createTopic(name, {});
      await waitFor(async () => ready(await getTopic(name))?.status === 'True', {
        message: `${name} Ready after the ${grpc}s`,
        timeoutMs: 90_000,
      });
      assert.equal(
        (proxy.failed.get('/google.pubsub.v1.Publisher/GetTopic') ?? 0) - before,
        times,
        'every fault met',
      );
      assert.ok(!outcomesOf(name).includes('terminal'), JSON.stringify(outcomesOf(name)));
      assert.ok(await exists(pubsub.topic(topicIdOf(name))));
    });

  it('retries RESOURCE_EXHAUSTED after per-key backoff, acknowledged (a requeue, never 5xx), until it clears', async () => {
    const name = 'quota';
    const before = proxy.failed.get('/google.pubsub.v1.Publisher/GetTopic') ?? 0;
    proxy.fail({ path: /\/GetTopic$/, code: 8, message: "quota exceeded by the test's proxy", times: 3 });
    await createTopic(name, {});
    await waitFor(async () => ready(await getTopic(name))?.status === 'True', {
      message: `${name} Ready once the quota clears`,
    });
    assert.equal(
      (proxy.failed.get('/google.pubsub.v1.Publisher/GetTopic') ?? 0) - before,
      3,
      'every fault met',
    );
    const outcomes = outcomesOf(name);
    assert.ok(outcomes.includes('requeue'), JSON.stringify(outcomes));
    assert.ok(
      !outcomes.some((o) => o === 'terminal' || o === 'transient' || o === 'error'),
      JSON.stringify(outcomes),
    );
    assert.ok(await exists(pubsub.topic(topicIdOf(name))));
  });

  it('retries RESOURCE_EXHAUSTED carrying RetryInfo after the delay it asks, not sooner, and converges once the quota clears', async () => {
    const name = 'quota-retry-info';
    const retryDelayMs = 1500;
    const requeuesOf = () =>
      linesOf(name).filter((l) => l.outcome === 'requeue') as (LogLine & { retryAfterMs?: number })[];
    // The quota is exhausted, as Google's APIs answer it: RESOURCE_EXHAUSTED with a
    // google.rpc.RetryInfo, to every GetTopic (every delivery of a Topic reads its topic first),
    // until the Topic has been requeued twice; then it clears.
    const clear = proxy.fail({
      path: /\/GetTopic$/,
      code: 8,
      message: "quota exceeded by the test's proxy",
      retryDelayMs,
    });
    try {
      await createTopic(name, {});
      await waitFor(() => requeuesOf().length >= 2, { message: `${name} requeued twice` });
    } finally {
      clear();
    }
    await waitFor(async () => ready(await getTopic(name))?.status === 'True', {
      message: `${name} Ready once the quota clears`,
    });
    const requeues = requeuesOf();
    assert.ok(
      requeues.every((l) => l.rateLimited === true && l.retryAfterMs === retryDelayMs),
      `rate limited, naming the delay RetryInfo asked: ${JSON.stringify(requeues.map((l) => l.retryAfterMs))}`,
    );
    const outcomes = linesOf(name).filter((l) => typeof l.outcome === 'string');
    assert.ok(
      outcomes.every((l) => l.outcome === 'requeue' || l.outcome === 'success'),
      JSON.stringify(outcomes.map((l) => l.outcome)),
    );
    // Only a requeued delivery can pass (the quota clears after the second requeue, and a requeue
    // comes back after its delay): no reconcile succeeded before the first requeue's delay was
    // over (a success began at its line's time minus its duration).
    const ms = (l: LogLine) => {
      const t = l.timestamp as { seconds: number; nanos: number };
      return t.seconds * 1000 + Math.round(t.nanos / 1e6);
    };
    const firstRequeue = ms(requeues[0] as LogLine);
    for (const success of outcomes.filter((l) => l.outcome === 'success')) {
      const waited = ms(success) - (success.durationMs as number) - firstRequeue;
      assert.ok(waited >= retryDelayMs - 2, `a success began ${waited} ms after the first requeue`);
    }
    assert.ok(await exists(pubsub.topic(topicIdOf(name))));
  });

  // The kit's policies (functions/kit/external.ts), end to end. Every Pub/Sub request of the
  // controller is kept by the proxy and decoded with Pub/Sub's own protos, so the calls are counted
  // per topic. The emulator refuses every update of labels (`labels is not a known Topic field`;
  // Pub/Sub accepts it): marking an adopted topic and unmarking an abandoned one are answered by the
  // proxy's model of Pub/Sub's UpdateTopic (each such request marked `modelled` in its records), so
  // what follows them (Ready, the object gone, the topic managed) is checked too.

  it('observe: reads the topic into status, never writes it, never deletes it (counted requests)', async () => {
    await pubsub.createTopic({ name: topicIdOf('watched'), labels: { team: 'other' } });
    await settled();
    const kept = proxy.record(/^\/google\.pubsub\.v1\./);
    try {
      await createTopic('watched', {}, { [ADOPTION_POLICY]: 'observe' });
      await waitReady('watched', 'True', 'Observed');
      assert.equal((await getTopic('watched')).status.topic, topicNameOf('watched'));
      await deleteTopic('watched');
      await waitFor(() => gone('watched'), { message: 'the observing Topic gone' });
      await settled();
    } finally {
      kept.stop();
    }
    const methods = kept.requests.map(methodOf);
    assert.ok(methods.includes('GetTopic'), JSON.stringify(methods));
    assert.deepEqual(methods.filter(writes), [], 'no write');
    assert.deepEqual(await liveLabels('watched'), { team: 'other' }, 'untouched, and still there');
  });

  it('adopt never takes a topic marked by another object: Ready=False/ManagementConflict naming it, nothing written', async () => {
    const holder = { [CLOUD_OWNER_LABEL]: 'uid-of-another-object' };
    await pubsub.createTopic({ name: topicIdOf('held'), labels: holder });
    await settled();
    const kept = proxy.record(/^\/google\.pubsub\.v1\./);
    try {
      await createTopic('held', {}, { [ADOPTION_POLICY]: 'adopt' });
      const condition = await waitReady('held', 'False', 'ManagementConflict');
      assert.match(condition.message, new RegExp(`${CLOUD_OWNER_LABEL}=uid-of-another-object`));
      await deleteTopic('held');
      await waitFor(() => gone('held'), { message: 'the refused Topic gone' });
      await settled();
    } finally {
      kept.stop();
    }
    assert.deepEqual(kept.requests.map(methodOf).filter(writes), [], 'nothing written');
    assert.deepEqual(await liveLabels('held'), holder, 'another object’s topic kept, its mark too');
  });

  it('adopt takes an unmarked topic: marks it with the spec’s labels and the Topic’s uid (Ready=True), then manages it: deleted with its Topic', async () => {
    await pubsub.createTopic({ name: topicIdOf('orphan'), labels: { team: 'other' } });
    await settled();
    const kept = proxy.record(/^\/google\.pubsub\.v1\./);
    try {
      await createTopic('orphan', { labels: { team: 'mine' } }, { [ADOPTION_POLICY]: 'adopt' });
      await waitReady('orphan', 'True', 'Available');
      await settled();
    } finally {
      kept.stop();
    }
    const { uid } = (await getTopic('orphan')).metadata;
    assert.equal((await getTopic('orphan')).status.topic, topicNameOf('orphan'));
    const marks = kept.requests.filter((r) => methodOf(r) === 'UpdateTopic');
    assert.equal(marks.length, 1, 'marked once, then read as the Topic’s');
    const mark = pb.UpdateTopicRequest.decode((marks[0] as RecordedRequest).message);
    assert.equal(mark.topic?.name, topicNameOf('orphan'));
    assert.deepEqual({ ...mark.topic?.labels }, { team: 'mine', [CLOUD_OWNER_LABEL]: uid });
    assert.deepEqual(mark.updateMask?.paths, ['labels']);
    assert.ok(marks[0]?.modelled, "answered by the proxy's model of UpdateTopic");
    assert.deepEqual(
      kept.requests.map(methodOf).filter((m) => writes(m) && m !== 'UpdateTopic'),
      [],
      'nothing created or deleted',
    );
    assert.deepEqual(
      await liveLabels('orphan'),
      { team: 'mine', [CLOUD_OWNER_LABEL]: uid },
      'the Topic’s from now on',
    );
    // Managed: the default deletion policy deletes it with its Topic.
    await deleteTopic('orphan');
    await waitFor(() => gone('orphan'), { message: 'the adopting Topic gone' });
    assert.ok(!(await exists(pubsub.topic(topicIdOf('orphan')))), 'the adopted topic deleted with it');
  });

  it('abandon: the delete leaves the topic with only the owner mark removed, and the object goes', async () => {
    await createTopic('kept', { labels: { team: 'kept' } }, { [DELETION_POLICY]: 'abandon' });
    await waitReady('kept', 'True', 'Available');
    const { uid } = (await getTopic('kept')).metadata;
    assert.deepEqual(await liveLabels('kept'), { team: 'kept', [CLOUD_OWNER_LABEL]: uid }, 'marked');
    await settled();
    const kept = proxy.record(/^\/google\.pubsub\.v1\./);
    try {
      await deleteTopic('kept');
      await waitFor(() => gone('kept'), { message: 'Topic kept gone, its topic abandoned' });
      await settled();
    } finally {
      kept.stop();
    }
    const unmarks = kept.requests.filter((r) => methodOf(r) === 'UpdateTopic');
    assert.equal(unmarks.length, 1, 'unmarked once');
    const unmark = pb.UpdateTopicRequest.decode((unmarks[0] as RecordedRequest).message);
    assert.equal(unmark.topic?.name, topicNameOf('kept'));
    assert.deepEqual({ ...unmark.topic?.labels }, { team: 'kept' });
    assert.deepEqual(unmark.updateMask?.paths, ['labels']);
    assert.ok(unmarks[0]?.modelled, "answered by the proxy's model of UpdateTopic");
    assert.ok(!kept.requests.some((r) => methodOf(r) === 'DeleteTopic'), 'never deleted');
    assert.ok(await exists(pubsub.topic(topicIdOf('kept'))), 'the topic left in place');
    assert.deepEqual(await liveLabels('kept'), { team: 'kept' }, 'the owner mark removed, the rest kept');
  });

  it('a deletion policy changed on an object being deleted takes effect: an abandon held by a refused unmark becomes a delete', async () => {
    await createTopic('abandoning', {}, { [DELETION_POLICY]: 'abandon' });
    await waitReady('abandoning', 'True', 'Available');
    await settled();
    const path = '/google.pubsub.v1.Publisher/UpdateTopic';
    const refusedBefore = proxy.failed.get(path) ?? 0;
    // The unmark refused, as Pub/Sub refuses an identity without pubsub.topics.update.
    const allow = proxy.fail({
      path: /\/UpdateTopic$/,
      code: 7,
      message: "permission denied by the test's proxy",
    });
    try {
      await deleteTopic('abandoning');
      await waitFor(() => (proxy.failed.get(path) ?? 0) > refusedBefore, { message: 'the unmark refused' });
      await settled();
      assert.ok((await getTopic('abandoning')).metadata.deletionTimestamp, 'held by the finalizer');
      await custom.patchNamespacedCustomObject(
        {
          group,
          version,
          plural,
          namespace: ns,
          name: 'abandoning',
          body: { metadata: { annotations: { [DELETION_POLICY]: 'delete' } } },
        },
        mergePatch,
      );
      await waitFor(() => gone('abandoning'), { message: 'Topic abandoning gone once its policy is delete' });
    } finally {
      allow();
    }
    assert.ok(!(await exists(pubsub.topic(topicIdOf('abandoning')))), 'its topic deleted');
  });

  it('reconcile-interval: 0 makes no periodic call while a Topic of 500ms is read periodically twice (counted requests)', async () => {
    await createTopic('quiet', {}, { [RECONCILE_INTERVAL]: '0' });
    await waitReady('quiet', 'True', 'Available');
    await settled();
    const kept = proxy.record(/^\/google\.pubsub\.v1\./);
    const readsOfTicking = () =>
      kept.requests.filter((r) => methodOf(r) === 'GetTopic' && topicNamedBy(r) === topicNameOf('ticking'))
        .length;
    let span: { from: number; quietOutcomes: number };
    try {
      // The window: from a later key's first read after it converged (each delivery of quiet's own
      // events long done) until that key, requeued every 500 ms, has been read twice more.
      await createTopic('ticking', {}, { [RECONCILE_INTERVAL]: '500ms' });
      await waitReady('ticking', 'True', 'Available');
      const converged = readsOfTicking();
      await waitFor(() => readsOfTicking() > converged, { message: 'ticking read again' });
      span = { from: kept.requests.length, quietOutcomes: outcomesOf('quiet').length };
      await waitFor(() => readsOfTicking() >= converged + 3, { message: 'ticking read twice more' });
    } finally {
      kept.stop();
    }
    const named = kept.requests.slice(span.from).map(topicNamedBy);
    assert.ok(!named.includes(topicNameOf('quiet')), JSON.stringify(named));
    assert.equal(outcomesOf('quiet').length, span.quietOutcomes, 'not reconciled in the window');
    await deleteTopic('ticking');
    await waitFor(() => gone('ticking'), { message: 'Topic ticking gone' });
  });

  it('on delete removes subscription and topic, then the object goes', async () => {
    await deleteTopic('orders');
    await waitFor(() => gone('orders'), { message: 'Topic orders gone' });
    assert.ok(!(await exists(pubsub.subscription(`orders-worker-${ns}`))), 'subscription deleted');
    assert.ok(!(await exists(pubsub.topic(topicIdOf('orders')))), 'topic deleted');
  });

  it('a namespace deleted with a Topic inside finishes: topic deleted, then the namespace gone', async () => {
    const doomed = await p.cluster.createNamespace('topic-doomed');
    await custom.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: doomed,
      body: { apiVersion: `${group}/${version}`, kind: 'Topic', metadata: { name: 'inside' }, spec: {} },
    });
    const topicId = `k8s.${doomed}.inside`;
    await waitFor(() => exists(pubsub.topic(topicId)), { message: 'the topic of doomed/inside' });
    await waitFor(
      async () =>
        (
          (await custom.getNamespacedCustomObject({
            group,
            version,
            plural,
            namespace: doomed,
            name: 'inside',
          })) as Json
        ).metadata.finalizers?.length === 1,
      { message: 'its finalizer' },
    );
    await core.deleteNamespace({ name: doomed });
    await waitFor(
      () =>
        core.readNamespace({ name: doomed }).then(
          () => false,
          (err: unknown) => err instanceof ApiException && err.code === 404,
        ),
      { message: `namespace ${doomed} gone`, timeoutMs: 60_000 },
    );
    assert.ok(!(await exists(pubsub.topic(topicId))), 'its topic deleted first');
  });

  it('finishes a delete made while every function instance was down', async () => {
    await createTopic('while-down', {});
    await waitFor(async () => ready(await getTopic('while-down'))?.status === 'True', {
      message: 'while-down Ready',
    });
    if (p.mode === 'serverless')
      await stackFaults(serverlessStack(p)).restartFunction('reconcile', { killOnly: true });
    else await p.stack.stopRelay();
    await deleteTopic('while-down');
    assert.ok((await getTopic('while-down')).metadata.deletionTimestamp, 'held by the finalizer');
    if (p.mode === 'serverless') {
      await stackFaults(serverlessStack(p)).restartFunction('reconcile');
      await serverlessStack(p).runResync(); // publishes the keys of objects being deleted too
    } else await p.stack.startRelay(); // its initial list holds the object being deleted
    await waitFor(() => gone('while-down'), { message: 'Topic while-down gone', timeoutMs: 60_000 });
    assert.ok(!(await exists(pubsub.topic(topicIdOf('while-down')))), 'its topic deleted');
  });
};

for (const mode of PIPELINE_MODES) describe(`topic end to end (${mode})`, suite(mode));
