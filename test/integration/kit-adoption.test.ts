/**
 * Children as users need them (issue 41), against an API server (the local one, or
 * TEST_KUBECONFIG's cluster): a cluster-scoped primary, a Tenant, keeps a Namespace and a ConfigMap
 * in it per namespace it lists. Namespaces are adopted when they exist without a controller (`adopt:
 * true`) and let go, not deleted, when no longer listed (`prune: 'orphan'`); a Namespace another
 * Tenant controls is reported (`Ready=False/ErrResourceExists`) and does not stop the others.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import * as z from 'zod';
import {
  configmaps,
  customResource,
  defineController,
  findCondition,
  namespaces,
  parseConditions,
} from '../../functions/kit/index.ts';
import {
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
  uniqueSuffix,
} from '../../functions/kit/testing.ts';

const GROUP = 'kit-adoption.levelset.dev';
const tenants = customResource({ group: GROUP, version: 'v1', kind: 'Tenant', scope: 'Cluster' });
const suffix = uniqueSuffix();
const ns = (n: string) => `kit-adopt-${suffix}-${n}`;
const changes: string[][] = [];

const tenantController = defineController({
  name: 'kit-adoption',
  primary: tenants,
  spec: z.object({ namespaces: z.array(z.string()) }),
  owns: [{ resource: namespaces, adopt: true, prune: 'orphan' }, configmaps],
  synced: (made) => {
    changes.push([...made]);
    return 'synced';
  },
  reconcile({ spec, object }) {
    return {
      children: spec.namespaces.flatMap((name) => [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { tenant: object.metadata.name } } },
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'tenant', namespace: name },
          data: { tenant: object.metadata.name },
        },
      ]),
    };
  },
});

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `tenants.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Cluster',
    names: { kind: 'Tenant', listKind: 'TenantList', plural: 'tenants', singular: 'tenant' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: { namespaces: { type: 'array', items: { type: 'string' } } },
              },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

describe('kit: adoption, orphaning and a taken name, with a cluster-scoped primary', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let t: ReconcilerForTest;
  const plural = { group: GROUP, version: 'v1', plural: 'tenants' };
  const tenant = (name: string, namespaces: string[]) =>
    custom.createClusterCustomObject({
      ...plural,
      body: { apiVersion: `${GROUP}/v1`, kind: 'Tenant', metadata: { name }, spec: { namespaces } },
    });
  const setNamespaces = (name: string, namespaces: string[]) =>
    custom.patchClusterCustomObject({
      ...plural,
      name,
      body: [{ op: 'replace', path: '/spec/namespaces', value: namespaces }],
    });
  const ready = async (name: string) => {
    const o = (await custom.getClusterCustomObject({ ...plural, name })) as {
      status?: { conditions?: unknown };
    };
    return findCondition(parseConditions(o.status?.conditions), 'Ready');
  };

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    await cluster.createCrd(crd, plural);
    t = reconcilerForTest(tenantController, cluster.kubeconfigPath);
  });
  after(async () => {
    for (const name of [`a-${suffix}`, `b-${suffix}`])
      await custom.deleteClusterCustomObject({ ...plural, name }).catch(() => undefined);
    for (const n of ['adopted', 'held', 'made'])
      await core.deleteNamespace({ name: ns(n) }).catch(() => undefined);
    await cluster?.stop();
  });

  it('adopts a Namespace nobody controls, and creates what is missing', async () => {
    await core.createNamespace({ body: { metadata: { name: ns('adopted'), labels: { theirs: 'kept' } } } });
    await tenant(`a-${suffix}`, [ns('adopted')]);
    await t.converge({ namespace: '', name: `a-${suffix}` });
    const adopted = await core.readNamespace({ name: ns('adopted') });
    assert.equal(adopted.metadata?.ownerReferences?.[0]?.name, `a-${suffix}`);
    assert.equal(adopted.metadata?.ownerReferences?.[0]?.controller, true);
    assert.equal(adopted.metadata?.labels?.theirs, 'kept', 'its own labels kept');
    assert.equal(adopted.metadata?.labels?.tenant, `a-${suffix}`);
    assert.ok(changes.flat().includes(`adopted Namespace ${ns('adopted')}`), JSON.stringify(changes));
    assert.ok(changes.flat().includes(`created ConfigMap ${ns('adopted')}/tenant`), JSON.stringify(changes));
    assert.equal((await ready(`a-${suffix}`))?.status, 'True');
  });

  it('a Namespace another Tenant controls is reported, and the others still converge', async () => {
    await setNamespaces(`a-${suffix}`, [ns('adopted'), ns('held')]);
    await t.converge({ namespace: '', name: `a-${suffix}` });
    await tenant(`b-${suffix}`, [ns('held'), ns('made')]);
    const run = await t.reconcile({ namespace: '', name: `b-${suffix}` });
    assert.equal(run.error?.reason, 'ErrResourceExists');
    assert.match(
      run.error?.message ?? '',
      new RegExp(`"${ns('held')}" already exists and is not managed by Tenant`),
    );
    const made = await core.readNamespace({ name: ns('made') });
    assert.equal(made.metadata?.ownerReferences?.[0]?.name, `b-${suffix}`, 'the other namespace converged');
    const held = await core.readNamespace({ name: ns('held') });
    assert.equal(held.metadata?.ownerReferences?.[0]?.name, `a-${suffix}`, 'never written');
    const condition = await ready(`b-${suffix}`);
    assert.equal(condition?.status, 'False');
    assert.equal(condition?.reason, 'ErrResourceExists');
  });

  it('lets a Namespace go when it is no longer listed: the object stays, without its controller reference or labels', async () => {
    await setNamespaces(`a-${suffix}`, [ns('adopted')]);
    changes.length = 0;
    await t.converge({ namespace: '', name: `a-${suffix}` });
    assert.ok(changes.flat().includes(`orphaned Namespace ${ns('held')}`), JSON.stringify(changes));
    const held = await core.readNamespace({ name: ns('held') });
    assert.equal(held.metadata?.deletionTimestamp, undefined, 'not deleted');
    assert.deepEqual(held.metadata?.ownerReferences ?? [], []);
    assert.equal(held.metadata?.labels?.['levelset.dev/owner'], undefined);
    assert.equal(held.metadata?.labels?.['levelset.dev/controller'], undefined);
    // Its ConfigMap, of a type pruned by deletion, is deleted.
    await assert.rejects(core.readNamespacedConfigMap({ namespace: ns('held'), name: 'tenant' }), {
      code: 404,
    });
  });
});
