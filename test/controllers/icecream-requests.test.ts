/**
 * The Icecream reconcile against an API server (the local one, or TEST_KUBECONFIG's cluster), one
 * reconcile at a time, with the exact API requests of each path. The test plays the Deployment
 * controller and the scheduler (writes Deployment status, creates scheduled Pods), as envtest-based
 * tests do; the end-to-end test (icecream-pipeline.test.ts) runs them for real.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { icecreamResource as resource } from '../../functions/controllers/icecream/api.ts';
import { icecreamController } from '../../functions/controllers/icecream/index.ts';
import { findCondition, isControlledBy, parseConditions } from '../../functions/kit/index.ts';
import { type ReconcilerForTest, reconcilerForTest } from '../../functions/kit/testing.ts';
import { startTestCluster, type TestCluster } from '../support/cluster.ts';

const exec = promisify(execFile);
const root = new URL('../../', import.meta.url);
const CRD = new URL('functions/controllers/icecream/crd.yaml', root).pathname;
const EXAMPLE = new URL('test/fixtures/upstream/icecream-example.yaml', root).pathname;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const methods = (requests: string[]) => requests.map((r) => r.split(' ')[0]);

// biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
type Json = any;

describe('icecream reconcile on an API server', () => {
  let cluster: TestCluster;
  let ns: string;
  let t: ReconcilerForTest;
  let custom: CustomObjectsApi;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  const getIcecream = (): Promise<Json> =>
    custom.getNamespacedCustomObject({ ...resource, namespace: ns, name: 'example-icecream' });
  const reconcile = () => t.reconcile({ namespace: ns, name: 'example-icecream' });

  before(async () => {
    cluster = await startTestCluster();
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    ns = await cluster.createNamespace('icecream');
    await cluster.applyCrd(CRD, { ...resource }, ns);
    t = reconcilerForTest(icecreamController, cluster.kubeconfigPath);
  });
  after(() => cluster?.stop());

  it('creates the Deployment of the tutorial example: GET, 2 LISTs, create, status, Synced Event', async () => {
    await exec('kubectl', ['--kubeconfig', cluster.kubeconfigPath, 'apply', '-n', ns, '-f', EXAMPLE]);
    const run = await reconcile();
    assert.deepEqual(
      methods(run.requests),
      ['GET', 'GET', 'GET', 'POST', 'PATCH', 'PATCH', 'POST'],
      run.requests.join(', '),
    );
    const icecream = await getIcecream();
    const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'example-icecream' });
    assert.ok(isControlledBy(deployment, icecream));
    assert.deepEqual(deployment.spec?.template.metadata?.labels, {
      app: 'nginx',
      icecream: 'example-icecream',
    });
    assert.deepEqual(icecream.status.nodeNames, []);
    const ready = findCondition(parseConditions(icecream.status.conditions), 'Ready');
    assert.equal(ready?.reason, 'DeploymentProgressing');
  });

  it('reports the sorted nodes of its Pods and the available replicas; then a no-op costs 3 reads', async () => {
    for (const [name, nodeName] of [
      ['b', 'node-b'],
      ['a', 'node-a'],
      ['c', 'node-b'],
    ] as const) {
      await core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name, labels: { app: 'nginx', icecream: 'example-icecream' } },
          spec: { nodeName, containers: [{ name: 'nginx', image: 'nginx:latest' }] },
        },
      });
    }
    await apps.patchNamespacedDeploymentStatus(
      { namespace: ns, name: 'example-icecream', body: { status: { replicas: 1, availableReplicas: 1 } } },
      mergePatch,
    );
    await reconcile();
    const icecream = await getIcecream();
    assert.deepEqual(icecream.status.nodeNames, ['node-a', 'node-b']);
    assert.equal(icecream.status.availableReplicas, 1);
    assert.equal(findCondition(parseConditions(icecream.status.conditions), 'Ready')?.status, 'True');
    const run = await reconcile();
    assert.deepEqual(run.requests, [
      `GET /apis/controller.nicoleh.io/v1alpha1/namespaces/${ns}/icecreams/example-icecream`,
      `GET /apis/apps/v1/namespaces/${ns}/deployments`,
      `GET /api/v1/namespaces/${ns}/pods`,
    ]);
    assert.equal((await getIcecream()).metadata.resourceVersion, icecream.metadata.resourceVersion);
  });

  it('scales the Deployment with one server-side apply', async () => {
    await custom.patchNamespacedCustomObject(
      { ...resource, namespace: ns, name: 'example-icecream', body: { spec: { replicas: 3 } } },
      mergePatch,
    );
    const run = await reconcile();
    // The Synced Event repeats the first one: aggregated (count + 1), a PATCH.
    assert.deepEqual(
      methods(run.requests),
      ['GET', 'GET', 'GET', 'PATCH', 'PATCH', 'PATCH'],
      run.requests.join(', '),
    );
    const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'example-icecream' });
    assert.equal(deployment.spec?.replicas, 3);
  });

  it('an invalid spec (422 at the API server, else InvalidSpec) is never reconciled into anything', async () => {
    await assert.rejects(
      custom.createNamespacedCustomObject({
        ...resource,
        namespace: ns,
        body: {
          apiVersion: 'controller.nicoleh.io/v1alpha1',
          kind: 'Icecream',
          metadata: { name: 'x' },
          spec: {},
        },
      }),
      (err: { code?: number }) => err.code === 422,
    );
  });
});
