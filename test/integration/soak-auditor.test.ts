/**
 * The soak's auditor (soak/auditor.ts) finds what is off its level, so that a soak that ends with
 * none found means something: a missing, stale or extra Secret copy, a Foo without its Deployment or
 * with one at other replicas, and nothing once the cluster is at its level. No controller runs here:
 * the test writes the children by hand, as a controller would.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { installCrds } from '../../local/demo.ts';
import { COPY_LABEL, createAuditor, FOOS, LAYOUT, SOURCE_ANNOTATION, TENANTS } from '../../soak/auditor.ts';
import { registeredCrds } from '../../soak/crds.ts';
import { waitFor } from '../support/wait.ts';

describe("the soak's auditor", {
  skip: !!process.env.TEST_KUBECONFIG && 'it makes the soak-* namespaces',
}, () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let custom: CustomObjectsApi;
  let audit: () => Promise<string[]>;
  const target = `${LAYOUT.targetPrefix}0`;

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    await installCrds(cluster.kubeConfig, registeredCrds());
    await waitFor(() => custom.listClusterCustomObject(TENANTS).then(() => true), {
      message: 'the CRDs served',
    });
    for (const name of [LAYOUT.sourceNamespace, LAYOUT.appsNamespace, LAYOUT.bundleNamespace, target])
      await core.createNamespace({ body: { metadata: { name } } });
    const auditor = createAuditor(cluster.kubeConfig);
    audit = async () => (await auditor.audit()).violations.map((v) => `${v.key}: ${v.detail}`);
  });
  after(() => cluster?.stop());

  const data = (v: string) => ({ v: Buffer.from(v).toString('base64') });
  const copy = (namespace: string, v: string) => ({
    metadata: {
      name: 's',
      namespace,
      labels: { [COPY_LABEL]: 's' },
      annotations: { [SOURCE_ANNOTATION]: `${LAYOUT.sourceNamespace}/s` },
    },
    type: 'Opaque',
    data: data(v),
  });

  it('checks every copy of a source: missing, stale, in a namespace that is no target, then none', async () => {
    const key = `secret-replicator:${LAYOUT.sourceNamespace}/s`;
    await core.createNamespacedSecret({
      namespace: LAYOUT.sourceNamespace,
      body: { metadata: { name: 's' }, type: 'Opaque', data: data('one') },
    });
    assert.deepEqual(await audit(), [`${key}: no copy in ${target}`]);
    await core.createNamespacedSecret({ namespace: target, body: copy(target, 'old') });
    assert.deepEqual(await audit(), [`${key}: copy in ${target} differs from its source`]);
    await core.replaceNamespacedSecret({ namespace: target, name: 's', body: copy(target, 'one') });
    assert.deepEqual(await audit(), []);
    await core.createNamespacedSecret({
      namespace: LAYOUT.appsNamespace,
      body: copy(LAYOUT.appsNamespace, 'one'),
    });
    assert.deepEqual(await audit(), [`${key}: copy in non-target ${LAYOUT.appsNamespace}`]);
    await core.deleteNamespacedSecret({ namespace: LAYOUT.appsNamespace, name: 's' });
    await core.deleteNamespacedSecret({ namespace: LAYOUT.sourceNamespace, name: 's' });
    assert.deepEqual(await audit(), [`${key}: copy in ${target} of a deleted source`]);
    await core.deleteNamespacedSecret({ namespace: target, name: 's' });
    assert.deepEqual(await audit(), []);
  });

  it("checks a Foo's Deployment: missing, at other replicas, then none", async () => {
    const namespace = LAYOUT.appsNamespace;
    const key = `foo:${namespace}/f`;
    const foo = (await custom.createNamespacedCustomObject({
      ...FOOS,
      namespace,
      body: {
        apiVersion: `${FOOS.group}/${FOOS.version}`,
        kind: FOOS.kind,
        metadata: { name: 'f' },
        spec: { deploymentName: 'f', replicas: 2 },
      },
    })) as KubernetesObject;
    assert.deepEqual(await audit(), [`${key}: no Deployment f`]);
    const labels = { app: 'f' };
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: {
          name: 'f',
          ownerReferences: [
            {
              apiVersion: `${FOOS.group}/${FOOS.version}`,
              kind: FOOS.kind,
              name: 'f',
              uid: foo.metadata?.uid ?? '',
              controller: true,
            },
          ],
        },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
        },
      },
    });
    assert.deepEqual(await audit(), [`${key}: Deployment replicas 1 ≠ 2`]);
    await apps.patchNamespacedDeployment({
      namespace,
      name: 'f',
      body: [{ op: 'replace', path: '/spec/replicas', value: 2 }],
    });
    assert.deepEqual(await audit(), []);
  });
});
