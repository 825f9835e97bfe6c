/**
 * Least privilege, checked against the cluster's RBAC (the local API server's, or the real
 * cluster's with TEST_KUBECONFIG): the relay's and the functions' identities — ServiceAccounts bound
 * to the ClusterRoles of the generated deploy/rbac.yaml, as every pipeline test runs them
 * (test/support/pipeline.ts) — may do exactly what the registry declares (cli/build/generate-manifests.ts
 * `relayRules`/`functionsRules`), nothing more; a write by the relay is refused with 403.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiException, AuthorizationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type ClusterRule, functionsRules, relayRules } from '../../cli/build/generate-manifests.ts';
import { controllers } from '../../examples/registry.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { createLeastPrivilegedIdentities, type Identities } from '../support/identities.ts';

const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

/** Every (group, resource) either role names, plus a few neither needs. */
function universe(): { group: string; resource: string }[] {
  const seen = new Map<string, { group: string; resource: string }>();
  const add = (group: string, resource: string) => seen.set(`${group}/${resource}`, { group, resource });
  for (const r of [...relayRules(controllers), ...functionsRules(controllers)])
    for (const g of r.apiGroups) for (const res of r.resources) add(g, res);
  add('', 'configmaps');
  add('', 'serviceaccounts');
  add('', 'serviceaccounts/token');
  add('rbac.authorization.k8s.io', 'clusterroles');
  add('apps', 'deployments/scale');
  return [...seen.values()];
}

function declared(rules: ClusterRule[], group: string, resource: string, verb: string): boolean {
  return rules.some(
    (r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb),
  );
}

async function mayDo(kc: KubeConfig, group: string, resource: string, verb: string): Promise<boolean> {
  const [res, subresource] = resource.split('/');
  const review = await kc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
    body: { spec: { resourceAttributes: { group, resource: res, subresource, verb, namespace: 'default' } } },
  });
  return review.status?.allowed === true;
}

describe('least privilege of the relay and the functions', () => {
  let cluster: TestCluster;
  let ids: Identities;

  before(async () => {
    cluster = await startTestCluster();
    ids = await createLeastPrivilegedIdentities(cluster.kubeConfig);
  });
  after(async () => {
    await ids?.remove();
    await cluster?.stop();
  });

  for (const [component, rulesOf] of [
    ['relay', relayRules],
    ['functions', functionsRules],
  ] as const) {
    it(`the ${component} identity may do exactly what the registry declares`, async () => {
      const rules = rulesOf(controllers);
      const kc = ids[component].kubeConfig;
      const wrong: string[] = [];
      let allowedCount = 0;
      for (const { group, resource } of universe()) {
        for (const verb of VERBS) {
          const expected = declared(rules, group, resource, verb);
          const actual = await mayDo(kc, group, resource, verb);
          if (actual) allowedCount++;
          if (actual !== expected)
            wrong.push(`${verb} ${group || 'core'}/${resource}: ${actual ? 'allowed' : 'denied'}`);
        }
      }
      assert.deepEqual(wrong, []);
      assert.ok(allowedCount > 0, 'the identity may do something (the check is not vacuous)');
    });
  }

  it('refuses a create by the relay with 403, and allows its reads', async () => {
    const core = ids.relay.kubeConfig.makeApiClient(CoreV1Api);
    await core.listNamespacedSecret({ namespace: 'default' });
    await assert.rejects(
      core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 'relay-may-not' } } }),
      (err: unknown) => err instanceof ApiException && err.code === 403,
    );
  });

  it('refuses the functions a read of what they never need (serviceaccounts) with 403', async () => {
    const core = ids.functions.kubeConfig.makeApiClient(CoreV1Api);
    await assert.rejects(
      core.listNamespacedServiceAccount({ namespace: 'default' }),
      (err: unknown) => err instanceof ApiException && err.code === 403,
    );
  });
});
