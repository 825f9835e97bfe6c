// The embedded cluster's simulated node (local/simulated-node.ts): real Node objects that kubectl
// lists with kube-apiserver's columns, their Leases in kube-node-lease, and every Pod scheduled
// through pods/binding — Customcluster's Pods, which no ReplicaSet creates, included.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { AppsV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createEventRecorder } from '../../core/k8s/events.ts';
import { customclusterController } from '../../examples/customcluster/controllers/customcluster/index.ts';
import { CountingKubeConfig, startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { NODE_NAMES, startSimulatedNode } from '../../local/simulated-node.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);
const CRD = new URL('../../examples/customcluster/controllers/customcluster/crd.yaml', import.meta.url)
  .pathname;

describe('simulated node (embedded cluster)', {
  skip: process.env.TEST_KUBECONFIG ? 'a real cluster has real nodes and a scheduler' : false,
}, () => {
  let cluster: TestCluster;
  let node: { stop(): Promise<void> };
  let namespace: string;
  const kubectl = async (...args: string[]) =>
    (await exec('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args], { timeout: 30_000 })).stdout;

  before(async () => {
    cluster = await startTestCluster();
    namespace = await cluster.createNamespace('e2e-node');
    node = await startSimulatedNode(cluster.kubeConfig, pino({ level: 'silent' }));
  });

  after(async () => {
    await node?.stop();
    await cluster?.stop();
  });

  it('kubectl get nodes lists node-1..3 Ready, with the columns kube-apiserver gives them', async () => {
    const lines = (await kubectl('get', 'nodes')).trim().split('\n');
    assert.match(lines[0] ?? '', /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION$/);
    assert.deepEqual(
      lines.slice(1).map((l) => l.split(/\s+/).filter((_, i) => i !== 3)),
      NODE_NAMES.map((n) => [n, 'Ready', '<none>', 'v1.32.0-levelset-local']),
    );
    const wide = (await kubectl('get', 'nodes', '-o', 'wide')).trim().split('\n');
    assert.match(wide[0] ?? '', /INTERNAL-IP\s+EXTERNAL-IP\s+OS-IMAGE\s+KERNEL-VERSION\s+CONTAINER-RUNTIME$/);
    assert.match(wide[1] ?? '', /^node-1\s.*\s172\.18\.0\.2\s+<none>\s+Levelset simulated node\s/);
  });

  it('each node holds its Lease in kube-node-lease', async () => {
    const leases = await cluster.kubeConfig
      .makeApiClient(CoordinationV1Api)
      .listNamespacedLease({ namespace: 'kube-node-lease' });
    assert.deepEqual(leases.items.map((l) => [l.metadata?.name, l.spec?.holderIdentity]).sort(), [
      ...NODE_NAMES.map((n) => [n, n]),
    ]);
    for (const l of leases.items) assert.equal(l.metadata?.ownerReferences?.[0]?.kind, 'Node');
  });

  it("Customcluster's Pods (created by its controller, no ReplicaSet) are bound to nodes and run", async () => {
    const group = 'sde.dev';
    const version = 'v1alpha1';
    const plural = 'customclusters';
    await cluster.applyCrd(CRD, { group, version, plural }, namespace);
    await cluster.kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace,
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'Customcluster',
        metadata: { name: 'cpod-f' },
        spec: { message: 'hello', count: 3 },
      },
    });
    const log = pino({ level: 'silent' });
    await customclusterController.reconcile(
      { namespace, name: 'cpod-f' },
      {
        cluster: 'default',
        kubeConfig: cluster.kubeConfig,
        log,
        events: createEventRecorder(cluster.kubeConfig, customclusterController.name, log),
      },
    );
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const pods = await waitFor(
      async () => {
        const list = (await core.listNamespacedPod({ namespace })).items;
        return list.length === 3 && list.every((p) => p.status?.phase === 'Running') ? list : undefined;
      },
      { message: "Customcluster's 3 Pods Running" },
    );
    assert.deepEqual(pods.map((p) => p.spec?.nodeName).sort(), [...NODE_NAMES], 'one Pod per node');
    for (const p of pods) {
      const scheduled = p.status?.conditions?.find((c) => c.type === 'PodScheduled');
      assert.equal(scheduled?.status, 'True');
    }
    const table = await kubectl('get', 'pods', '-n', namespace, '-o', 'wide');
    assert.doesNotMatch(table, /<none>\s+<none>\s+<none>\s*$/m, `every Pod has a NODE: ${table}`);

    // The scheduler's write, as kube-apiserver answers it: a bound Pod cannot be bound again.
    const name = pods[0]?.metadata?.name ?? '';
    await assert.rejects(
      core.createNamespacedPodBinding({
        name,
        namespace,
        body: { metadata: { name }, target: { kind: 'Node', name: 'node-9' } },
      }),
      (err: { code?: number; body?: string }) =>
        err.code === 409 &&
        (err.body ?? '').includes(
          `Operation cannot be fulfilled on pods/binding \\"${name}\\": pod ${name} is already assigned to node`,
        ),
    );
  });
});

// An API server with its own kube-controller-manager but no kubelet (kwok's setting; a kube-apiserver
// built for TEST_KUBECONFIG runs): the simulated node plays kubelet and the scheduler only, or its
// Deployment controller would fight kube-controller-manager's over every Deployment.
describe('simulated node without workload controllers (kubelet and scheduler only)', {
  skip: process.env.TEST_KUBECONFIG ? 'a real cluster has real nodes and a scheduler' : false,
}, () => {
  let cluster: TestCluster;
  let node: { stop(): Promise<void> };
  let namespace: string;
  /** The simulated node's own requests. */
  const nodeKubeConfig = new CountingKubeConfig();

  before(async () => {
    cluster = await startTestCluster();
    namespace = await cluster.createNamespace('e2e-kubelet');
    nodeKubeConfig.loadFromFile(cluster.kubeconfigPath);
    node = await startSimulatedNode(nodeKubeConfig, pino({ level: 'silent' }), {
      workloadControllers: false,
    });
  });

  after(async () => {
    await node?.stop();
    await cluster?.stop();
  });

  it('runs a bare Pod and leaves a Deployment to the cluster: no ReplicaSet, no Pod of its own', async () => {
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    const labels = { app: 'web' };
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'nginx' }] } },
        },
      },
    });
    await core.createNamespacedPod({
      namespace,
      body: { metadata: { name: 'bare' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
    });
    await waitFor(
      async () => (await core.readNamespacedPod({ namespace, name: 'bare' })).status?.phase === 'Running',
      { message: 'the bare Pod Running' },
    );
    assert.deepEqual((await apps.listNamespacedReplicaSet({ namespace })).items, []);
    // It never even lists them: no Deployment or ReplicaSet informer.
    assert.deepEqual(
      nodeKubeConfig.requests.filter((r) => /\/(deployments|replicasets)\b/.test(r)),
      [],
      nodeKubeConfig.requests.join(', '),
    );
    assert.deepEqual(
      (await core.listNamespacedPod({ namespace })).items.map((p) => p.metadata?.name),
      ['bare'],
    );
  });
});
