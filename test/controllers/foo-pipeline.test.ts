/**
 * The foo controller end to end, on real parts: relay → Pub/Sub emulator → `reconcile` under
 * functions-framework → Kubernetes API (local API server, or TEST_KUBECONFIG's cluster). The cluster
 * makes Deployments available (on the local API server the simulated node plays the Deployment and
 * ReplicaSet controllers, the scheduler and kubelet; a real cluster's own controllers do); the test
 * changes only the Foos (and, as someone else would, a Deployment's spec) and observes only through
 * the Kubernetes API, the functions' logs and the relay's metrics.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  type V1Deployment,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import type { WatchEvent } from '../../core/contract/controller.ts';
import { statusEventPassesWith } from '../../core/contract/watch-predicates.ts';
import { FIELD_MANAGER } from '../../core/k8s/custom-resource.ts';
import { skipOwnWrites } from '../../functions/kit/predicates.ts';
import { noReadyNodeSkip } from '../../functions/kit/testing.ts';
import { startSimulatedNode } from '../../local/simulated-node.ts';
import type { StackMode } from '../../local/stack.ts';
import { primaryEventPasses } from '../../relay/predicate.ts';
import { type CustomObjects, customObjects, mergePatch, readyCondition } from '../support/custom-objects.ts';
import {
  keepWatching,
  outcomeLines,
  PIPELINE_MODES,
  type Pipeline,
  type RelayInputs,
  startPipeline,
  watchRelayInputs,
} from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);
const root = new URL('../../', import.meta.url);
const CRD = new URL('examples/foo/controllers/foo/crd.yaml', root).pathname;
const EXAMPLE = new URL('examples/foo/test/fixtures/upstream/sample-controller-example-foo.yaml', root)
  .pathname;
const group = 'samplecontroller.k8s.io';
const version = 'v1alpha1';
const plural = 'foos';

/** One watch event of a Foo or of its Deployment, with who wrote it and whether the relay may enqueue on it. */
interface Trigger {
  kind: 'Foo' | 'Deployment';
  type: string;
  /** The field managers whose managedFields entries the write changed (`levelset` for Levelset's own writes). */
  writers: string[];
  /** Whether the relay's predicates for the foo controller let the event through (a key). */
  passes: boolean;
  object: KubernetesObject;
}

/** The field managers whose managedFields entries differ between `old` and `object`. */
function writersOf(object: KubernetesObject, old: KubernetesObject | undefined): string[] {
  const before = new Set((old?.metadata?.managedFields ?? []).map((e) => JSON.stringify(e)));
  const changed = (object.metadata?.managedFields ?? []).filter((e) => !before.has(JSON.stringify(e)));
  return [...new Set(changed.map((e) => e.manager ?? ''))];
}

/**
 * Records every event of the Foo `name` and of the Deployment `name` in `namespace`, each with its
 * writers and whether it passes the foo controller's predicates (relay/predicate.ts on the Foo; on
 * its Deployment `skipOwnWrites` and the generation predicate or'ed with `availableReplicas`, its
 * `readsStatus`). Resolves once both watches are open.
 */
async function watchTriggers(kubeConfig: KubeConfig, namespace: string, name: string) {
  const events: Trigger[] = [];
  /** Why a watch lost events (then the tests cannot count). */
  const lost: string[] = [];
  const aborts: (() => void)[] = [];
  for (const kind of ['Foo', 'Deployment'] as const) {
    const path =
      kind === 'Foo'
        ? `/apis/${group}/${version}/namespaces/${namespace}/${plural}`
        : `/apis/apps/v1/namespaces/${namespace}/deployments`;
    let last: KubernetesObject | undefined;
    const watch = await keepWatching(
      kubeConfig,
      path,
      { fieldSelector: `metadata.name=${name}` },
      (type: string, object: KubernetesObject) => {
        const oldObject = last;
        last = type === 'DELETED' ? undefined : object;
        const event = { type, object, oldObject } as WatchEvent;
        const available = (o: KubernetesObject | undefined) =>
          (o as V1Deployment | undefined)?.status?.availableReplicas ?? 0;
        const passes =
          kind === 'Foo'
            ? primaryEventPasses(event)
            : skipOwnWrites(event) && statusEventPassesWith(event, (o) => JSON.stringify(available(o)));
        events.push({ kind, type, writers: writersOf(object, oldObject), passes, object });
      },
      (why) => lost.push(why),
    );
    aborts.push(() => watch.stop());
  }
  return {
    events,
    lost,
    /** Whether the event is one of Levelset's own writes (its create, managedFields patch, apply or status write). */
    own: (t: Trigger) => t.writers.length > 0 && t.writers.every((w) => w === FIELD_MANAGER),
    stop: () => {
      for (const abort of aborts) abort();
    },
  };
}

