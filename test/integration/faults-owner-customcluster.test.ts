/**
 * Owned Pods after faults (issue 11): the owner-faults suite (test/support/owner-faults.ts) for
 * customcluster. A Customcluster asks for exactly `spec.count` Pods controlled by it.
 */
import { customclusterResource } from '../../examples/customcluster/controllers/customcluster/api.ts';
import { ownerFaultsSuite } from '../support/owner-faults.ts';

ownerFaultsSuite({
  controller: 'customcluster',
  kind: 'Customcluster',
  resource: customclusterResource,
  crd: new URL('../../examples/customcluster/controllers/customcluster/crd.yaml', import.meta.url).pathname,
  namespacePrefix: 'cc-faults',
  children: 'Pods',
  spec: (name) => ({ count: name === 'keep' ? 2 : 1, message: 'm' }),
  async problems({ core, ns }, ccs) {
    const pods = await core.listNamespacedPod({ namespace: ns });
    const live = pods.items.filter((pod) => !pod.metadata?.deletionTimestamp);
    const owner = (pod: (typeof live)[number]) =>
      pod.metadata?.ownerReferences?.find((r) => r.controller)?.uid;
    return [
      ...ccs.flatMap((cc) => {
        const n = live.filter((pod) => owner(pod) === cc.metadata.uid).length;
        return n === cc.spec.count ? [] : [`${cc.metadata.name}: ${n} pods, wants ${cc.spec.count}`];
      }),
      ...live
        .filter((pod) => !ccs.some((cc) => cc.metadata.uid === owner(pod)))
        .map((pod) => `extra ${pod.metadata?.name}`),
    ];
  },
  async deleteChildOfKeep({ core, ns }) {
    const keepPods = await core.listNamespacedPod({ namespace: ns, labelSelector: 'controller=keep' });
    await core.deleteNamespacedPod({ namespace: ns, name: keepPods.items[0]?.metadata?.name ?? '' });
  },
  createStray: ({ core, ns }, owner) =>
    core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'stray', labels: { controller: 'gone' }, ownerReferences: [owner] },
        spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
      },
    }),
});
