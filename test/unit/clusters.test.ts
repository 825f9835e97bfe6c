// The cluster registry (functions/runtime/clusters.ts): LEVELSET_CLUSTERS validated, one KubeConfig per cluster.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  ClustersConfigError,
  createClusterRegistry,
  readClustersConfig,
} from '../../functions/runtime/clusters.ts';

const dir = mkdtempSync(join(tmpdir(), 'levelset-clusters-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const kubeconfig = join(dir, 'kubeconfig');
writeFileSync(
  kubeconfig,
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'a', cluster: { server: 'http://127.0.0.1:1' } },
      { name: 'b', cluster: { server: 'http://127.0.0.1:2' } },
    ],
    users: [{ name: 'u', user: {} }],
    contexts: [
      { name: 'ctx-a', context: { cluster: 'a', user: 'u' } },
      { name: 'ctx-b', context: { cluster: 'b', user: 'u' } },
    ],
    'current-context': 'ctx-a',
  }),
);
const tokens = { getAccessToken: async () => 'token' };

describe('cluster registry', () => {
  it('without LEVELSET_CLUSTERS: the one default cluster of KUBECONFIG', () => {
    const registry = createClusterRegistry({ KUBECONFIG: kubeconfig });
    assert.deepEqual(registry.ids, ['default']);
    assert.equal(registry.kubeConfig('default')?.getCurrentCluster()?.server, 'http://127.0.0.1:1');
    assert.equal(registry.kubeConfig('other'), undefined);
  });

  it('maps each id to its own KubeConfig (kubeconfig contexts, GKE endpoints), made once; unknown ids are undefined', () => {
    const registry = createClusterRegistry(
      {
        LEVELSET_CLUSTERS: JSON.stringify([
          { id: 'one', kubeconfig, context: 'ctx-a' },
          { id: 'two', kubeconfig, context: 'ctx-b' },
          { id: 'gke-eu', endpoint: 'gke-0123.europe-west1.gke.goog' },
        ]),
      },
      { tokens },
    );
    assert.deepEqual(registry.ids, ['one', 'two', 'gke-eu']);
    assert.equal(registry.kubeConfig('one')?.getCurrentCluster()?.server, 'http://127.0.0.1:1');
    assert.equal(registry.kubeConfig('two')?.getCurrentCluster()?.server, 'http://127.0.0.1:2');
    assert.equal(
      registry.kubeConfig('gke-eu')?.getCurrentCluster()?.server,
      'https://gke-0123.europe-west1.gke.goog',
    );
    assert.equal(
      registry.kubeConfig('one'),
      registry.kubeConfig('one'),
      'one KubeConfig (one pool) per cluster',
    );
    assert.notEqual(registry.kubeConfig('one'), registry.kubeConfig('two'));
    assert.equal(registry.kubeConfig('three'), undefined);
  });

  it("a missing context fails at the cluster's first use, naming it", () => {
    const registry = createClusterRegistry({
      LEVELSET_CLUSTERS: JSON.stringify([{ id: 'one', kubeconfig, context: 'nope' }]),
    });
    assert.throws(() => registry.kubeConfig('one'), /cluster "one": no context "nope"/);
  });

  const invalid: [string, string, RegExp][] = [
    ['not JSON', '[{', /not JSON/],
    ['empty list', '[]', /at least one cluster/],
    ['id not a DNS-1123 label', '[{"id":"Bad_Id"}]', /0\.id/],
    ['duplicate ids', '[{"id":"a"},{"id":"a"}]', /duplicate id "a"/],
    ['unknown field', '[{"id":"a","server":"x"}]', /invalid LEVELSET_CLUSTERS/],
    ['http endpoint', '[{"id":"a","endpoint":"http://x"}]', /invalid LEVELSET_CLUSTERS/],
  ];
  for (const [what, value, message] of invalid)
    it(`refuses LEVELSET_CLUSTERS: ${what}`, () => {
      assert.throws(
        () => readClustersConfig({ LEVELSET_CLUSTERS: value }),
        (err: Error) => err instanceof ClustersConfigError && message.test(err.message),
      );
    });
});
