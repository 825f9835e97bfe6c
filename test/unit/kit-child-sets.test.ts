// The kit's child sets (functions/kit/child-sets.ts), each alone against a recording fake client:
// when each one reads, what it writes, and what it leaves alone. Against an API server:
// test/integration/kit.test.ts (owned), kit-cross-namespace.test.ts, multi-cluster-secrets.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import { createLogger } from '../../core/log.ts';
import {
  acrossClusters,
  acrossNamespaces,
  childrenInOtherClusters,
  childrenInOtherNamespaces,
  childSetsOf,
  convergeChildren,
  ownedChildren,
} from '../../functions/kit/child-sets.ts';
import {
  type CrossNamespaceTracking,
  configmaps,
  deployments,
  namespaces,
  type PrimaryObject,
  type ResourceClient,
} from '../../functions/kit/index.ts';
import type { ChildContext, Scope } from '../../functions/kit/types.ts';

const primary = (deleting = false): PrimaryObject => ({
  apiVersion: 'test.levelset.dev/v1',
  kind: 'Widget',
  metadata: { name: 'w', namespace: 'ns', uid: 'uid-1', ...(deleting ? { deletionTimestamp: 'now' } : {}) },
});
const tracking: CrossNamespaceTracking & { clusterAnnotation: string } = {
  labels: (owner) => ({ 'test/owner': owner.name }),
  ownerAnnotation: 'test/origin',
  contentHashAnnotation: 'test/hash',
  clusterAnnotation: 'test/cluster',
};
const copy = (namespace: string): KubernetesObject => ({
  apiVersion: 'v1',
  kind: 'PartialObjectMetadata',
  metadata: {
    name: 'w',
    namespace,
    uid: `uid-${namespace}`,
    resourceVersion: '1',
    labels: { 'test/owner': 'w' },
    annotations: { 'test/origin': 'ns/w' },
  },
});

/** A client answering LISTs with `listed`, recording every request as `VERB where`. */
function fakeClient(listed: KubernetesObject[] = []) {
  const requests: string[] = [];
  const client = {
    dryRun: false,
    list: async (r: { plural: string }, namespace: string | undefined, q?: { labelSelector?: string }) => {
      requests.push(`LIST ${r.plural} ${namespace ?? '*'} ${q?.labelSelector ?? ''}`);
      return listed;
    },
    create: async (r: { plural: string }, o: KubernetesObject) => {
      requests.push(`CREATE ${r.plural} ${o.metadata?.namespace}/${o.metadata?.name}`);
      return o;
    },
    delete: async (r: { plural: string }, o: KubernetesObject) => {
      requests.push(`DELETE ${r.plural} ${o.metadata?.namespace}/${o.metadata?.name}`);
      return true;
    },
  } as unknown as ResourceClient;
  return { client, requests };
}
const records: string[] = [];
const scope = (client: ResourceClient, more: Partial<Scope> = {}): ChildContext => ({
  client,
  controller: 'widget',
  scope: { key: { namespace: 'ns', name: 'w' }, otherClusters: [], ...more },
  ctx: {
    cluster: 'a',
    log: createLogger('test', { write: () => undefined }),
    events: { record: async (_o, type, reason) => void records.push(`${type} ${reason}`) },
  },
});

describe('ownedChildren: in the primary namespace, by owner references', () => {
  it("lists each type by the owner's UID once the primary is read, and writes nothing while it is being deleted", async () => {
    const { client, requests } = fakeClient();
    const set = ownedChildren(scope(client), [{ resource: deployments }]);
    assert.deepEqual(requests, [], 'the LIST needs the UID: nothing before observe');
    const [listing] = (await set.observe?.(primary())) ?? [];
    assert.equal(listing?.type.resource, deployments);
    assert.deepEqual(requests, [
      'LIST deployments ns levelset.dev/controller=widget,levelset.dev/owner=uid-1',
    ]);
    const child = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' } };
    assert.deepEqual(await set.converge(primary(true), { children: [child] }), {
      changes: [],
      pruning: false,
    });
    assert.deepEqual(await set.converge(undefined, undefined), { changes: [], pruning: false });
    assert.equal(requests.length, 1, 'garbage collection removes them: no write');
  });
});

describe('ownedChildren: where owner references may point', () => {
  it('refuses a cluster-scoped child of a namespaced primary, before any write', async () => {
    const { client, requests } = fakeClient();
    const set = ownedChildren(scope(client), [{ resource: namespaces }]);
    await set.observe?.(primary());
    await assert.rejects(
      set.converge(primary(), {
        children: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n' } }],
      }),
      /a Namespace is cluster-scoped: no owner reference may point from it at a namespaced Widget/,
    );
    assert.ok(!requests.some((r) => r.startsWith('CREATE')));
  });
});

