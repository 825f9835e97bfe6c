/**
 * The foo controller's reconcile against an API server (the local one, or TEST_KUBECONFIG's):
 * our CRD and the upstream example applied with `kubectl apply -f`, then `reconcile(key, ctx)`
 * called directly with a real KubeConfig. There is no Deployment controller on the local server,
 * so the test writes Deployment status itself, as envtest-based tests do.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ApiException, AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { ReconcileContext } from '../../functions/contract/controller.ts';
import { fooController } from '../../functions/controllers/foo/index.ts';
import { TerminalError } from '../../functions/k8s/errors.ts';
import { createEventRecorder } from '../../functions/k8s/events.ts';
import { isControlledBy } from '../../functions/k8s/owner.ts';
import { startTestCluster, type TestCluster } from '../support/cluster.ts';
import { CountingKubeConfig } from '../support/counting-kubeconfig.ts';
import { type CustomObjects, customObjects, mergePatch, readyCondition } from '../support/custom-objects.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);
const root = new URL('../../', import.meta.url);
const CRD = new URL('functions/controllers/foo/crd.yaml', root).pathname;
const EXAMPLE = new URL('test/fixtures/upstream/sample-controller-example-foo.yaml', root).pathname;
const group = 'samplecontroller.k8s.io';
const version = 'v1alpha1';
const plural = 'foos';

const methods = (requests: string[]) => requests.map((r) => r.split(' ')[0]);

describe('foo reconcile on an API server', () => {
  let cluster: TestCluster;
  let ns: string;
  let foos: CustomObjects;
  let kc: CountingKubeConfig;
  let ctx: ReconcileContext;
  let custom: CustomObjectsApi;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  const log = pino({ level: 'silent' });

  const kubectl = (...args: string[]) => exec('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args]);
  /** Reconciles `name` and returns the API requests it made. */
  const reconcile = async (name: string): Promise<string[]> => {
    kc.requests = [];
    await fooController.reconcile({ namespace: ns, name }, ctx);
    return kc.requests;
  };
  /** Reconciles `name` expecting a TerminalError, and returns it. */
  const reconcileTerminal = async (name: string): Promise<TerminalError> => {
    try {
      await fooController.reconcile({ namespace: ns, name }, ctx);
    } catch (err) {
      assert.ok(err instanceof TerminalError, `expected a TerminalError, got ${err}`);
      return err;
    }
    assert.fail('reconcile succeeded; expected a TerminalError');
  };
  /** Plays the Deployment controller: sets `status.availableReplicas`. */
  const setAvailable = (name: string, availableReplicas: number) =>
    apps.patchNamespacedDeploymentStatus(
      {
        namespace: ns,
        name,
        body: {
          status: { replicas: availableReplicas, readyReplicas: availableReplicas, availableReplicas },
        },
      },
      mergePatch,
    );
  before(async () => {
    cluster = await startTestCluster();
    kc = new CountingKubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    ctx = { cluster: 'default', kubeConfig: kc, log, events: createEventRecorder(kc, 'foo', log) };
    ns = await cluster.createNamespace('foo');
    foos = customObjects(cluster.kubeConfig, { group, version, plural, kind: 'Foo' }, ns);
    await cluster.applyCrd(CRD, { group, version, plural }, ns);
  });

  after(async () => {
    await cluster?.stop();
  });

  it('converges the upstream example applied with kubectl apply -f', async () => {
    await kubectl('apply', '-n', ns, '-f', EXAMPLE);
    const created = await reconcile('example-foo');
    assert.deepEqual(
      created.map((r) => r.split(' ')[0]),
      ['GET', 'GET', 'POST', 'PATCH', 'PATCH', 'POST'],
      `create path requests: ${created.join(', ')}`,
    );

    const foo = await foos.get('example-foo');
    const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'example-foo' });
    assert.ok(isControlledBy(deployment, foo), 'controller reference to the Foo');
    assert.equal(deployment.spec?.replicas, 1);
    assert.deepEqual(deployment.spec?.template.metadata?.labels, { app: 'nginx', controller: 'example-foo' });
    assert.equal(deployment.spec?.template.spec?.containers[0]?.image, 'nginx:latest');
    assert.equal(readyCondition(foo)?.status, 'False');
    assert.equal(foo.status.availableReplicas, 0);

    await setAvailable('example-foo', 1);
    const statusOnly = await reconcile('example-foo');
    // The second Synced Event of this Foo counts on the first (client-go's EventCorrelator): a PATCH.
    assert.deepEqual(methods(statusOnly), ['GET', 'GET', 'PATCH', 'PATCH'], statusOnly.join(', '));
    const synced = await foos.get('example-foo');
    assert.equal(synced.status.availableReplicas, 1);
    assert.equal(readyCondition(synced)?.status, 'True');
    assert.equal(readyCondition(synced)?.observedGeneration, synced.metadata.generation);
    assert.equal(synced.status.observedGeneration, synced.metadata.generation);

    const events = await core.listNamespacedEvent({ namespace: ns });
    const normal = events.items.filter(
      (e) => e.involvedObject.name === 'example-foo' && e.reason === 'Synced',
    );
    assert.equal(normal.length, 1, 'one Synced Event, counted');
    assert.equal(normal[0]?.count, 2);
    assert.equal(normal[0]?.type, 'Normal');
    assert.equal(normal[0]?.message, 'Foo synced successfully');
  });

  it('costs two requests (GET the Foo, LIST its Deployments by label) and writes nothing once converged', async () => {
    const before = await foos.get('example-foo');
    const requests = await reconcile('example-foo');
    assert.deepEqual(requests, [
      `GET /apis/${group}/${version}/namespaces/${ns}/${plural}/example-foo`,
      `GET /apis/apps/v1/namespaces/${ns}/deployments`,
    ]);
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
    const requests = await reconcile('example-foo');
    assert.deepEqual(
      requests.map((r) => r.split(' ')[0]),
      ['GET', 'GET', 'PATCH', 'PATCH', 'PATCH'],
      `scale requests: ${requests.join(', ')}`,
    );
    const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'example-foo' });
    assert.equal(deployment.spec?.replicas, 3);
    const scaling = await foos.get('example-foo');
    assert.equal(readyCondition(scaling)?.status, 'False');
    assert.equal(readyCondition(scaling)?.observedGeneration, scaling.metadata.generation);
    assert.equal(readyCondition(scaling)?.message, '1 of 3 replicas available');

    await setAvailable('example-foo', 3);
    await reconcile('example-foo');
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
    const err = await reconcileTerminal('wants-taken');
    assert.equal(err.reason, 'ErrResourceExists');
    assert.equal(err.message, 'Resource "taken" already exists and is not managed by Foo');
    assert.equal(err.object?.metadata?.name, 'wants-taken', 'the Warning Event goes on the Foo');

    const still = await apps.readNamespacedDeployment({ namespace: ns, name: 'taken' });
    assert.equal(still.metadata?.resourceVersion, theirs.metadata?.resourceVersion, 'not modified');
    assert.equal(still.spec?.replicas, 1);
    const foo = await foos.get('wants-taken');
    assert.equal(readyCondition(foo)?.reason, 'ErrResourceExists');
    assert.equal(readyCondition(foo)?.status, 'False');
    assert.equal(foo.status.availableReplicas, undefined, 'not copied from a Deployment that is not ours');
  });

  it('absorbs a missing deploymentName: terminal, a condition, nothing created', async () => {
    const deploymentsBefore = (await apps.listNamespacedDeployment({ namespace: ns })).items.length;
    await foos.create('no-name', { replicas: 1 });
    const err = await reconcileTerminal('no-name');
    assert.equal(err.reason, 'InvalidSpec');
    assert.match(err.message, /deployment name must be specified/);
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
    const requests = await reconcile('invalid');
    assert.equal(requests.length, 1, 'the object does not exist: one GET, nothing else');
  });

  it('leaves no Deployment once the Foo is deleted (garbage collection through the owner reference)', async () => {
    await custom.deleteNamespacedCustomObject({ group, version, plural, namespace: ns, name: 'example-foo' });
    await waitFor(
      () =>
        apps.readNamespacedDeployment({ namespace: ns, name: 'example-foo' }).then(
          () => false,
          (err: unknown) => err instanceof ApiException && err.code === 404,
        ),
      { message: 'the Deployment to be garbage-collected', timeoutMs: 60_000 },
    );
    const requests = await reconcile('example-foo');
    assert.equal(requests.length, 1, 'a deleted Foo costs one GET');
  });
});
