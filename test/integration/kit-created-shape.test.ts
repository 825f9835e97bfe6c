/**
 * The lazy managedFields upgrade of created children (functions/kit/children.ts,
 * `CREATED_SHAPE_ANNOTATION`), the same in both modes: a created child costs its POST alone, carries
 * the shape of the body it was created from, and is converged with the create's `Update` entry by
 * any process (nothing remembered: a serverless instance, a restart); an apply in the created shape
 * needs no upgrade, one that stops setting a field is preceded by the csaupgrade PATCH, so that the
 * field is still removed; a child an older Levelset created (no annotation) is upgraded and applied once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { CREATED_SHAPE_ANNOTATION, reconcileChildren, selectorOf } from '../../functions/kit/children.ts';
import { type ResourceClient, resourceClient } from '../../functions/kit/client.ts';
import { configmaps, FIELD_MANAGER } from '../../functions/kit/index.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/test-cluster.ts';
import type { Owner } from '../../functions/kit/types.ts';

describe('kit: lazy managedFields upgrade of created children, by the shape they carry', () => {
  let cluster: TestCluster;
  let ns: string;
  let core: CoreV1Api;
  let owner: Owner;
  let writes: string[];
  let client: ResourceClient;

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    ns = await cluster.createNamespace('kit-lazy');
    const made = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'owner' } },
    });
    owner = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'owner', namespace: ns, uid: made.metadata?.uid ?? '' },
    };
    const live = resourceClient(cluster.kubeConfig);
    const counted =
      <K extends 'create' | 'apply' | 'patch' | 'replace' | 'delete'>(method: K) =>
      // biome-ignore lint/suspicious/noExplicitAny: forwards any write's arguments.
      (...args: any[]) => {
        writes.push(method);
        // biome-ignore lint/suspicious/noExplicitAny: forwards any write's arguments.
        return (live[method] as any)(...args);
      };
    client = {
      ...live,
      create: counted('create'),
      apply: counted('apply'),
      patch: counted('patch'),
      replace: counted('replace'),
      delete: counted('delete'),
    };
  });
  after(() => cluster?.stop());

  const child = (data: Record<string, string>): KubernetesObject & { data: Record<string, string> } => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'lazy-child' },
    data,
  });
  const converge = async (desired: KubernetesObject[]) => {
    writes = [];
    const listed = await client.list(configmaps, ns, {
      labelSelector: selectorOf({ 'levelset.dev/owner': owner.metadata.uid }),
    });
    const { changes } = await reconcileChildren({
      client,
      controller: 'kit-lazy',
      owner,
      owned: [{ type: { resource: configmaps }, listed }],
      desired,
    });
    return { changes, writes };
  };
  const live = () => core.readNamespacedConfigMap({ namespace: ns, name: 'lazy-child' });
  const entries = async () =>
    ((await live()).metadata?.managedFields ?? [])
      .filter((m) => m.manager === FIELD_MANAGER && !m.subresource)
      .map((m) => m.operation);

  it('creates with a POST alone, is converged with the create’s Update entry, and prunes a dropped field after the upgrade', async () => {
    const created = await converge([child({ value: 'a', extra: 'x' })]);
    assert.deepEqual(created.writes, ['create'], 'no managedFields PATCH after the create');
    assert.deepEqual(await entries(), ['Update']);

    const again = await converge([child({ value: 'a', extra: 'x' })]);
    assert.deepEqual(again, { changes: [], writes: [] }, 'a converged created child costs no write');

    // A value changes, the shape does not: an apply alone (it stops owning nothing the create set).
    const changed = await converge([child({ value: 'a2', extra: 'x' })]);
    assert.deepEqual(changed.writes, ['apply']);
    assert.deepEqual((await live()).data, { value: 'a2', extra: 'x' });
    assert.deepEqual((await entries()).sort(), ['Apply', 'Update']);
    assert.deepEqual(await converge([child({ value: 'a2', extra: 'x' })]), { changes: [], writes: [] });

    // The reconcile stops setting `extra`: the upgrade PATCH, then the apply that removes it.
    const dropped = await converge([child({ value: 'a' })]);
    assert.deepEqual((await live()).data, { value: 'a' }, 'extra is pruned');
    assert.deepEqual(dropped.writes, ['patch', 'apply']);
    assert.deepEqual(await entries(), ['Apply']);

    const converged = await converge([child({ value: 'a' })]);
    assert.deepEqual(converged, { changes: [], writes: [] });
  });

  it('the shape travels with the child: no process remembers it, and the first apply in another shape removes it', async () => {
    await core.deleteNamespacedConfigMap({ namespace: ns, name: 'lazy-child' });
    await converge([child({ value: 'b', extra: 'y' })]);
    const annotation = () => live().then((c) => c.metadata?.annotations?.[CREATED_SHAPE_ANNOTATION]);
    assert.ok(await annotation(), 'the create records the shape it was made from');
    // Every converge here is a new reconcileChildren call, as a fresh serverless instance's.
    assert.deepEqual((await converge([child({ value: 'b', extra: 'y' })])).writes, []);
    assert.deepEqual((await converge([child({ value: 'b2', extra: 'y' })])).writes, ['apply']);
    assert.ok(await annotation(), 'an apply in the created shape leaves it');
    const dropped = await converge([child({ value: 'b' })]);
    assert.deepEqual(dropped.writes, ['patch', 'apply']);
    assert.deepEqual((await live()).data, { value: 'b' }, 'extra is pruned');
    assert.equal(await annotation(), undefined, 'the apply in another shape removes it');
    assert.deepEqual((await converge([child({ value: 'b' })])).writes, []);
  });

  it('a child created without the annotation (an older Levelset, another client) is upgraded and applied once', async () => {
    await core.deleteNamespacedConfigMap({ namespace: ns, name: 'lazy-child' });
    await core.createNamespacedConfigMap({
      namespace: ns,
      fieldManager: FIELD_MANAGER,
      body: {
        metadata: {
          name: 'lazy-child',
          labels: { 'levelset.dev/controller': 'kit-lazy', 'levelset.dev/owner': owner.metadata.uid },
          ownerReferences: [
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              name: 'owner',
              uid: owner.metadata.uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        data: { value: 'c', extra: 'z' },
      },
    });
    const first = await converge([child({ value: 'c', extra: 'z' })]);
    assert.deepEqual(first.writes, ['patch', 'apply'], 'its Update entry may hold a field no body sets');
    assert.deepEqual(await entries(), ['Apply']);
    assert.deepEqual((await converge([child({ value: 'c', extra: 'z' })])).writes, []);
  });
});