const noNode = await noReadyNodeSkip();

/** The suite, run once per mode (below). */
const suite = (mode: StackMode) => () => {
  let p: Pipeline;
  let ns: string;
  let foos: CustomObjects;
  let custom: CustomObjectsApi;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let inputs: RelayInputs;

  const kubectl = (...args: string[]) => exec('kubectl', ['--kubeconfig', p.cluster.kubeconfigPath, ...args]);
  let node: { stop(): Promise<void> } | undefined;
  /** Waits until the Foo `name` is Ready at its generation with `n` available replicas (the cluster's doing). */
  const availableFoo = (name: string, n: number) =>
    waitFor(
      async () => {
        const f = await foos.get(name);
        return f.status?.availableReplicas === n &&
          readyCondition(f)?.status === 'True' &&
          readyCondition(f)?.observedGeneration === f.metadata.generation
          ? f
          : undefined;
      },
      { message: `Foo ${name} Ready at its generation with ${n} available replicas`, timeoutMs: 60_000 },
    );
  /** The outcome line of every finished delivery of `foo/<ns>/<name>` to `reconcile`. */
  const deliveries = (name: string) => outcomeLines(p, 'foo', `${ns}/${name}`);

  before(async () => {
    p = await startPipeline(
      async (cluster) => {
        custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
        apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
        core = cluster.kubeConfig.makeApiClient(CoreV1Api);
        ns = await cluster.createNamespace('foo-e2e');
        if (cluster.local) node = await startSimulatedNode(cluster.kubeConfig, pino({ level: 'silent' }));
        foos = customObjects(cluster.kubeConfig, { group, version, plural, kind: 'Foo' }, ns);
        await cluster.applyCrd(CRD, { group, version, plural }, ns);
        inputs = await watchRelayInputs(
          cluster.kubeConfig,
          'foo',
          { path: `/apis/${group}/${version}/${plural}`, relayResource: `${group}/${version}/${plural}` },
          [{ path: '/apis/apps/v1/deployments', relayResource: 'apps/v1/deployments' }],
        );
        return {};
      },
      { mode },
    );
  });

  after(async () => {
    inputs?.stop();
    await node?.stop();
    await p?.stop();
  });

  it('converges the upstream example applied with kubectl apply -f', async () => {
    await kubectl('apply', '-n', ns, '-f', EXAMPLE);
    const deployment = await waitFor(
      () => apps.readNamespacedDeployment({ namespace: ns, name: 'example-foo' }).catch(() => undefined),
      { message: 'the Deployment example-foo' },
    );
    assert.equal(deployment.spec?.replicas, 1);
    assert.equal(deployment.metadata?.ownerReferences?.[0]?.kind, 'Foo');
    await availableFoo('example-foo', 1);
    await waitFor(
      async () =>
        (await core.listNamespacedEvent({ namespace: ns })).items.some(
          (e) => e.involvedObject.name === 'example-foo' && e.reason === 'Synced' && e.type === 'Normal',
        ),
      { message: 'a Normal Synced Event on the Foo' },
    );
  });

  it('propagates a replicas change', async () => {
    await custom.patchNamespacedCustomObject(
      { group, version, plural, namespace: ns, name: 'example-foo', body: { spec: { replicas: 3 } } },
      mergePatch,
    );
    await waitFor(
      async () =>
        (await apps.readNamespacedDeployment({ namespace: ns, name: 'example-foo' })).spec?.replicas === 3,
      { message: 'the Deployment scaled to 3' },
    );
    await availableFoo('example-foo', 3);
  });

  it('does not reconcile again because of its own status write (count reconciles)', async () => {
    await inputs.settled(p);
    const triggers = await watchTriggers(p.cluster.kubeConfig, ns, 'example-foo');
    try {
      const deliveredBefore = deliveries('example-foo').length;
      const droppedBefore = inputs.seen.drops;
      // The Foo scales down: its spec change and the Deployment's progress (the cluster's writes)
      // are keys; each reconcile writes the Foo's status through /status, a Foo event with an
      // unchanged generation, which the relay must drop: no key of its own.
      await custom.patchNamespacedCustomObject(
        { group, version, plural, namespace: ns, name: 'example-foo', body: { spec: { replicas: 2 } } },
        mergePatch,
      );
      await availableFoo('example-foo', 2);
      // Our own watch may see the status write after the GET above: wait for it (with a deadline),
      // so that settled() compares the relay with every event.
      await waitFor(() => inputs.seen.drops > droppedBefore, {
        message: 'the status write was a status-only Foo event (seen by our watch)',
      });
      await inputs.settled(p);
      assert.deepEqual(triggers.lost, []);
      // Only the reconciles write a Foo's status: its MODIFIED events that keep the generation (the
      // managedFields entry's time has seconds only: a second write in the same second changes none).
      const statusWrites = triggers.events.filter(
        (t, i) =>
          t.kind === 'Foo' &&
          t.type === 'MODIFIED' &&
          t.object.metadata?.generation ===
            triggers.events.findLast((u, j) => j < i && u.kind === 'Foo')?.object.metadata?.generation,
      );
      assert.ok(statusWrites.length > 0, 'the reconciles wrote the Foo status');
      assert.deepEqual(
        statusWrites.filter((t) => t.passes),
        [],
        'no status write of its own passes the predicate',
      );
      // Every reconcile is owed to an event of another writer that passes the predicates (the
      // spec change, the Deployment's progress; several may collapse into one key).
      const keys = triggers.events.filter((t) => t.passes && !triggers.own(t)).length;
      const reconciles = deliveries('example-foo').length - deliveredBefore;
      assert.ok(
        reconciles >= 1 && reconciles <= keys,
        `${reconciles} reconciles for ${keys} events of others`,
      );
    } finally {
      triggers.stop();
    }
  });

  it('removes the replicas a Foo stops setting from its Deployment, and a converged Foo writes nothing to it', async () => {
    await custom.patchNamespacedCustomObject(
      { group, version, plural, namespace: ns, name: 'example-foo', body: { spec: { replicas: null } } },
      mergePatch,
    );
    // Applied away, the field is the API server's again: defaulted to 1 (it stayed at 3 while the
    // kit compared only the values it sets).
    await waitFor(
      async () =>
        (await apps.readNamespacedDeployment({ namespace: ns, name: 'example-foo' })).spec?.replicas === 1,
      { message: 'the Deployment back to the default of 1 replica' },
    );
    // The Deployment's progress to 1 available replica (the cluster's writes): reconciles of a
    // converged Foo, which change its status and write nothing to its Deployment.
    await availableFoo('example-foo', 1);
    await inputs.settled(p);
    const settledAt = (await apps.readNamespacedDeployment({ namespace: ns, name: 'example-foo' })).metadata
      ?.managedFields;
    const triggers = await watchTriggers(p.cluster.kubeConfig, ns, 'example-foo');
    try {
      const deliveredBefore = deliveries('example-foo').length;
      // A label on the Foo (a metadata change that passes the predicate): one reconcile of the
      // converged Foo, which writes nothing to its Deployment.
      await custom.patchNamespacedCustomObject(
        {
          group,
          version,
          plural,
          namespace: ns,
          name: 'example-foo',
          body: { metadata: { labels: { touched: 'yes' } } },
        },
        mergePatch,
      );
      await waitFor(() => deliveries('example-foo').length > deliveredBefore, { message: 'the reconcile' });
      await inputs.settled(p);
      assert.deepEqual(triggers.lost, []);
      assert.deepEqual(
        triggers.events.filter((t) => t.kind === 'Deployment' && triggers.own(t)).map((t) => t.type),
        [],
        'no write of its own to the converged Deployment',
      );
      const levelsetEntry = (fields: typeof settledAt) =>
        JSON.stringify(fields?.filter((e) => e.manager === FIELD_MANAGER));
      const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'example-foo' });
      assert.equal(
        levelsetEntry(deployment.metadata?.managedFields),
        levelsetEntry(settledAt),
        'its fields untouched',
      );
    } finally {
      triggers.stop();
    }
  });

  it('reports a Deployment it does not control with ErrResourceExists, once, and touches nothing', async () => {
    const theirs = await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'taken' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'theirs' } },
          template: {
            metadata: { labels: { app: 'theirs' } },
            spec: { containers: [{ name: 'c', image: 'busybox' }] },
          },
        },
      },
    });
    await foos.create('wants-taken', { deploymentName: 'taken', replicas: 2 });
    const event = await waitFor(
      async () =>
        (await core.listNamespacedEvent({ namespace: ns })).items.find(
          (e) => e.involvedObject.name === 'wants-taken' && e.reason === 'ErrResourceExists',
        ),
      { message: 'a Warning ErrResourceExists Event on the Foo' },
    );
    assert.equal(event.type, 'Warning');
    assert.equal(event.message, 'Resource "taken" already exists and is not managed by Foo');
    await inputs.settled(p);
    const outcomes = deliveries('wants-taken').map((line) => line.outcome);
    assert.deepEqual(outcomes, ['terminal'], 'acknowledged, not retried');
    // The Deployment controller writes it too on a real cluster: Levelset's writes are those of its
    // field manager, and it has none; nor does the Deployment gain an owner.
    const now = await apps.readNamespacedDeployment({ namespace: ns, name: 'taken' });
    assert.deepEqual(
      now.metadata?.managedFields?.filter((e) => e.manager === FIELD_MANAGER),
      [],
      'no write by Levelset',
    );
    assert.deepEqual(now.metadata?.ownerReferences, theirs.metadata?.ownerReferences);
    assert.deepEqual(now.spec?.template, theirs.spec?.template);
    assert.equal(readyCondition(await foos.get('wants-taken'))?.reason, 'ErrResourceExists');
  });

  it('absorbs a missing deploymentName with a Warning Event and a condition', async () => {
    await foos.create('no-name', { replicas: 1 });
    await waitFor(
      async () =>
        (await core.listNamespacedEvent({ namespace: ns })).items.some(
          (e) => e.involvedObject.name === 'no-name' && e.type === 'Warning' && e.reason === 'InvalidSpec',
        ),
      { message: 'a Warning InvalidSpec Event on the Foo' },
    );
    assert.equal(readyCondition(await foos.get('no-name'))?.reason, 'InvalidSpec');
    await inputs.settled(p);
    assert.deepEqual(
      deliveries('no-name').map((line) => line.outcome),
      ['terminal'],
    );
  });

  it('rejects an invalid spec with 422 before any reconcile sees it', async () => {
    await assert.rejects(
      foos.create('invalid', { deploymentName: 'invalid', replicas: 'x' }),
      (err: unknown) => err instanceof ApiException && err.code === 422,
    );
    // A valid Foo created after it goes through the same informer: once it is reconciled, the
    // invalid one would have been too, had it existed.
    await foos.create('after-invalid', { deploymentName: 'after-invalid', replicas: 1 });
    await waitFor(() => deliveries('after-invalid').length > 0, { message: 'the valid Foo reconciled' });
    await inputs.settled(p);
    assert.equal(deliveries('invalid').length, 0);
  });

  it("is not enqueued by kube-controller-manager numbering its Deployment's revision (a status annotation)", async () => {
    // kube-controller-manager's deployment controller writes `deployment.kubernetes.io/revision`
    // on a Deployment it has just seen created (core/contract/watch-predicates.ts
    // STATUS_ANNOTATIONS); written here as it would, with the Foo converged and the pipeline quiet.
    await foos.create('numbered', { deploymentName: 'numbered', replicas: 1 });
    await availableFoo('numbered', 1);
    await inputs.settled(p);
    const deliveredBefore = deliveries('numbered').length;
    await apps.patchNamespacedDeployment(
      {
        namespace: ns,
        name: 'numbered',
        fieldManager: 'kube-controller-manager',
        body: { metadata: { annotations: { 'deployment.kubernetes.io/revision': '1' } } },
      },
      mergePatch,
    );
    // settled(): the relay has received the Deployment's event, and any key it enqueued has been
    // published and reconciled.
    await inputs.settled(p);
    assert.equal(deliveries('numbered').length, deliveredBefore, 'no reconcile for the revision annotation');
    // Another annotation of someone else's on the same child still reaches the Foo.
    await apps.patchNamespacedDeployment(
      {
        namespace: ns,
        name: 'numbered',
        fieldManager: 'kubectl-annotate',
        body: { metadata: { annotations: { team: 'a' } } },
      },
      mergePatch,
    );
    await waitFor(() => deliveries('numbered').length > deliveredBefore, {
      message: "the Foo reconciled for another writer's annotation",
    });
  });

  it('is not enqueued by the echo of its own create, nor by its own writes or status updates that leave availableReplicas as it was', async () => {
    // On a real cluster the Deployment controller writes the new Deployment too (its revision
    // annotation, its status): other writers' events that legitimately enqueue the Foo. What must
    // enqueue nothing are Levelset's own writes (the create's echo, its status write) and status
    // updates that leave availableReplicas as it was: every reconcile must be owed to an event of
    // another writer that passes the predicates.
    const triggers = await watchTriggers(p.cluster.kubeConfig, ns, 'quiet');
    try {
      await foos.create('quiet', { deploymentName: 'quiet', replicas: 1 });
      await availableFoo('quiet', 1);
      await inputs.settled(p);
      assert.deepEqual(triggers.lost, []);
      const own = triggers.events.filter((t) => triggers.own(t));
      assert.ok(
        own.some((t) => t.kind === 'Deployment' && t.type === 'ADDED'),
        'the Deployment was created by Levelset',
      );
      assert.ok(
        own.some((t) => t.kind === 'Foo'),
        'the Foo status was written by Levelset',
      );
      assert.deepEqual(
        own.filter((t) => t.passes).map((t) => `${t.kind} ${t.type}`),
        [],
        'none of its own writes passes the predicates',
      );
      const keys = triggers.events.filter((t) => t.passes && !triggers.own(t));
      const reconciles = deliveries('quiet').length;
      assert.ok(
        reconciles >= 2 && reconciles <= keys.length,
        `${reconciles} reconciles for ${keys.length} events of others: ${JSON.stringify(keys.map((t) => [t.kind, t.type, t.writers]))}`,
      );
    } finally {
      triggers.stop();
    }
  });

  it('restores a Deployment someone else changes or deletes (events that pass the predicates)', async () => {
    await foos.create('restored', { deploymentName: 'restored', replicas: 2 });
    const created = await waitFor(
      async () => {
        const d = await apps
          .readNamespacedDeployment({ namespace: ns, name: 'restored' })
          .catch(() => undefined);
        return d?.spec?.replicas === 2 ? d : undefined;
      },
      { message: 'the Deployment restored with 2 replicas' },
    );
    // Someone else scales it (a spec change: its generation moves).
    await apps.patchNamespacedDeployment(
      { namespace: ns, name: 'restored', body: { spec: { replicas: 5 } } },
      mergePatch,
    );
    await waitFor(
      async () =>
        (await apps.readNamespacedDeployment({ namespace: ns, name: 'restored' })).spec?.replicas === 2,
      { message: 'the Deployment scaled back to 2 by its Foo' },
    );
    // Someone else deletes it: re-created (a new object) by its Foo.
    await apps.deleteNamespacedDeployment({ namespace: ns, name: 'restored' });
    const recreated = await waitFor(
      async () => {
        const d = await apps
          .readNamespacedDeployment({ namespace: ns, name: 'restored' })
          .catch(() => undefined);
        return d && d.metadata?.uid !== created.metadata?.uid ? d : undefined;
      },
      { message: 'the Deployment re-created by its Foo' },
    );
    assert.equal(recreated.spec?.replicas, 2);
    assert.equal(recreated.metadata?.ownerReferences?.[0]?.name, 'restored');
  });

  it('leaves no Deployment once the Foo is deleted (garbage collection)', async () => {
    await custom.deleteNamespacedCustomObject({ group, version, plural, namespace: ns, name: 'example-foo' });
    await waitFor(
      () =>
        apps.readNamespacedDeployment({ namespace: ns, name: 'example-foo' }).then(
          () => false,
          (err: unknown) => err instanceof ApiException && err.code === 404,
        ),
      { message: 'the Deployment to be garbage-collected', timeoutMs: 60_000 },
    );
  });
};

for (const mode of PIPELINE_MODES) describe(`foo end to end (${mode})`, { skip: noNode }, suite(mode));
