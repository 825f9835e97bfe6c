/**
 * The Icecream controller end to end, on real parts: relay → Pub/Sub emulator → `reconcile` under
 * functions-framework → Kubernetes API. On the local API server the simulated node plays the
 * Deployment and ReplicaSet controllers, the scheduler and kubelet (on a real cluster, the real ones
 * do): create → Deployment → ReplicaSet → Pods on nodes → `status.nodeNames`; scale; delete → GC.
 * Pod events reach the Icecream only through the relay's map (Pod → ReplicaSet → Deployment →
 * Icecream, by controller references in its metadata caches).
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
import { pino } from 'pino';
import { icecreamResource as resource } from '../../examples/icecream/controllers/icecream/api.ts';
import { findCondition, isControlledBy, parseConditions } from '../../functions/kit/index.ts';
import { noReadyNodeSkip } from '../../functions/kit/testing.ts';
import { startSimulatedNode } from '../../local/simulated-node.ts';
import type { StackMode } from '../../local/stack.ts';
import { PIPELINE_MODES, type Pipeline, startPipeline } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);
const root = new URL('../../', import.meta.url);
const CRD = new URL('examples/icecream/controllers/icecream/crd.yaml', root).pathname;
const EXAMPLE = new URL('examples/icecream/test/fixtures/upstream/icecream-example.yaml', root).pathname;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

// biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
type Json = any;

const suite = (mode: StackMode) => () => {
  let p: Pipeline;
  let ns: string;
  let custom: CustomObjectsApi;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let node: { stop(): Promise<void> } | undefined;

  const getIcecream = (): Promise<Json> =>
    custom.getNamespacedCustomObject({ ...resource, namespace: ns, name: 'example-icecream' });
  /** The sorted distinct nodes of the Deployment's scheduled, running Pods, once there are `n` of them. */
  const podNodes = async (n: number) => {
    const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: 'icecream=example-icecream' }))
      .items;
    const running = pods.filter((pod) => pod.spec?.nodeName && pod.status?.phase === 'Running');
    if (running.length !== n || pods.length !== n) return undefined;
    return [...new Set(running.map((pod) => pod.spec?.nodeName ?? ''))].sort();
  };
  /** Waits until the Icecream reports `n` available replicas on exactly the nodes its Pods run on. */
  const converged = (n: number) =>
    waitFor(
      async () => {
        const nodes = await podNodes(n);
        const icecream = await getIcecream();
        const ready = findCondition(parseConditions(icecream.status?.conditions), 'Ready');
        return nodes &&
          icecream.status?.availableReplicas === n &&
          JSON.stringify(icecream.status?.nodeNames) === JSON.stringify(nodes) &&
          ready?.status === 'True' &&
          ready.observedGeneration === icecream.metadata.generation
          ? icecream
          : undefined;
      },
      { message: `the Icecream Ready with ${n} available replicas and status.nodeNames = its Pods' nodes` },
    );

  before(async () => {
    p = await startPipeline(
      async (cluster) => {
        custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
        apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
        core = cluster.kubeConfig.makeApiClient(CoreV1Api);
        ns = await cluster.createNamespace('icecream-e2e');
        await cluster.applyCrd(CRD, { ...resource }, ns);
        if (cluster.local) node = await startSimulatedNode(cluster.kubeConfig, pino({ level: 'silent' }));
        return {};
      },
      { mode },
    );
  });

  after(async () => {
    await node?.stop();
    await p?.stop();
  });

  it('converges the example: Deployment → Pods on nodes → status.nodeNames, a Synced Event', async () => {
    await exec('kubectl', ['--kubeconfig', p.cluster.kubeconfigPath, 'apply', '-n', ns, '-f', EXAMPLE]);
    const icecream = await converged(1);
    assert.equal(icecream.status.nodeNames.length, 1);
    const deployment = await apps.readNamespacedDeployment({ namespace: ns, name: 'example-icecream' });
    assert.ok(isControlledBy(deployment, icecream), 'the Deployment is controlled by the Icecream');
    assert.equal(deployment.spec?.replicas, 1);
    await waitFor(
      async () =>
        (await core.listNamespacedEvent({ namespace: ns })).items.some(
          (e) =>
            e.involvedObject.name === 'example-icecream' &&
            e.reason === 'Synced' &&
            e.message === 'Icecream synced successfully',
        ),
      { message: 'a Normal Synced Event on the Icecream' },
    );
  });

  it('scales: 3 replicas, status.nodeNames follows the Pods', async () => {
    await custom.patchNamespacedCustomObject(
      { ...resource, namespace: ns, name: 'example-icecream', body: { spec: { replicas: 3 } } },
      mergePatch,
    );
    const icecream = await converged(3);
    assert.deepEqual(icecream.status.nodeNames, [...icecream.status.nodeNames].sort(), 'sorted');
    if (p.cluster.local) assert.deepEqual(icecream.status.nodeNames, ['node-1', 'node-2', 'node-3']);
    await custom.patchNamespacedCustomObject(
      { ...resource, namespace: ns, name: 'example-icecream', body: { spec: { replicas: 1 } } },
      mergePatch,
    );
    await converged(1);
  });

  it('leaves no Deployment, ReplicaSet or Pod once the Icecream is deleted (garbage collection)', async () => {
    await custom.deleteNamespacedCustomObject({ ...resource, namespace: ns, name: 'example-icecream' });
    await waitFor(
      async () => {
        const [d, rs, pods] = await Promise.all([
          apps.listNamespacedDeployment({ namespace: ns }),
          apps.listNamespacedReplicaSet({ namespace: ns }),
          core.listNamespacedPod({ namespace: ns }),
        ]);
        return d.items.length + rs.items.length + pods.items.length === 0;
      },
      { message: 'the Deployment, its ReplicaSets and Pods to be garbage-collected', timeoutMs: 60_000 },
    );
  });
};

const noNode = await noReadyNodeSkip();
for (const mode of PIPELINE_MODES) describe(`icecream end to end (${mode})`, { skip: noNode }, suite(mode));
