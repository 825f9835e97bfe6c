/**
 * `levelset plan`, run as the real binary against an API server (the local one, or TEST_KUBECONFIG's
 * cluster): on a converged Foo it shows no change and exits 0; after a spec change it shows the
 * pending change to the Foo's Deployment and to its status and exits 1, and the live Deployment and
 * Foo are unchanged afterwards (every write was a server-side dry-run; no Event was recorded). The
 * cluster makes the Deployment available (the simulated node on the local server) before the Foo is
 * converged, so that no other writer changes what the plan compares.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { dryRunKubeConfig } from '../../core/k8s/dry-run.ts';
import { fooController } from '../../examples/foo/controllers/foo/index.ts';
import { reconcilerForTest, startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { repoRoot } from '../../local/service.ts';
import { waitFor } from '../support/wait.ts';
import { podsCannotRun, startWorkloads } from '../support/workloads.ts';

const exec = promisify(execFile);
const bin = join(
  repoRoot,
  (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin
    .levelset ?? 'missing',
);
const resource = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos' };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('levelset plan', { skip: await podsCannotRun() }, () => {
  let cluster: TestCluster;
  let workloads: { stop(): Promise<void> } | undefined;
  let custom: CustomObjectsApi;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let stateDir: string;
  let namespace: string;
  const levelset = async (...args: string[]): Promise<Run> => {
    try {
      const { stdout, stderr } = await exec(process.execPath, [bin, 'plan', ...args], {
        cwd: repoRoot,
        env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath, LEVELSET_STATE_DIR: stateDir },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };
  const events = async () => (await core.listNamespacedEvent({ namespace })).items.length;

  before(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'levelset-state-')); // no local stack: KUBECONFIG's cluster
    cluster = await startTestCluster();
    workloads = await startWorkloads(cluster);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    namespace = await cluster.createNamespace('plan');
    await cluster.applyCrd(join(repoRoot, 'examples/foo/controllers/foo/crd.yaml'), resource, namespace);
    await custom.createNamespacedCustomObject({
      ...resource,
      namespace,
      body: {
        apiVersion: 'samplecontroller.k8s.io/v1alpha1',
        kind: 'Foo',
        metadata: { name: 'web' },
        spec: { deploymentName: 'web-nginx', replicas: 1 },
      },
    });
    // Converge it with the real reconcile once the cluster has made its Deployment available (the
    // Foo reports availableReplicas): reconciles until one finds nothing to do.
    const reconciler = reconcilerForTest(fooController, cluster.kubeconfigPath);
    await reconciler.reconcile({ namespace, name: 'web' });
    await waitFor(
      async () =>
        (await apps.readNamespacedDeployment({ namespace, name: 'web-nginx' })).status?.availableReplicas ===
        1,
      { message: 'the Deployment available', timeoutMs: 60_000 },
    );
    await reconciler.converge({ namespace, name: 'web' });
  });
  after(async () => {
    await workloads?.stop();
    await cluster?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('shows no change on a converged Foo and exits 0', async () => {
    const run = await levelset('foo', `${namespace}/web`);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /no changes: converged/);
  });

  it('shows the pending change to the Deployment and the status, makes neither, exits 1', async () => {
    await custom.patchNamespacedCustomObject(
      { ...resource, namespace, name: 'web', body: { spec: { replicas: 3 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const deployment = await apps.readNamespacedDeployment({ namespace, name: 'web-nginx' });
    // biome-ignore lint/suspicious/noExplicitAny: a custom object is plain JSON.
    const foo: any = await custom.getNamespacedCustomObject({ ...resource, namespace, name: 'web' });
    const eventsBefore = await events();

    const text = await levelset('foo', `${namespace}/web`);
    assert.equal(text.code, 1, text.stderr);
    assert.match(text.stdout, new RegExp(`~ Deployment ${namespace}/web-nginx \\(change\\)`));
    assert.match(text.stdout, /spec\.replicas: 1 → 3/);
    assert.match(text.stdout, new RegExp(`~ Foo ${namespace}/web status`));
    assert.match(text.stdout, /event \(not recorded\): Normal Synced/);

    const json = await levelset('foo', `${namespace}/web`, '-o', 'json');
    assert.equal(json.code, 1, json.stderr);
    const plan = JSON.parse(json.stdout) as {
      changes: {
        action: string;
        object: string;
        fields: { path: string; before?: unknown; after?: unknown }[];
      }[];
    };
    const child = plan.changes.find((c) => c.object === `Deployment ${namespace}/web-nginx`);
    assert.equal(child?.action, 'change');
    assert.deepEqual(
      child?.fields.find((f) => f.path === 'spec.replicas'),
      { path: 'spec.replicas', before: 1, after: 3 },
    );
    const status = plan.changes.find((c) => c.object === `Foo ${namespace}/web status`);
    assert.ok(
      status?.fields.some((f) => f.path === 'status.observedGeneration' && f.after === 2),
      JSON.stringify(status),
    );

    // Nothing was written: the live objects are as they were, and no Event was recorded.
    const live = await apps.readNamespacedDeployment({ namespace, name: 'web-nginx' });
    assert.equal(live.spec?.replicas, 1);
    assert.equal(live.metadata?.generation, deployment.metadata?.generation, 'its spec not written');
    // biome-ignore lint/suspicious/noExplicitAny: a custom object is plain JSON.
    const liveFoo: any = await custom.getNamespacedCustomObject({ ...resource, namespace, name: 'web' });
    assert.equal(liveFoo.metadata.resourceVersion, foo.metadata.resourceVersion);
    assert.equal(await events(), eventsBefore);
  });

  it('shows the Deployment it would create when it is missing, and creates none', async () => {
    await apps.deleteNamespacedDeployment({ namespace, name: 'web-nginx' });
    const run = await levelset('foo', `${namespace}/web`, '-o', 'json');
    assert.equal(run.code, 1, run.stderr);
    const plan = JSON.parse(run.stdout) as { changes: { action: string; object: string }[] };
    assert.deepEqual(
      plan.changes.find((c) => c.action === 'create'),
      {
        action: 'create',
        object: `Deployment ${namespace}/web-nginx`,
        fields: [],
        requests: [`POST /apis/apps/v1/namespaces/${namespace}/deployments`],
      },
    );
    await assert.rejects(apps.readNamespacedDeployment({ namespace, name: 'web-nginx' }), /404|not found/i);
  });

  it("sends any client's write through the dry-run KubeConfig as a dry-run, and logs it", async () => {
    const { kubeConfig, writes } = dryRunKubeConfig(cluster.kubeConfig);
    const answer = await kubeConfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'planned' }, data: { a: '1' } },
    });
    assert.equal(answer.metadata?.name, 'planned');
    await assert.rejects(core.readNamespacedConfigMap({ namespace, name: 'planned' }), /404|not found/i);
    assert.deepEqual(
      writes.map((w) => [w.method, w.path]),
      [['POST', `/api/v1/namespaces/${namespace}/configmaps`]],
    );
  });

  it('a DELETE with DeleteOptions in its body through the dry-run KubeConfig deletes nothing', async () => {
    // kube-apiserver reads a DELETE's options from its body and then ignores `?dryRun=All`.
    const kept = await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'kept' } } });
    const { kubeConfig, writes } = dryRunKubeConfig(cluster.kubeConfig);
    await kubeConfig.makeApiClient(CoreV1Api).deleteNamespacedConfigMap({
      namespace,
      name: 'kept',
      body: { preconditions: { uid: kept.metadata?.uid } },
    });
    const after = await core.readNamespacedConfigMap({ namespace, name: 'kept' });
    assert.equal(after.metadata?.uid, kept.metadata?.uid, 'still there');
    assert.deepEqual(
      writes.map((w) => [w.method, w.path]),
      [['DELETE', `/api/v1/namespaces/${namespace}/configmaps/kept`]],
    );
  });

  it('refuses a malformed key with exit 2', async () => {
    const run = await levelset('foo', 'no-namespace');
    assert.equal(run.code, 2);
    assert.match(run.stderr, /malformed key/);
  });
});
