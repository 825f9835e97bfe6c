// The relay's informer for a primary with spec indexes, against an API server (local or
// TEST_KUBECONFIG): it reads whole objects (LIST and WATCH) only to hand them to the index
// functions, and still caches and emits metadata only.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { createLogger } from '../../core/log.ts';
import { configmaps } from '../../functions/kit/index.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { MetadataInformer } from '../../relay/informer.ts';
import { waitFor } from '../support/wait.ts';

describe('relay informer with whole objects for the spec indexes', () => {
  let cluster: TestCluster;
  let ns: string;
  let informer: MetadataInformer;
  const seen: KubernetesObject[] = [];
  const events: KubernetesObject[] = [];

  before(async () => {
    cluster = await startTestCluster();
    ns = await cluster.createNamespace('spec-index');
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'listed' }, data: { k: 'v1' } },
    });
    informer = new MetadataInformer({
      kubeConfig: cluster.kubeConfig,
      resource: configmaps,
      namespace: ns,
      logger: createLogger('relay', { write: () => {} } as never),
      onObject: (o) => seen.push(o),
      onEvent: (e) => events.push(e.object),
    });
    informer.start();
    await informer.whenSynced();
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'watched' }, data: { k: 'v2' } },
    });
    await waitFor(() => informer.get({ namespace: ns, name: 'watched' }) !== undefined, {
      message: 'the watched ConfigMap in the cache',
    });
  });
  after(async () => {
    await informer?.stop();
    await cluster?.stop();
  });

  it('hands whole objects (LIST and WATCH) to onObject, with apiVersion and kind', () => {
    const byName = new Map(seen.map((o) => [o.metadata?.name, o as KubernetesObject & { data?: object }]));
    assert.deepEqual(byName.get('listed')?.data, { k: 'v1' });
    assert.deepEqual(byName.get('watched')?.data, { k: 'v2' });
    assert.equal(byName.get('listed')?.kind, 'ConfigMap');
    assert.equal(byName.get('listed')?.apiVersion, 'v1');
  });

  it('caches and emits metadata only', () => {
    const cached = informer.keys().map((k) => informer.get(k));
    assert.ok(cached.length > 0);
    for (const o of [...cached.filter((c) => c !== undefined), ...events]) {
      assert.deepEqual(Object.keys(o).sort(), ['apiVersion', 'kind', 'metadata'], o.metadata?.name);
      // An event's object names its field managers (the kit's skipOwnCreates reads them), never
      // the fields they own; the cache keeps none (docs/architecture.md decision 32).
      const managers = events.includes(o) ? (o.metadata?.managedFields ?? []) : o.metadata?.managedFields;
      if (!events.includes(o)) assert.equal(managers, undefined, o.metadata?.name);
      for (const m of managers ?? []) assert.equal(m.fieldsV1, undefined, o.metadata?.name);
    }
  });
});
