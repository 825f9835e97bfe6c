/**
 * The Icecream reconcile against an API server (the local one, or TEST_KUBECONFIG's cluster), one
 * reconcile at a time through the kit's `reconcilerForTest`: what each path leaves (the Deployment,
 * the status, Events) and what Levelset wrote. The cluster runs the Deployment's Pods (on the local
 * server the simulated node, on a real one its controllers and kubelet); the end-to-end test
 * (icecream-pipeline.test.ts) runs the relay too.
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
import { icecreamResource as resource } from '../../examples/icecream/controllers/icecream/api.ts';
import { icecreamController } from '../../examples/icecream/controllers/icecream/index.ts';
import { FIELD_MANAGER, findCondition, isControlledBy, parseConditions } from '../../functions/kit/index.ts';
import {
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
  writesOf,
} from '../../functions/kit/testing.ts';
import { waitFor } from '../support/wait.ts';
import { podsCannotRun, startWorkloads } from '../support/workloads.ts';

const exec = promisify(execFile);
const root = new URL('../../', import.meta.url);
const CRD = new URL('examples/icecream/controllers/icecream/crd.yaml', root).pathname;
const EXAMPLE = new URL('examples/icecream/test/fixtures/upstream/icecream-example.yaml', root).pathname;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

// biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
type Json = any;

describe('icecream reconcile on an API server', { skip: await podsCannotRun() }, () => {
  let cluster: TestCluster;
  let workloads: { stop(): Promise<void> } | undefined;
  let ns: string;
  let t: ReconcilerForTest;
  let custom: CustomObjectsApi;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  const getIcecream = (): Promise<Json> =>
    custom.getNamespacedCustomObject({ ...resource, namespace: ns, name: 'example-icecream' });
  const reconcile = () => t.reconcile({ namespace: ns, name: 'example-icecream' });
  /** Waits until the cluster reports `n` available replicas of the Icecream's Deployment. */
  const available = (n: number) =>
    waitFor(
      async () =>
        (await apps.readNamespacedDeployment({ namespace: ns, name: 'example-icecream' })).status
          ?.availableReplicas === n,
      { message: `the Deployment with ${n} available replicas`, timeoutMs: 60_000 },
    );

  before(async () => {
    cluster = await startTestCluster();
    workloads = await startWorkloads(cluster);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    ns = await cluster.createNamespace('icecream');
    await cluster.applyCrd(CRD, { ...resource }, ns);
    t = reconcilerForTest(icecreamController, cluster.kubeconfigPath);
  });
  after(async () => {
    await workloads?.stop();
    await cluster?.stop();
  });

  it('creates the Deployment of the tutorial example, its status and a Synced Event', async () => {
    await exec('kubectl', ['--kubeconfig', cluster.kubeconfigPath, 'apply', '-n', ns, '-f', EXAMPLE]);
    const run = await reconcile();
    assert.equal(run.error, undefined, run.error?.message);
    const icecream = await getIcecream();
    const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'example-icecream' });
    assert.ok(isControlledBy(deployment, icecream));
    assert.deepEqual(deployment.spec?.template.metadata?.labels, {
      app: 'nginx',
      icecream: 'example-icecream',
    });
    const ready = findCondition(parseConditions(icecream.status.conditions), 'Ready');
    assert.equal(ready?.observedGeneration, icecream.metadata.generation);
    assert.equal(ready?.status, icecream.status.availableReplicas === 1 ? 'True' : 'False');
    const synced = (await core.listNamespacedEvent({ namespace: ns })).items.filter(
      (e) => e.involvedObject.name === 'example-icecream' && e.reason === 'Synced',
    );
    assert.equal(synced[0]?.type, 'Normal');
  });

  it('reports the sorted nodes of its Pods and the available replicas; then a no-op costs 3 reads', async () => {
    await available(1);
    await t.converge({ namespace: ns, name: 'example-icecream' });
    const icecream = await getIcecream();
    const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: 'icecream=example-icecream' });
    const nodes = [...new Set(pods.items.map((p) => p.spec?.nodeName ?? ''))].sort();
    assert.ok(nodes.length > 0 && nodes.every(Boolean), `its Pods are scheduled: ${nodes}`);
    assert.deepEqual(icecream.status.nodeNames, nodes);
    assert.equal(icecream.status.availableReplicas, 1);
    assert.equal(findCondition(parseConditions(icecream.status.conditions), 'Ready')?.status, 'True');
    // The count is the point: the Icecream, its Deployments, its Pods; nothing written.
    const run = await reconcile();
    assert.deepEqual(writesOf(run.requests), [], run.requests.join(', '));
    assert.equal(run.requests.length, 3, run.requests.join(', '));
    assert.equal((await getIcecream()).metadata.resourceVersion, icecream.metadata.resourceVersion);
  });

  it('scales the Deployment with one server-side apply', async () => {
    await custom.patchNamespacedCustomObject(
      { ...resource, namespace: ns, name: 'example-icecream', body: { spec: { replicas: 3 } } },
      mergePatch,
    );
    const run = await reconcile();
    assert.equal(run.error, undefined, run.error?.message);
    const path = `/apis/apps/v1/namespaces/${ns}/deployments/example-icecream`;
    assert.equal(
      writesOf(run.requests).filter((r) => r.endsWith(path)).length,
      1,
      `one write to the Deployment: ${run.requests.join(', ')}`,
    );
    const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'example-icecream' });
    assert.equal(deployment.spec?.replicas, 3);
    const applied = deployment.metadata?.managedFields?.find(
      (f) => f.manager === FIELD_MANAGER && f.operation === 'Apply',
    );
    assert.ok(applied, "the spec is Levelset's by server-side apply");
    await available(3);
    await t.converge({ namespace: ns, name: 'example-icecream' });
    assert.equal((await getIcecream()).status.availableReplicas, 3);
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
