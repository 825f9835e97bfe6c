/**
 * The foo controller end to end, on real parts: relay → Pub/Sub emulator → `reconcile` under
 * functions-framework → Kubernetes API (local API server, or TEST_KUBECONFIG's cluster). The test
 * plays the Deployment controller (writes Deployment status) and observes only through the
 * Kubernetes API, the functions' logs and the relay's metrics.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ApiException, AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { StackMode } from '../../local/stack.ts';
import { type CustomObjects, customObjects, mergePatch, readyCondition } from '../support/custom-objects.ts';
import {
  outcomeLines,
  PIPELINE_MODES,
  type Pipeline,
  type RelayInputs,
  relayCounter as relayCounterOf,
  startPipeline,
  watchRelayInputs,
} from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);
const root = new URL('../../', import.meta.url);
const CRD = new URL('functions/controllers/foo/crd.yaml', root).pathname;
const EXAMPLE = new URL('test/fixtures/upstream/sample-controller-example-foo.yaml', root).pathname;
const group = 'samplecontroller.k8s.io';
const version = 'v1alpha1';
const plural = 'foos';

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
  const setAvailable = (name: string, availableReplicas: number) =>
    apps.patchNamespacedDeploymentStatus(
      { namespace: ns, name, body: { status: { replicas: availableReplicas, availableReplicas } } },
      mergePatch,
    );
  /** The outcome line of every finished delivery of `foo/<ns>/<name>` to `reconcile`. */
  const deliveries = (name: string) => outcomeLines(p, 'foo', `${ns}/${name}`);
  const relayCounter = (metric: string, labels = 'controller="foo"') => relayCounterOf(p, metric, labels);

  before(async () => {
    p = await startPipeline(
      async (cluster) => {
        custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
        apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
        core = cluster.kubeConfig.makeApiClient(CoreV1Api);
        ns = await cluster.createNamespace('foo-e2e');
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
    await setAvailable('example-foo', 1);
    const foo = await waitFor(
      async () => {
        const f = await foos.get('example-foo');
        return f.status?.availableReplicas === 1 && readyCondition(f)?.status === 'True' ? f : undefined;
      },
      { message: 'Foo example-foo Ready with 1 available replica' },
    );
    assert.equal(readyCondition(foo)?.observedGeneration, foo.metadata.generation);
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
    await setAvailable('example-foo', 3);
    await waitFor(
      async () => {
        const f = await foos.get('example-foo');
        return (
          f.status?.availableReplicas === 3 &&
          readyCondition(f)?.status === 'True' &&
          readyCondition(f)?.observedGeneration === f.metadata.generation
        );
      },
      { message: 'Foo example-foo Ready with 3 available replicas at its generation' },
    );
  });

  it('does not reconcile again because of its own status write (count reconciles)', async () => {
    await inputs.settled(p);
    const publishedBefore = await relayCounter('levelset_relay_keys_published_total');
    const deliveredBefore = deliveries('example-foo').length;
    const droppedBefore = inputs.seen.drops;
    // The Deployment loses a replica: one Deployment event → one key → one reconcile, which
    // writes the Foo's status (2 available, Ready=False) through /status. That write is a Foo
    // event with an unchanged generation, which the relay must drop: no second key, no second
    // reconcile.
    await setAvailable('example-foo', 2);
    await waitFor(async () => (await foos.get('example-foo')).status?.availableReplicas === 2, {
      message: 'the status write of the reconcile',
    });
    // Our own watch may see the status write after the GET above: wait for it (with a deadline),
    // so that settled() compares the relay with every event.
    await waitFor(() => inputs.seen.drops > droppedBefore, {
      message: 'the status write was a status-only Foo event (seen by our watch)',
    });
    await inputs.settled(p);
    assert.equal(
      await relayCounter('levelset_relay_keys_published_total'),
      publishedBefore + 1,
      'one key published',
    );
    assert.equal(deliveries('example-foo').length, deliveredBefore + 1, 'one reconcile');
    assert.equal(readyCondition(await foos.get('example-foo'))?.status, 'False');
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
    await inputs.settled(p);
    const deliveredBefore = deliveries('example-foo').length;
    // A Deployment event (its status) → a reconcile of a converged Foo: its status changes, not
    // its Deployment.
    const written = await setAvailable('example-foo', 1);
    await waitFor(async () => readyCondition(await foos.get('example-foo'))?.status === 'True', {
      message: 'the reconcile after the status change',
    });
    await inputs.settled(p);
    assert.ok(deliveries('example-foo').length > deliveredBefore, 'reconciled');
    const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'example-foo' });
    assert.equal(
      deployment.metadata?.resourceVersion,
      written.metadata?.resourceVersion,
      'no write to the converged Deployment',
    );
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
    assert.equal(
      (await apps.readNamespacedDeployment({ namespace: ns, name: 'taken' })).metadata?.resourceVersion,
      theirs.metadata?.resourceVersion,
    );
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

  it('is not enqueued by the echo of its own create, nor by a status update that leaves availableReplicas as it was', async () => {
    await foos.create('quiet', { deploymentName: 'quiet', replicas: 1 });
    await waitFor(
      () => apps.readNamespacedDeployment({ namespace: ns, name: 'quiet' }).catch(() => undefined),
      { message: 'the Deployment quiet' },
    );
    // The Deployment's ADDED (written by Levelset alone) and the Foo's status write: no key.
    await inputs.settled(p);
    assert.equal(deliveries('quiet').length, 1, 'one reconcile: the Foo ADDED');
    const filteredBefore = await relayCounter('levelset_relay_events_filtered_total');
    // The Deployment controller's progress that changes nothing the Foo reads: no key.
    await apps.patchNamespacedDeploymentStatus(
      {
        namespace: ns,
        name: 'quiet',
        body: { status: { observedGeneration: 1, replicas: 1, availableReplicas: 0 } },
      },
      mergePatch,
    );
    await inputs.settled(p);
    assert.ok((await relayCounter('levelset_relay_events_filtered_total')) > filteredBefore, 'dropped');
    assert.equal(deliveries('quiet').length, 1, 'still one reconcile');
    // The change it reads: one key, the Foo is Ready.
    await setAvailable('quiet', 1);
    await waitFor(async () => readyCondition(await foos.get('quiet'))?.status === 'True', {
      message: 'Foo quiet Ready',
    });
    await inputs.settled(p);
    assert.equal(deliveries('quiet').length, 2, 'the reconcile of availableReplicas 1');
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

for (const mode of PIPELINE_MODES) describe(`foo end to end (${mode})`, suite(mode));
