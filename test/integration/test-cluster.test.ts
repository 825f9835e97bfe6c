// The kit's test cluster (functions/kit/test-cluster.ts), as a project's test uses it: against the
// local API server, or TEST_KUBECONFIG's cluster, unchanged.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi, KubernetesObjectApi } from '@kubernetes/client-node';
import { startTestCluster, type TestCluster, uniqueSuffix } from '../../functions/kit/testing.ts';

describe('startTestCluster', () => {
  let cluster: TestCluster;
  const group = `test-cluster-${uniqueSuffix()}.levelset.dev`;
  const crdName = `gadgets.${group}`;
  before(async () => {
    cluster = await startTestCluster();
  });
  after(async () => {
    await KubernetesObjectApi.makeApiClient(cluster.kubeConfig)
      .delete({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: crdName },
      })
      .catch(() => undefined);
    await cluster.stop();
  });

  it('createCrd keeps x-kubernetes-preserve-unknown-fields: an object keeps a spec its schema does not list', async () => {
    const namespace = await cluster.createNamespace('test-cluster');
    const resource = { group, version: 'v1', plural: 'gadgets' };
    await cluster.createCrd(
      {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: crdName },
        spec: {
          group,
          scope: 'Namespaced',
          names: { kind: 'Gadget', listKind: 'GadgetList', plural: 'gadgets', singular: 'gadget' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: {
                  type: 'object',
                  properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
                },
              },
            },
          ],
        },
      } as never,
      resource,
      namespace,
    );
    const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const spec = { size: 3, parts: [{ name: 'bolt' }] };
    await custom.createNamespacedCustomObject({
      ...resource,
      namespace,
      body: { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name: 'g' }, spec },
    });
    const stored = (await custom.getNamespacedCustomObject({ ...resource, namespace, name: 'g' })) as {
      spec?: unknown;
    };
    assert.deepEqual(stored.spec, spec);
  });
});
