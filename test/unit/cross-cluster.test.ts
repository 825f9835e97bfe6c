// Children in other clusters, the pure parts: the kit's ownership marks across clusters, the
// replicator's cluster selection and its watch map back to the source's cluster. (The relay
// publishing a key a map named for another cluster is the relay's own test, in
// test/unit/relay-kit-controllers.test.ts.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import type { MapContext, Watch, WatchEvent } from '../../core/contract/controller.ts';
import { createSecretReplicator } from '../../functions/controllers/secret-replicator/index.ts';
import {
  COPIES,
  COPY_LABEL,
  desiredCopy,
  REASON_INVALID_REPLICATE_TO_CLUSTERS,
  REPLICATE_TO_CLUSTERS_ANNOTATION,
  SOURCE_ANNOTATION,
  SOURCE_CLUSTER_ANNOTATION,
  selectClusters,
  sourceClusterOf,
} from '../../functions/controllers/secret-replicator/plan.ts';
import {
  isOwnedAcross,
  mapToOwnerAnnotation,
  markedChild,
  planCrossNamespaceChildren,
  trackingInCluster,
} from '../../functions/kit/cross-namespace.ts';

const source = { namespace: 'shared', name: 'db' };
const sourceSecret = (annotations: Record<string, string> = {}): V1Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'db', namespace: 'shared', resourceVersion: '7', annotations },
  type: 'Opaque',
  data: { password: 'cHc=' },
});

describe('ownership across clusters (kit)', () => {
  const inB = trackingInCluster(COPIES, 'cluster-a');
  const local = markedChild(desiredCopy(sourceSecret(), source, 'team'), source, COPIES);
  const remote = markedChild(desiredCopy(sourceSecret(), source, 'team'), source, inB);

  it('a child in another cluster carries its owner cluster; one in the owner cluster none', () => {
    assert.equal(remote.metadata?.annotations?.[SOURCE_CLUSTER_ANNOTATION], 'cluster-a');
    assert.equal(local.metadata?.annotations?.[SOURCE_CLUSTER_ANNOTATION], undefined);
    assert.equal(sourceClusterOf(remote.metadata), 'cluster-a');
    assert.equal(sourceClusterOf(local.metadata), undefined);
  });

  it("a copy of cluster A's source is never taken for a copy of this cluster's namesake, nor the other way", () => {
    assert.equal(isOwnedAcross(remote, source, inB), true);
    assert.equal(isOwnedAcross(remote, source, COPIES), false);
    assert.equal(isOwnedAcross(local, source, COPIES), true);
    assert.equal(isOwnedAcross(local, source, inB), false);
    assert.equal(isOwnedAcross(remote, source, trackingInCluster(COPIES, 'cluster-c')), false);
  });

  it('the plan in another cluster: a local copy of a namesake is a conflict, never pruned or overwritten', () => {
    const desired = [desiredCopy(sourceSecret(), source, 'team')];
    const plan = planCrossNamespaceChildren({ owner: source, tracking: inB, desired, observed: [local] });
    assert.deepEqual(plan.conflicts, [{ namespace: 'team', name: 'db' }]);
    assert.deepEqual([plan.create, plan.update, plan.delete], [[], [], []]);
    // No copy desired there: the namesake's copy is not ours to prune; our own copy is.
    const remoteElsewhere = { ...remote, metadata: { ...remote.metadata, namespace: 'team-2' } };
    const none = planCrossNamespaceChildren({
      owner: source,
      tracking: inB,
      desired: [],
      observed: [local, remoteElsewhere],
    });
    assert.deepEqual(
      none.delete.map((o) => o.metadata?.namespace),
      ['team-2'],
    );
  });

  it('a copy that lost its cluster mark is no longer ours: a conflict, never taken over', () => {
    const { [SOURCE_CLUSTER_ANNOTATION]: _, ...rest } = remote.metadata?.annotations ?? {};
    const stripped = { ...remote, metadata: { ...remote.metadata, annotations: rest } };
    const plan = planCrossNamespaceChildren({
      owner: source,
      tracking: inB,
      desired: [desiredCopy(sourceSecret(), source, 'team')],
      observed: [stripped],
    });
    assert.equal(plan.conflicts.length, 1);
  });

  it('trackingInCluster refuses a tracking without a clusterAnnotation', () => {
    const { clusterAnnotation: _, ...plain } = COPIES;
    assert.throws(() => trackingInCluster(plain, 'a'), /clusterAnnotation/);
  });

  it("mapToOwnerAnnotation names the owner's cluster when the child carries one", () => {
    const map = mapToOwnerAnnotation(COPIES);
    const ctx: MapContext = { primaryKeys: () => [], cluster: 'cluster-b' };
    assert.deepEqual(map({ type: 'MODIFIED', object: remote }, ctx), [{ ...source, cluster: 'cluster-a' }]);
    assert.deepEqual(map({ type: 'MODIFIED', object: local }, ctx), [source]);
  });
});

