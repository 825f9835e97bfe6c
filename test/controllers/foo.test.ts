/**
 * The foo controller's reconcile against an API server (the local one, or TEST_KUBECONFIG's):
 * our CRD and the upstream example applied with `kubectl apply -f`, then the kit's
 * `reconcilerForTest` runs the reconcile directly. The cluster makes the Deployments available (on
 * the local server the simulated node, on a real one its controllers and kubelet); the tests assert
 * the resulting objects, status and Events, and what Levelset wrote: never the exact requests
 * (the kit's own tests pin those), a count only where it is the point.
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
  type V1Deployment,
} from '@kubernetes/client-node';
import { fooController } from '../../examples/foo/controllers/foo/index.ts';
import { FIELD_MANAGER, isControlledBy } from '../../functions/kit/index.ts';
import {
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
  writesOf,
} from '../../functions/kit/testing.ts';
import { type CustomObjects, customObjects, mergePatch, readyCondition } from '../support/custom-objects.ts';
import { waitFor } from '../support/wait.ts';
import { podsCannotRun, startWorkloads } from '../support/workloads.ts';

const exec = promisify(execFile);
const root = new URL('../../', import.meta.url);
const CRD = new URL('examples/foo/controllers/foo/crd.yaml', root).pathname;
const EXAMPLE = new URL('examples/foo/test/fixtures/upstream/sample-controller-example-foo.yaml', root)
  .pathname;
const group = 'samplecontroller.k8s.io';
const version = 'v1alpha1';
const plural = 'foos';

describe('foo reconcile on an API server', { skip: await podsCannotRun() }, () => {
  let cluster: TestCluster;
  let workloads: { stop(): Promise<void> } | undefined;
  let ns: string;
  let foos: CustomObjects;
  let t: ReconcilerForTest;
  let custom: CustomObjectsApi;
  let apps: AppsV1Api;
  let core: CoreV1Api;

  const kubectl = (...args: string[]) => exec('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args]);
  const key = (name: string) => ({ namespace: ns, name });
  const deployment = (name: string) => apps.readNamespacedDeployment({ namespace: ns, name });
  /** Waits until the cluster reports `n` available replicas of the Deployment `name`. */
  const available = (name: string, n: number): Promise<V1Deployment> =>
    waitFor(
      async () => ((await deployment(name)).status?.availableReplicas === n ? deployment(name) : false),
      {
        message: `Deployment ${name} with ${n} available replicas`,
        timeoutMs: 60_000,
      },
    );
  /** Levelset's entries in an object's managedFields (its field manager's). */
  const levelsetFields = (o: V1Deployment) =>
    (o.metadata?.managedFields ?? []).filter((f) => f.manager === FIELD_MANAGER);

  before(async () => {
    cluster = await startTestCluster();
    workloads = await startWorkloads(cluster);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    t = reconcilerForTest(fooController, cluster.kubeconfigPath);
    ns = await cluster.createNamespace('foo');
    foos = customObjects(cluster.kubeConfig, { group, version, plural, kind: 'Foo' }, ns);
    await cluster.applyCrd(CRD, { group, version, plural }, ns);
  });

  after(async () => {
    await workloads?.stop();
    await cluster?.stop();
  });

  it('converges the upstream example applied with kubectl apply -f: its Deployment, then Ready once available', async () => {
    await kubectl('apply', '-n', ns, '-f', EXAMPLE);
    const first = await t.reconcile(key('example-foo'));
    assert.equal(first.error, undefined, first.error?.message);

    const foo = await foos.get('example-foo');
    const created = await deployment('example-foo');
    assert.ok(isControlledBy(created, foo), 'controller reference to the Foo');
    assert.equal(created.spec?.replicas, 1);
    assert.deepEqual(created.spec?.template.metadata?.labels, { app: 'nginx', controller: 'example-foo' });
    assert.equal(created.spec?.template.spec?.containers[0]?.image, 'nginx:latest');
    assert.equal(readyCondition(foo)?.observedGeneration, foo.metadata.generation);
    // What the reconcile read of its just-created Deployment: nothing available yet, or already 1.
    assert.equal(
      readyCondition(foo)?.status,
      foo.status.availableReplicas === 1 ? 'True' : 'False',
      JSON.stringify(foo.status),
    );

    await available('example-foo', 1);
    const runs = [first, ...(await t.converge(key('example-foo')))];
    const synced = await foos.get('example-foo');
    assert.equal(synced.status.availableReplicas, 1);
    assert.equal(readyCondition(synced)?.status, 'True');
    assert.equal(readyCondition(synced)?.observedGeneration, synced.metadata.generation);
    assert.equal(synced.status.observedGeneration, synced.metadata.generation);

    // A Synced Event for each reconcile that changed something, the repeats counted on the first
    // (client-go's EventCorrelator).
    const events = await core.listNamespacedEvent({ namespace: ns });
    const normal = events.items.filter(
      (e) => e.involvedObject.name === 'example-foo' && e.reason === 'Synced',
    );
    assert.equal(normal.length, 1, 'one Synced Event, counted');
    assert.equal(normal[0]?.count, runs.filter((r) => writesOf(r.requests).length > 0).length);
    assert.equal(normal[0]?.type, 'Normal');
    assert.equal(normal[0]?.message, 'Foo synced successfully');
  });

  it('costs two reads (GET the Foo, LIST its Deployments) and writes nothing once converged', async () => {
    const before = await foos.get('example-foo');
    const run = await t.reconcile(key('example-foo'));
    const live = await deployment('example-foo');
    assert.deepEqual(
      writesOf(run.requests),
      [],
      `${run.requests.join(', ')}; the Foo's status was ${JSON.stringify(before.status)}, its Deployment's ${JSON.stringify(live.status)}`,
    );
    assert.equal(run.requests.length, 2, run.requests.join(', '));
    const afterwards = await foos.get('example-foo');
    assert.equal(
      afterwards.metadata.resourceVersion,
      before.metadata.resourceVersion,
      'status not rewritten',
    );
  });

  it('propagates a replicas change, Ready following the available replicas', async () => {
    await custom.patchNamespacedCustomObject(
      { group, version, plural, namespace: ns, name: 'example-foo', body: { spec: { replicas: 3 } } },
      mergePatch,
    );
    const run = await t.reconcile(key('example-foo'));
    assert.equal(run.error, undefined, run.error?.message);
    assert.equal((await deployment('example-foo')).spec?.replicas, 3);
    const scaling = await foos.get('example-foo');
    const seen = scaling.status.availableReplicas;
    assert.ok(seen < 3, `the new replicas were not available at once: ${seen}`);
    assert.equal(readyCondition(scaling)?.status, 'False');
    assert.equal(readyCondition(scaling)?.observedGeneration, scaling.metadata.generation);
    assert.equal(readyCondition(scaling)?.message, `${seen} of 3 replicas available`);

    await available('example-foo', 3);
    await t.converge(key('example-foo'));
    const scaled = await foos.get('example-foo');
    assert.equal(scaled.status.availableReplicas, 3);
    assert.equal(readyCondition(scaled)?.status, 'True');
  });

  it('never touches a Deployment it does not control: ErrResourceExists, terminal', async () => {
    const theirs = await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'taken', labels: { owner: 'someone-else' } },
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
    const run = await t.reconcile(key('wants-taken'));
    assert.equal(run.error?.reason, 'ErrResourceExists');
    assert.equal(run.error?.message, 'Resource "taken" already exists and is not managed by Foo');
    assert.equal(run.error?.object?.metadata?.name, 'wants-taken', 'the Warning Event goes on the Foo');
    // A create of that name may be tried (the server answers 409); the object itself is never written.
    assert.deepEqual(
      writesOf(run.requests).filter((r) => r.endsWith(`/namespaces/${ns}/deployments/taken`)),
      [],
      `no write to the Deployment: ${run.requests.join(', ')}`,
    );

    const still = await deployment('taken');
    assert.equal(still.metadata?.uid, theirs.metadata?.uid);
    assert.equal(still.metadata?.generation, theirs.metadata?.generation, 'its spec unchanged');
    assert.equal(still.spec?.replicas, 1);
    assert.deepEqual(still.metadata?.ownerReferences ?? [], [], 'not adopted');
    assert.deepEqual(levelsetFields(still), [], 'no field of it managed by Levelset');
    const foo = await foos.get('wants-taken');
    assert.equal(readyCondition(foo)?.reason, 'ErrResourceExists');
    assert.equal(readyCondition(foo)?.status, 'False');
    assert.equal(foo.status.availableReplicas, undefined, 'not copied from a Deployment that is not ours');
    const warnings = (await core.listNamespacedEvent({ namespace: ns })).items.filter(
      (e) => e.involvedObject.name === 'wants-taken' && e.reason === 'ErrResourceExists',
    );
    assert.equal(warnings[0]?.type, 'Warning');
  });

  it('absorbs a missing deploymentName: terminal, a condition, nothing created', async () => {
    const deploymentsBefore = (await apps.listNamespacedDeployment({ namespace: ns })).items.length;
    await foos.create('no-name', { replicas: 1 });
    const run = await t.reconcile(key('no-name'));
    assert.equal(run.error?.reason, 'InvalidSpec');
    assert.match(run.error?.message ?? '', /deployment name must be specified/);
    const foo = await foos.get('no-name');
    assert.equal(readyCondition(foo)?.reason, 'InvalidSpec');
    assert.equal((await apps.listNamespacedDeployment({ namespace: ns })).items.length, deploymentsBefore);
  });

  it('rejects invalid specs with 422 at the API server (the CRD schema), so nothing is reconciled', async () => {
    for (const spec of [
      { deploymentName: 'x', replicas: 'x' },
      { deploymentName: 'x', replicas: 0 },
      { deploymentName: 'Not_A_Name' },
    ]) {
      await assert.rejects(
        foos.create('invalid', spec),
        (err: unknown) => err instanceof ApiException && err.code === 422,
      );
    }
    const run = await t.reconcile(key('invalid'));
    assert.equal(run.requests.length, 1, `the object does not exist: one GET, nothing else: ${run.requests}`);
  });

  it('leaves no Deployment once the Foo is deleted (garbage collection through the owner reference)', async () => {
    await custom.deleteNamespacedCustomObject({ group, version, plural, namespace: ns, name: 'example-foo' });
    await waitFor(
      () =>
        deployment('example-foo').then(
          () => false,
          (err: unknown) => err instanceof ApiException && err.code === 404,
        ),
      { message: 'the Deployment to be garbage-collected', timeoutMs: 60_000 },
    );
    const run = await t.reconcile(key('example-foo'));
    assert.equal(run.requests.length, 1, `a deleted Foo costs one GET: ${run.requests}`);
  });
});
