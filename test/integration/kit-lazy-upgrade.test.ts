/**
 * The in-process mode's lazy managedFields upgrade (functions/kit/children.ts, `lazyUpgrade`): a
 * created child costs its POST alone and is converged with the create's `Update` entry; an apply
 * in the created shape needs no upgrade, one that stops setting a field is preceded by the
 * csaupgrade PATCH, so that the field is still removed; a child this process did not create (a restart) is applied once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { forgetCreatedChildren, reconcileChildren, selectorOf } from '../../functions/kit/children.ts';
import { type ResourceClient, resourceClient } from '../../functions/kit/client.ts';
import { configmaps, FIELD_MANAGER } from '../../functions/kit/index.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/test-cluster.ts';
import type { Owner } from '../../functions/kit/types.ts';

describe('kit: lazy managedFields upgrade of created children (in-process mode)', () => {
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
  const converge = async (desired: KubernetesObject[], lazyUpgrade = true) => {
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
      lazyUpgrade,
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

  it('a created child this process does not remember (a restart) is upgraded and applied once', async () => {
    await core.deleteNamespacedConfigMap({ namespace: ns, name: 'lazy-child' });
    await converge([child({ value: 'b', extra: 'y' })]);
    forgetCreatedChildren();
    const restarted = await converge([child({ value: 'b' })]);
    assert.deepEqual((await live()).data, { value: 'b' });
    assert.deepEqual(restarted.writes, ['patch', 'apply']);
    assert.deepEqual((await converge([child({ value: 'b' })])).writes, []);
  });

  it('without lazyUpgrade (the serverless mode) the create is followed by the managedFields PATCH', async () => {
    await core.deleteNamespacedConfigMap({ namespace: ns, name: 'lazy-child' });
    const created = await converge([child({ value: 'c' })], false);
    assert.deepEqual(created.writes, ['create', 'patch']);
    assert.deepEqual(await entries(), ['Apply']);
  });
});
