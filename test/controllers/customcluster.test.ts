/**
 * The customcluster controller's reconcile against an API server (the local one, or
 * TEST_KUBECONFIG's): our CRD and the tutorial's example applied with `kubectl apply -f`, then
 * the kit's `reconcilerForTest` runs the reconcile directly. The cluster schedules and runs the
 * Pods (on the local server the simulated node, on a real one its scheduler and kubelet); the test
 * fails a Pod by hand (a crash). It asserts the Pods, the status, and the count of Pods created or
 * deleted where that count is the point; never the kit's request sequence.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ApiException, CoreV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { messageOf } from '../../examples/customcluster/controllers/customcluster/desired.ts';
import { customclusterController } from '../../examples/customcluster/controllers/customcluster/index.ts';
import { isControlledBy } from '../../functions/kit/index.ts';
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
const CRD = new URL('examples/customcluster/controllers/customcluster/crd.yaml', root).pathname;
const EXAMPLE = new URL('examples/customcluster/test/fixtures/upstream/customcluster-example.yaml', root)
  .pathname;
const EXAMPLE_MESSAGE = 'Trying to create my own custom resource';
const group = 'sde.dev';
const version = 'v1alpha1';
const plural = 'customclusters';

// biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
type Json = any;

describe('customcluster reconcile on an API server', { skip: await podsCannotRun() }, () => {
  let cluster: TestCluster;
  let workloads: { stop(): Promise<void> } | undefined;
  let ns: string;
  let customclusters: CustomObjects;
  let t: ReconcilerForTest;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;

  const kubectl = (...args: string[]) => exec('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args]);
  /** Reconciles `name` and returns the API requests it made. */
  const reconcile = async (name: string): Promise<string[]> => {
    const run = await t.reconcile({ namespace: ns, name });
    assert.equal(run.error, undefined, run.error?.message);
    return run.requests;
  };
  /** The Pods the requests created and deleted: the count that is the point of a scale. */
  const podWrites = (requests: string[]) => ({
    created: writesOf(requests).filter((r) => r === `POST /api/v1/namespaces/${ns}/pods`).length,
    deleted: writesOf(requests).filter((r) => r.startsWith(`DELETE /api/v1/namespaces/${ns}/pods/`)).length,
  });
  /** Every pod labelled `controller=<name>`, terminating ones included. */
  const labelled = async (name: string): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: ns, labelSelector: `controller=${name}` })).items;
  /** The live pods `cc` controls: not terminating, not finished. */
  const livePods = async (cc: Json): Promise<V1Pod[]> =>
    (await labelled(cc.metadata.name)).filter(
      (p) =>
        isControlledBy(p, cc) &&
        !p.metadata?.deletionTimestamp &&
        p.status?.phase !== 'Failed' &&
        p.status?.phase !== 'Succeeded',
    );
  /** Plays a crash: sets a pod's phase. */
  const setPhase = (pod: V1Pod, phase: string) =>
    core.patchNamespacedPodStatus(
      { namespace: ns, name: pod.metadata?.name ?? '', body: { status: { phase } } },
      mergePatch,
    );
  /** Waits until the cluster runs every live pod of `cc` (kubelet reports Running). */
  const runAll = (cc: Json) =>
    waitFor(async () => (await livePods(cc)).every((p) => p.status?.phase === 'Running'), {
      message: `the pods of ${cc.metadata.name} Running`,
      timeoutMs: 60_000,
    });
  before(async () => {
    cluster = await startTestCluster();
    workloads = await startWorkloads(cluster);
    t = reconcilerForTest(customclusterController, cluster.kubeconfigPath);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    ns = await cluster.createNamespace('cc');
    customclusters = customObjects(cluster.kubeConfig, { group, version, plural, kind: 'Customcluster' }, ns);
    await cluster.applyCrd(CRD, { group, version, plural }, ns);
  });

  after(async () => {
    await workloads?.stop();
    await cluster?.stop();
  });

  it('converges the tutorial example applied with kubectl apply -f: 5 pods running its message', async () => {
    await kubectl('apply', '-n', ns, '-f', EXAMPLE);
    const requests = await reconcile('cpod-f');
    assert.deepEqual(podWrites(requests), { created: 5, deleted: 0 }, requests.join(', '));

    const cc = await customclusters.get('cpod-f');
    const pods = await livePods(cc);
    assert.equal(pods.length, 5);
    for (const p of pods) {
      assert.equal(messageOf(p), EXAMPLE_MESSAGE);
      assert.equal(p.metadata?.labels?.controller, 'cpod-f');
      const [c] = p.spec?.containers ?? [];
      assert.equal(c?.name, 'nginx');
      assert.deepEqual(c?.command, ['/bin/sh', '-c', 'echo $MESSAGE; sleep 100']);
    }
    assert.equal(cc.status.count, 0, 'none running yet');
    assert.equal(readyCondition(cc)?.status, 'False');

    await runAll(cc);
    await reconcile('cpod-f');
    const running = await customclusters.get('cpod-f');
    assert.equal(running.status.count, 5);
    assert.equal(running.status.message, EXAMPLE_MESSAGE);
    assert.equal(readyCondition(running)?.status, 'True');
    assert.equal(readyCondition(running)?.observedGeneration, running.metadata.generation);
  });

  it('costs one GET and one LIST and writes nothing once converged', async () => {
    const before = await customclusters.get('cpod-f');
    const requests = await reconcile('cpod-f');
    assert.deepEqual(writesOf(requests), [], requests.join(', '));
    assert.equal(requests.length, 2, requests.join(', '));
    assert.equal(
      (await customclusters.get('cpod-f')).metadata.resourceVersion,
      before.metadata.resourceVersion,
    );
  });

  it('scales up: creates the difference', async () => {
    await customclusters.patchSpec('cpod-f', { count: 7 });
    const requests = await reconcile('cpod-f');
    assert.deepEqual(podWrites(requests), { created: 2, deleted: 0 }, requests.join(', '));
    const cc = await customclusters.get('cpod-f');
    assert.equal((await livePods(cc)).length, 7);
    await runAll(cc);
    await reconcile('cpod-f');
    const scaled = await customclusters.get('cpod-f');
    assert.equal(scaled.status.count, 7);
    assert.equal(readyCondition(scaled)?.status, 'True');
    assert.equal(readyCondition(scaled)?.observedGeneration, scaled.metadata.generation);
  });

  it('scales down: deletes the extra pods, and only those', async () => {
    const cc = await customclusters.get('cpod-f');
    const before = new Set((await livePods(cc)).map((p) => p.metadata?.uid));
    await customclusters.patchSpec('cpod-f', { count: 3 });
    const requests = await reconcile('cpod-f');
    assert.deepEqual(podWrites(requests), { created: 0, deleted: 4 }, requests.join(', '));
    const live = await livePods(cc);
    assert.equal(live.length, 3);
    for (const p of live) assert.ok(before.has(p.metadata?.uid), 'the survivors are pods that were there');
    await reconcile('cpod-f');
    const scaled = await customclusters.get('cpod-f');
    assert.equal(scaled.status.count, 3);
    assert.equal(readyCondition(scaled)?.status, 'True');
  });

  it('replaces the pods when the message changes', async () => {
    const cc = await customclusters.get('cpod-f');
    const old = new Set((await livePods(cc)).map((p) => p.metadata?.uid));
    await customclusters.patchSpec('cpod-f', { message: 'a new message' });
    const requests = await reconcile('cpod-f');
    assert.deepEqual(podWrites(requests), { created: 3, deleted: 3 }, requests.join(', '));
    const live = await livePods(cc);
    assert.equal(live.length, 3);
    for (const p of live) {
      assert.equal(messageOf(p), 'a new message');
      assert.ok(!old.has(p.metadata?.uid), 'a new pod');
    }
    const replacing = await customclusters.get('cpod-f');
    assert.equal(replacing.status.count, 0, 'the old pods no longer count, the new ones are not running yet');
    await runAll(cc);
    await reconcile('cpod-f');
    const replaced = await customclusters.get('cpod-f');
    assert.deepEqual([replaced.status.count, replaced.status.message], [3, 'a new message']);
    assert.equal(readyCondition(replaced)?.status, 'True');
  });

  it('does not count a Failed pod as live: replaces it, leaves it alone', async () => {
    const cc = await customclusters.get('cpod-f');
    const [victim] = await livePods(cc);
    assert.ok(victim);
    await setPhase(victim, 'Failed');
    const requests = await reconcile('cpod-f');
    assert.deepEqual(podWrites(requests), { created: 1, deleted: 0 }, requests.join(', '));
    assert.equal((await livePods(cc)).length, 3);
    const failed = (await labelled('cpod-f')).find((p) => p.metadata?.uid === victim.metadata?.uid);
    assert.equal(failed?.status?.phase, 'Failed', 'not deleted: finished pods are not ours to clean up');
    await runAll(cc);
    await reconcile('cpod-f');
    assert.equal((await customclusters.get('cpod-f')).status.count, 3);
  });

  it('never touches a pod it does not control, whatever its labels', async () => {
    const foreign = await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'not-ours', labels: { controller: 'cpod-f' } },
        spec: { containers: [{ name: 'nginx', image: 'nginx', env: [{ name: 'MESSAGE', value: 'other' }] }] },
      },
    });
    await customclusters.patchSpec('cpod-f', { count: 0 });
    const requests = [...(await reconcile('cpod-f')), ...(await reconcile('cpod-f'))]; // deletes its pods, sees them go
    assert.deepEqual(
      writesOf(requests).filter((r) => r.endsWith('/pods/not-ours')),
      [],
      `no write to the pod: ${requests.join(', ')}`,
    );
    const still = await core.readNamespacedPod({ namespace: ns, name: 'not-ours' });
    assert.equal(still.metadata?.uid, foreign.metadata?.uid);
    assert.equal(still.metadata?.deletionTimestamp, undefined);
    const cc = await customclusters.get('cpod-f');
    assert.equal((await livePods(cc)).length, 0);
    assert.equal(cc.status.count, 0);
    assert.equal(cc.status.message, '');
    assert.equal(readyCondition(cc)?.status, 'True', 'zero of zero is converged');
  });

  it('rejects invalid specs with 422 at the API server (the CRD schema), so nothing is reconciled', async () => {
    for (const spec of [{ message: 'm', count: -1 }, { message: 'm', count: 'x' }, { count: 1 }]) {
      await assert.rejects(
        custom.createNamespacedCustomObject({
          group,
          version,
          plural,
          namespace: ns,
          body: {
            apiVersion: `${group}/${version}`,
            kind: 'Customcluster',
            metadata: { name: 'invalid' },
            spec,
          },
        }),
        (err: unknown) => err instanceof ApiException && err.code === 422,
        JSON.stringify(spec),
      );
    }
    await assert.rejects(
      customclusters.patchSpec('cpod-f', { count: -1 }),
      (err: unknown) => err instanceof ApiException && err.code === 422,
    );
    assert.equal((await reconcile('invalid')).length, 1, 'the object does not exist: one GET, nothing else');
  });

  it('leaves no pod once the Customcluster is deleted (garbage collection through the owner reference)', async () => {
    await customclusters.patchSpec('cpod-f', { count: 2 });
    await reconcile('cpod-f');
    const cc = await customclusters.get('cpod-f');
    assert.equal((await livePods(cc)).length, 2);
    await custom.deleteNamespacedCustomObject({ group, version, plural, namespace: ns, name: 'cpod-f' });
    // The garbage collector deletes them and kubelet finishes each graceful delete: gone.
    await waitFor(async () => (await labelled('cpod-f')).every((p) => !isControlledBy(p, cc)), {
      message: 'the pods to be garbage-collected',
      timeoutMs: 60_000,
    });
    assert.ok(
      await core.readNamespacedPod({ namespace: ns, name: 'not-ours' }),
      'a pod it does not own survives',
    );
  });
});
