/**
 * The kit's children in other namespaces against an API server (the local one, or TEST_KUBECONFIG's
 * cluster): a controller whose primaries are ConfigMaps pinned to one namespace (no spec, no status
 * subresource) and whose children are ConfigMaps of the same name in the namespaces its
 * `data.targets` lists, tracked by label and owner annotation. Each reconcile's requests are asserted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import { acrossNamespaces, configmaps, defineController, type Key } from '../../functions/kit/index.ts';
import {
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
} from '../../functions/kit/testing.ts';

const OWNER = 'kit-cross.levelset.dev/owner';
const ORIGIN = 'kit-cross.levelset.dev/origin';

describe('kit: children in other namespaces, tracked by label and owner annotation', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let home: string;
  let a: string;
  let b: string;
  let t: ReconcilerForTest;
  const narrowed: (string | undefined)[] = [];

  const fanOut = () =>
    defineController({
      name: 'kit-cross',
      primary: configmaps,
      namespace: home,
      owns: [
        acrossNamespaces(configmaps, {
          labels: (owner: Key) => ({ [OWNER]: owner.name }),
          ownerAnnotation: ORIGIN,
        }),
      ],
      synced: (changes) => changes.join(', '),
      reconcile({ object, scope }) {
        narrowed.push(scope.namespace);
        const data = (object as V1ConfigMap).data ?? {};
        const targets = (data.targets ?? '').split(',').filter((ns) => ns !== '');
        return {
          children: targets.map((namespace) => ({
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: object.metadata.name, namespace },
            data: { value: data.value ?? '' },
          })),
        };
      },
    });
  const read = (namespace: string, name: string) =>
    core.readNamespacedConfigMap({ namespace, name }).catch((err: { code?: number }) => {
      if (err.code === 404) return undefined;
      throw err;
    });
  const setPrimary = async (name: string, data: Record<string, string>) => {
    const current = await read(home, name);
    if (current) await core.replaceNamespacedConfigMap({ namespace: home, name, body: { ...current, data } });
    else await core.createNamespacedConfigMap({ namespace: home, body: { metadata: { name }, data } });
  };
  const writes = (requests: string[]) =>
    requests.filter((r) => !r.startsWith('GET')).map((r) => r.split('?')[0] ?? '');

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    home = await cluster.createNamespace('kit-cross-home');
    a = await cluster.createNamespace('kit-cross-a');
    b = await cluster.createNamespace('kit-cross-b');
    t = reconcilerForTest(fanOut(), cluster.kubeconfigPath, { query: true });
  });
  after(() => cluster?.stop());

  it('creates each child with the labels and the owner annotation; the primary gets no status', async () => {
    await setPrimary('shared', { targets: `${a},${b}`, value: 'one' });
    const run = await t.reconcile({ namespace: home, name: 'shared' });
    assert.equal(run.error, undefined, run.error?.message);
    for (const ns of [a, b]) {
      const child = await read(ns, 'shared');
      assert.equal(child?.data?.value, 'one');
      assert.equal(child?.metadata?.labels?.[OWNER], 'shared');
      assert.equal(child?.metadata?.annotations?.[ORIGIN], `${home}/shared`);
      assert.equal(child?.metadata?.ownerReferences, undefined, 'owner references cannot cross namespaces');
    }
    assert.deepEqual(writes(run.requests).sort(), [
      `POST /api/v1/namespaces/${a}/configmaps`,
      `POST /api/v1/namespaces/${b}/configmaps`,
      `POST /api/v1/namespaces/${home}/events`,
    ]);
    assert.equal((await read(home, 'shared'))?.metadata?.annotations, undefined);
  });

  it('a converged primary costs a GET and one LIST across namespaces, and writes nothing', async () => {
    const run = await t.reconcile({ namespace: home, name: 'shared' });
    assert.deepEqual(run.requests, [
      `GET /api/v1/namespaces/${home}/configmaps/shared`,
      `GET /api/v1/configmaps?labelSelector=${encodeURIComponent(`${OWNER}=shared`)}`,
    ]);
  });

  it('restores a child edited by hand with a PUT, keeping annotations of others', async () => {
    const child = (await read(a, 'shared')) as V1ConfigMap;
    child.data = { value: 'tampered', extra: 'x' };
    child.metadata = { ...child.metadata, annotations: { ...child.metadata?.annotations, note: 'keep' } };
    await core.replaceNamespacedConfigMap({ namespace: a, name: 'shared', body: child });
    const run = await t.reconcile({ namespace: home, name: 'shared' });
    assert.deepEqual(writes(run.requests), [
      `PUT /api/v1/namespaces/${a}/configmaps/shared`,
      `POST /api/v1/namespaces/${home}/events`,
    ]);
    const restored = await read(a, 'shared');
    assert.deepEqual(restored?.data, { value: 'one' });
    assert.equal(restored?.metadata?.annotations?.note, 'keep');
  });

  it('never writes an object it does not own: a Warning ErrResourceExists Event, the other namespaces converge', async () => {
    await core.createNamespacedConfigMap({
      namespace: a,
      body: { metadata: { name: 'theirs' }, data: { value: 'theirs' } },
    });
    await setPrimary('theirs', { targets: `${a},${b}`, value: 'ours' });
    const run = await t.reconcile({ namespace: home, name: 'theirs' });
    assert.equal(run.error, undefined, run.error?.message);
    assert.equal((await read(a, 'theirs'))?.data?.value, 'theirs');
    assert.equal((await read(b, 'theirs'))?.data?.value, 'ours');
    const events = await core.listNamespacedEvent({ namespace: home });
    const warning = events.items.find(
      (e) => e.involvedObject.name === 'theirs' && e.reason === 'ErrResourceExists' && e.type === 'Warning',
    );
    assert.match(warning?.message ?? '', new RegExp(`not managed by Levelset in namespace\\(s\\) ${a}`));
    // Gone: its children are pruned by the kit (no garbage collector does it), and only those.
    await core.deleteNamespacedConfigMap({ namespace: home, name: 'theirs' });
    const gone = await t.reconcile({ namespace: home, name: 'theirs' });
    assert.deepEqual(gone.result, {});
    assert.deepEqual(writes(gone.requests), [`DELETE /api/v1/namespaces/${b}/configmaps/theirs`]);
    assert.equal((await read(a, 'theirs'))?.data?.value, 'theirs');
    const again = await t.reconcile({ namespace: home, name: 'theirs' });
    assert.deepEqual(again.result, { notFound: true }, 'nothing left: the key names nothing');
    assert.equal(again.requests.length, 2);
  });

  it('prunes a child no longer desired with a precondition', async () => {
    await setPrimary('shared', { targets: a, value: 'one' });
    const run = await t.reconcile({ namespace: home, name: 'shared' });
    assert.deepEqual(writes(run.requests), [
      `DELETE /api/v1/namespaces/${b}/configmaps/shared`,
      `POST /api/v1/namespaces/${home}/events`,
    ]);
    assert.equal(await read(b, 'shared'), undefined);
  });

  it('a key in another namespace converges the children of that namespace alone', async () => {
    await setPrimary('shared', { targets: `${a},${b}`, value: 'two' });
    narrowed.length = 0;
    const run = await t.reconcile({ namespace: b, name: 'shared' });
    assert.equal(run.error, undefined, run.error?.message);
    assert.deepEqual(narrowed, [b]);
    assert.equal((await read(b, 'shared'))?.data?.value, 'two');
    assert.equal((await read(a, 'shared'))?.data?.value, 'one', 'another namespace is left alone');
    assert.ok(
      run.requests.includes(
        `GET /api/v1/namespaces/${b}/configmaps?labelSelector=${encodeURIComponent(`${OWNER}=shared`)}`,
      ),
      run.requests.join('\n'),
    );
    assert.ok(!writes(run.requests).some((w) => w.includes(`/namespaces/${a}/`)), run.requests.join('\n'));
  });
});