describe('levelset.dev/replicate-to-clusters', () => {
  const others = ['cluster-2', 'eu-west', 'eu-north', 'us-1'];
  const select = (value?: string) =>
    selectClusters(
      sourceSecret(value === undefined ? {} : { [REPLICATE_TO_CLUSTERS_ANNOTATION]: value }),
      others,
    );

  it('names and globs, in registry order; absent or empty: none', () => {
    assert.deepEqual(select(), []);
    assert.deepEqual(select(''), []);
    assert.deepEqual(select('cluster-2'), ['cluster-2']);
    assert.deepEqual(select(' us-1 , eu-* '), ['eu-west', 'eu-north', 'us-1']);
    assert.deepEqual(select('*'), others);
    assert.deepEqual(select('us-?'), ['us-1']);
    assert.deepEqual(select('eu'), [], 'a whole-id match');
    assert.deepEqual(select('nowhere'), []);
  });

  it('an item that is no cluster id or glob is terminal, with the source as the Event object', () => {
    for (const bad of ['Cluster-2', 'eu.*', 'a/b', 'x'.repeat(64)])
      assert.throws(
        () => select(bad),
        (err: { reason?: string; object?: KubernetesObject }) =>
          err.reason === REASON_INVALID_REPLICATE_TO_CLUSTERS && err.object?.metadata?.name === 'db',
        bad,
      );
  });
});

describe("the replicator's copy watch in a target cluster", () => {
  const controller = createSecretReplicator({
    config: { sourceNamespace: 'shared', excludeNamespaces: [] },
  });
  const copies = controller.watches.find((w) => w.labelSelector === COPY_LABEL) as Watch;
  const ctx: MapContext = { primaryKeys: () => [], cluster: 'cluster-b' };
  const copy = (cluster?: string): KubernetesObject => ({
    apiVersion: 'meta.k8s.io/v1',
    kind: 'PartialObjectMetadata',
    metadata: {
      namespace: 'team',
      name: 'db',
      labels: { [COPY_LABEL]: 'db' },
      annotations: {
        [SOURCE_ANNOTATION]: 'shared/db',
        ...(cluster ? { [SOURCE_CLUSTER_ANNOTATION]: cluster } : {}),
      },
    },
  });
  const map = (type: WatchEvent['type'], object: KubernetesObject) => copies.map({ type, object }, ctx);

  it("a modified or deleted copy of another cluster's source → the source's key in its cluster", () => {
    assert.deepEqual(map('MODIFIED', copy('cluster-a')), [{ ...source, cluster: 'cluster-a' }]);
    assert.deepEqual(map('DELETED', copy('cluster-a')), [{ ...source, cluster: 'cluster-a' }]);
  });

  it('a created copy maps to no key (the echo of the source reconcile, or of the initial LIST)', () => {
    assert.deepEqual(map('ADDED', copy('cluster-a')), []);
    assert.deepEqual(map('ADDED', copy()), []);
  });

  it("a copy of this cluster's source keeps the in-cluster rules", () => {
    assert.deepEqual(map('MODIFIED', copy()), [source]);
    assert.deepEqual(map('DELETED', copy()), [{ namespace: 'team', name: 'db' }]);
  });
});
