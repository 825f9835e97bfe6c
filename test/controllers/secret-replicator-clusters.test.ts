/**
 * The secret-replicator's copies in other clusters against two API servers (local ones; with
 * `TEST_KUBECONFIG`, `TEST_KUBECONFIG_2` must name a second cluster, else skipped): `reconcile`
 * and `listKeys` called directly through the kit's `reconcilerForTest` with a registry of two
 * clusters, no relay or Pub/Sub. Each cluster's requests are counted on the client side: the cost
 * of the opt-in, and that a source without it costs the other cluster one metadata-only LIST.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import {
  createSecretReplicator,
  listSourceKeys,
} from '../../functions/controllers/secret-replicator/index.ts';
import {
  REPLICATE_TO_ANNOTATION,
  REPLICATE_TO_CLUSTERS_ANNOTATION,
  SOURCE_CLUSTER_ANNOTATION,
} from '../../functions/controllers/secret-replicator/plan.ts';
import {
  type ReconcilerForTest,
  reconcilerForTest,
  secondClusterSkip,
  startSecondTestCluster,
  startTestCluster,
  type TestCluster,
  uniqueSuffix,
  writesOf,
} from '../../functions/kit/testing.ts';

const A = 'east';
const B = 'west';
const run = uniqueSuffix();
const b64 = (s: string) => Buffer.from(s).toString('base64');

const skip = secondClusterSkip;

describe('secret-replicator: copies in another cluster (two API servers)', { skip }, () => {
  let east: TestCluster;
  let west: TestCluster;
  let sourceNs: string;
  let targetNs: string;
  let t: ReconcilerForTest;
  const core = (c: TestCluster) => c.kubeConfig.makeApiClient(CoreV1Api);
  const read = (c: TestCluster, namespace: string, name: string) =>
    core(c)
      .readNamespacedSecret({ namespace, name })
      .catch((err: { code?: number }) => {
        if (err.code === 404) return undefined;
        throw err;
      });
  const makeSource = (name: string, annotations: Record<string, string>) =>
    core(east).createNamespacedSecret({
      namespace: sourceNs,
      body: {
        metadata: { name, annotations: { [REPLICATE_TO_ANNOTATION]: `xw-${run}-.*`, ...annotations } },
        type: 'Opaque',
        data: { password: b64('pw') },
      },
    });
  const reconcile = (name: string) => t.reconcile({ namespace: sourceNs, name });
  const westRequests = () => t.otherKubeConfigs.get(B)?.requests ?? [];

  before(async () => {
    east = await startTestCluster();
    west = await startSecondTestCluster();
    sourceNs = await east.createNamespace(`xw-src-${run}`);
    targetNs = await west.createNamespace(`xw-${run}-team`);
    const controller = createSecretReplicator({
      config: { sourceNamespace: sourceNs, excludeNamespaces: [] },
    });
    t = reconcilerForTest(controller, east.kubeconfigPath, {
      cluster: A,
      otherClusters: { [B]: west.kubeconfigPath },
    });
  });

  after(async () => {
    await west?.stop();
    await east?.stop();
  });

  it('creates the copy in the other cluster, marked with the source cluster; converged, 2 more requests there', async () => {
    await makeSource('db', { [REPLICATE_TO_CLUSTERS_ANNOTATION]: 'w*' });
    const first = await reconcile('db');
    assert.equal(first.error, undefined);
    const copy = await read(west, targetNs, 'db');
    assert.equal(copy?.metadata?.annotations?.[SOURCE_CLUSTER_ANNOTATION], A);
    assert.equal(copy?.data?.password, b64('pw'));
    const converged = await reconcile('db');
    assert.equal(converged.result?.changed, undefined, 'nothing written');
    assert.equal(converged.requests.length, 3, converged.requests.join('\n'));
    // 2 reads in the other cluster (its namespaces, its copies), no write.
    assert.equal(westRequests().length, 2, westRequests().join('\n'));
    assert.deepEqual(writesOf(westRequests()), []);
  });

  it('a source without the opt-in costs the other cluster one LIST and writes nothing there', async () => {
    await makeSource('plain', {});
    const run1 = await reconcile('plain');
    assert.equal(run1.error, undefined);
    assert.equal(westRequests().length, 1, westRequests().join('\n'));
    assert.deepEqual(writesOf(westRequests()), [], 'a read: the LIST of copies');
    assert.equal(await read(west, targetNs, 'plain'), undefined);
  });

  it("the other cluster's resync names the source in its own cluster; deleted, the source's key prunes the copy there", async () => {
    const keys = [];
    for await (const k of listSourceKeys(
      { kubeConfig: west.kubeConfig },
      {
        sourceNamespace: 'levelset-system',
        excludeNamespaces: [],
      },
    ))
      if (k.namespace === sourceNs) keys.push(k); // a shared real cluster may hold other runs' copies
    assert.deepEqual(keys, [{ namespace: sourceNs, name: 'db', cluster: A }]);
    await core(east).deleteNamespacedSecret({ namespace: sourceNs, name: 'db' });
    const gone = await reconcile('db');
    assert.equal(gone.result?.notFound, undefined, 'a copy was pruned: not yet notFound');
    assert.equal(await read(west, targetNs, 'db'), undefined);
    assert.equal((await reconcile('db')).result?.notFound, true, 'nothing left anywhere');
  });

  it('an invalid replicate-to-clusters is terminal, nothing written in either cluster', async () => {
    await makeSource('bad', { [REPLICATE_TO_CLUSTERS_ANNOTATION]: 'West' });
    const bad = await reconcile('bad');
    assert.equal(bad.error?.reason, 'InvalidReplicateToClusters');
    assert.equal(westRequests().length, 0, westRequests().join('\n'));
    assert.equal(await read(west, targetNs, 'bad'), undefined);
  });

  it('leaves a foreign Secret of the other cluster alone and says so on the source', async () => {
    const foreign = (await core(west).createNamespacedSecret({
      namespace: targetNs,
      body: { metadata: { name: 'taken' }, type: 'Opaque', data: { password: b64('theirs') } },
    })) as V1Secret;
    await makeSource('taken', { [REPLICATE_TO_CLUSTERS_ANNOTATION]: B });
    const r = await reconcile('taken');
    assert.equal(r.error, undefined, 'a conflict is no failure');
    const after = await read(west, targetNs, 'taken');
    assert.equal(after?.metadata?.resourceVersion, foreign.metadata?.resourceVersion);
    const events = await core(east).listNamespacedEvent({ namespace: sourceNs });
    const warning = events.items.find(
      (e) => e.reason === 'ErrResourceExists' && e.involvedObject.name === 'taken',
    );
    assert.match(warning?.message ?? '', new RegExp(`in cluster ${B} in namespace\\(s\\) ${targetNs}`));
  });
});