describe('ownedChildren of a cluster-scoped primary', () => {
  it('says where each child is: children of one name in two namespaces are two changes', async () => {
    const { client, requests } = fakeClient();
    const owner: PrimaryObject = {
      apiVersion: 'test.levelset.dev/v1',
      kind: 'Tenant',
      metadata: { name: 't', namespace: '', uid: 'uid-t' },
    };
    const set = ownedChildren(scope(client, { key: { namespace: '', name: 't' } }), [
      { resource: configmaps },
    ]);
    await set.observe?.(owner);
    const child = (namespace: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'quota', namespace },
    });
    const done = await set.converge(owner, { children: [child('team-a'), child('team-b')] });
    assert.deepEqual(done.changes, ['created ConfigMap team-a/quota', 'created ConfigMap team-b/quota']);
    assert.deepEqual(requests.slice(1), ['CREATE configmaps team-a/quota', 'CREATE configmaps team-b/quota']);
  });
});

describe('childrenInOtherNamespaces: tracked by label, pruned by the kit', () => {
  it("building sends nothing; observeKey sends a hash-tracked type's LIST (metadata only), beside the primary's GET", async () => {
    const { client, requests } = fakeClient();
    const set = childrenInOtherNamespaces(scope(client), [acrossNamespaces(configmaps, tracking)]);
    assert.deepEqual(requests, []);
    set.observeKey?.();
    assert.deepEqual(requests, ['LIST configmaps * test/owner=w']);
  });

  it('a key naming one namespace lists there alone', () => {
    const { client, requests } = fakeClient();
    childrenInOtherNamespaces(scope(client, { namespace: 'team-a' }), [
      acrossNamespaces(configmaps, tracking),
    ]).observeKey?.();
    assert.deepEqual(requests, ['LIST configmaps team-a test/owner=w']);
  });

  it('the primary gone: every owned child pruned, from that one LIST; no children returned: left alone', async () => {
    const gone = fakeClient([copy('team-a'), copy('team-b')]);
    const set = childrenInOtherNamespaces(scope(gone.client), [acrossNamespaces(configmaps, tracking)]);
    set.observeKey?.();
    const done = await convergeChildren([set], undefined, undefined);
    assert.equal(done.pruning, true);
    assert.deepEqual(done.changes, ['pruned ConfigMap team-a/w', 'pruned ConfigMap team-b/w']);
    assert.deepEqual(gone.requests.slice(1).sort(), [
      'DELETE configmaps team-a/w',
      'DELETE configmaps team-b/w',
    ]);
    assert.equal(gone.requests.filter((r) => r.startsWith('LIST')).length, 1);

    const alone = fakeClient([copy('team-a')]);
    const kept = childrenInOtherNamespaces(scope(alone.client), [acrossNamespaces(configmaps, tracking)]);
    assert.deepEqual(await kept.converge(primary(), {}), { changes: [], pruning: false });
    assert.ok(!alone.requests.some((r) => r.startsWith('DELETE')));
  });
});

describe('childrenInOtherClusters: the same in each other cluster', () => {
  const clusters = (ids: string[]) => ({ ids, kubeConfig: () => undefined });

  it('nothing outside the scope’s other clusters, or for a cluster the reconcile left out', async () => {
    const { client, requests } = fakeClient();
    const types = [acrossClusters(configmaps, tracking)];
    const none = childrenInOtherClusters(scope(client), types);
    assert.deepEqual(await none.converge(undefined, undefined), { changes: [], pruning: false });
    const all = scope(client, { otherClusters: ['b'] });
    all.ctx = { ...all.ctx, clusters: clusters(['a', 'b']) };
    assert.deepEqual(await childrenInOtherClusters(all, types).converge(primary(), { otherClusters: {} }), {
      changes: [],
      pruning: false,
    });
    assert.deepEqual(requests, []);
  });

  it('a cluster that cannot be reached is returned as the failure, not thrown: the others still converge', async () => {
    const { client } = fakeClient();
    const s = scope(client, { otherClusters: ['b', 'c'] });
    s.ctx = { ...s.ctx, clusters: clusters(['a', 'b', 'c']) };
    const done = await childrenInOtherClusters(s, [acrossClusters(configmaps, tracking)]).converge(
      undefined,
      undefined,
    );
    assert.match(String(done.failed), /unknown cluster "b"/);
  });
});

describe('owned kinds, each with its strategy', () => {
  it('one group of sets per strategy, in the order declared; building them sends nothing', () => {
    const { client, requests } = fakeClient();
    const sets = childSetsOf([
      { resource: deployments },
      acrossNamespaces(configmaps, tracking),
      acrossClusters(configmaps, tracking),
    ])(scope(client));
    // In the namespace (1 set), across namespaces (1), across clusters (its namespaces' and its clusters').
    assert.equal(sets.length, 4);
    assert.deepEqual(requests, []);
  });
});
