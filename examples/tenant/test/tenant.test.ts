/**
 * The tenant controller against an API server (the local one, or TEST_KUBECONFIG's cluster): a
 * Tenant gets its Namespaces (one that existed already is adopted), a ResourceQuota and a
 * default-deny NetworkPolicy in each; the reconcile after converging writes nothing (the quota's
 * `cpu: 2000m` is stored as `2` on a real cluster: the same quantity); a namespace the Tenant no
 * longer lists is let go, not deleted, and its quota and policy are pruned.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { CoreV1Api, CustomObjectsApi, NetworkingV1Api } from '@kubernetes/client-node';
import { findCondition, parseConditions } from 'levelset/kit';
import {
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
  uniqueSuffix,
  waitFor,
  writesOf,
} from 'levelset/kit/testing';
import { tenantController } from '../controllers/tenant/index.ts';

const exec = promisify(execFile);
const folder = new URL('../controllers/tenant/', import.meta.url);
const resource = { group: 'platform.levelset.dev', version: 'v1alpha1', plural: 'tenants' };

describe('tenant controller', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  const suffix = uniqueSuffix();
  const name = `tenant-${suffix}`;
  const [dev, prod] = [`${name}-dev`, `${name}-prod`];
  const key = { namespace: '', name };

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    await exec('kubectl', [
      '--kubeconfig',
      cluster.kubeconfigPath,
      'apply',
      '-f',
      new URL('crd.yaml', folder).pathname,
    ]);
    await waitFor(() => custom.listClusterCustomObject(resource).then(() => true), {
      message: 'tenants.platform.levelset.dev to be served',
    });
  });
  after(async () => {
    await custom?.deleteClusterCustomObject({ ...resource, name }).catch(() => undefined);
    for (const namespace of [dev, prod])
      await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
    await cluster?.stop();
  });

  it('keeps a Namespace, a ResourceQuota and a NetworkPolicy per namespace; converged, it writes nothing', async () => {
    await core.createNamespace({ body: { metadata: { name: dev } } }); // there before: adopted
    await custom.createClusterCustomObject({
      ...resource,
      body: {
        apiVersion: 'platform.levelset.dev/v1alpha1',
        kind: 'Tenant',
        metadata: { name },
        spec: { namespaces: [dev, prod], quota: { cpu: '2000m', memory: '4Gi', pods: 20 } },
      },
    });
    const t = reconcilerForTest(tenantController, cluster.kubeconfigPath);
    const runs = await t.converge(key);
    assert.deepEqual(writesOf(runs.at(-1)?.requests ?? []), [], 'the last reconcile writes nothing');
    const networking = cluster.kubeConfig.makeApiClient(NetworkingV1Api);
    for (const namespace of [dev, prod]) {
      const ns = await core.readNamespace({ name: namespace });
      assert.equal(ns.metadata?.ownerReferences?.[0]?.name, name);
      const quota = await core.readNamespacedResourceQuota({ namespace, name: 'tenant' });
      assert.equal(quota.spec?.hard?.pods, '20');
      assert.match(quota.spec?.hard?.cpu ?? '', /^(2000m|2)$/);
      const policy = await networking.readNamespacedNetworkPolicy({
        namespace,
        name: 'default-deny-ingress',
      });
      assert.deepEqual(policy.spec?.policyTypes, ['Ingress']);
    }
    const tenant = (await custom.getClusterCustomObject({ ...resource, name })) as {
      status?: { namespaces?: number; conditions?: unknown };
    };
    assert.equal(tenant.status?.namespaces, 2);
    assert.equal(findCondition(parseConditions(tenant.status?.conditions), 'Ready')?.status, 'True');
  });

  it('lets a namespace it no longer lists go, with what is in it; its quota and policy are pruned', async () => {
    await custom.patchClusterCustomObject({
      ...resource,
      name,
      body: [{ op: 'replace', path: '/spec/namespaces', value: [dev] }],
    });
    await reconcilerForTest(tenantController, cluster.kubeconfigPath).converge(key);
    const kept = await core.readNamespace({ name: prod });
    assert.equal(kept.metadata?.deletionTimestamp, undefined);
    assert.deepEqual(kept.metadata?.ownerReferences ?? [], []);
    await assert.rejects(core.readNamespacedResourceQuota({ namespace: prod, name: 'tenant' }), {
      code: 404,
    });
  });
});
