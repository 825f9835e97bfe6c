/**
 * The kit's children and a namespace being deleted, on an API server (the local one, or
 * TEST_KUBECONFIG's): a reconcile whose owner was read before its namespace's deletion began (an
 * informer's copy, or a GET racing the namespace controller) creates nothing there, fails nothing,
 * and the refused POST is counted (`levelset_rejected_writes_total`). Before, each such reconcile
 * failed on the 403 and was retried, one refused POST per child per attempt.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { rejectedWrites } from '../../core/metrics.ts';
import { reconcileChildren } from '../../functions/kit/children.ts';
import { resourceClient, resources } from '../../functions/kit/index.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { waitFor } from '../support/wait.ts';

const HOLD = 'test.levelset.dev/hold';

/** The count of refused creates of ConfigMaps into a terminating namespace so far, in this process. */
async function refusedTerminating(): Promise<number> {
  const { values } = await rejectedWrites.get();
  return values
    .filter((v) => v.labels.reason === 'NamespaceTerminating' && v.labels.resource === 'configmaps')
    .reduce((sum, v) => sum + v.value, 0);
}

describe('children into a terminating namespace', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let ns: string;

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    ns = await cluster.createNamespace('terminating');
  });

  after(async () => {
    // Let the namespace go: the held ConfigMap's finalizer removed.
    await core
      .patchNamespacedConfigMap({
        namespace: ns,
        name: 'hold',
        body: [{ op: 'remove', path: '/metadata/finalizers' }],
      })
      .catch(() => undefined);
    await cluster?.stop();
  });

  it('creates nothing more there, throws nothing, and counts the one refused create', async () => {
    const read = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'owner' } },
    });
    const owner = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'owner', namespace: ns, uid: read.metadata?.uid as string },
    };
    // Held by a finalizer, it keeps the namespace Terminating while the test runs.
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'hold', finalizers: [HOLD] } },
    });
    await core.deleteNamespace({ name: ns });
    await waitFor(async () => (await core.readNamespace({ name: ns })).status?.phase === 'Terminating', {
      message: `namespace ${ns} Terminating`,
      timeoutMs: 30_000,
    });
    const counted = await refusedTerminating();
    const child = (name: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name },
      data: { a: 'b' },
    });
    const result = await reconcileChildren({
      client: resourceClient(cluster.kubeConfig),
      controller: 'test',
      owner,
      owned: [{ type: { resource: resources.configmaps }, listed: [] }],
      desired: [child('first'), child('second')],
    });
    assert.deepEqual(result, { changes: [] });
    assert.equal(
      (await refusedTerminating()) - counted,
      1,
      'one create refused and counted; the second child not tried',
    );
  });
});
