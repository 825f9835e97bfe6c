/**
 * Owned Deployments after faults (issue 11): the owner-faults suite (test/support/owner-faults.ts)
 * for foo. A Foo asks for exactly one Deployment, `spec.deploymentName`, controlled by it.
 */
import { fooResource } from '../../examples/foo/controllers/foo/api.ts';
import { ownerFaultsSuite } from '../support/owner-faults.ts';

ownerFaultsSuite({
  controller: 'foo',
  kind: 'Foo',
  resource: fooResource,
  crd: new URL('../../examples/foo/controllers/foo/crd.yaml', import.meta.url).pathname,
  namespacePrefix: 'foo-faults',
  children: 'Deployments',
  spec: (name) => ({ deploymentName: `${name}-dep`, replicas: 1 }),
  async problems({ apps, ns }, foos) {
    const deployments = await apps.listNamespacedDeployment({ namespace: ns });
    const want = new Map(foos.map((f) => [`${f.metadata.name}-dep`, f.metadata.uid]));
    const have = deployments.items.map((d) => ({
      name: d.metadata?.name ?? '',
      owner: d.metadata?.ownerReferences?.find((r) => r.controller)?.uid,
    }));
    return [
      ...have.filter((d) => want.get(d.name) !== d.owner).map((d) => `extra ${d.name}`),
      ...[...want.keys()].filter((n) => !have.some((d) => d.name === n)).map((n) => `missing ${n}`),
    ];
  },
  deleteChildOfKeep: ({ apps, ns }) => apps.deleteNamespacedDeployment({ namespace: ns, name: 'keep-dep' }),
  createStray: ({ apps, ns }, owner) =>
    apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'stray-dep', ownerReferences: [owner] },
        spec: {
          selector: { matchLabels: { app: 'stray' } },
          template: {
            metadata: { labels: { app: 'stray' } },
            spec: { containers: [{ name: 'nginx', image: 'nginx:latest' }] },
          },
        },
      },
    }),
});
