/**
 * Owned Pods after faults (issue 11), on real parts (relay, Pub/Sub emulator, `reconcile`, local API
 * server with its garbage collector), as test/integration/faults-owner.test.ts does for Foo: a
 * Customcluster deleted while the relay is down, a Pod whose owner is gone (a controller reference
 * to a Customcluster that no longer exists), and a Pod deleted while nothing watched. The garbage
 * collector removes what has no owner; the next resync restores what a Customcluster still asks
 * for. Waits with deadlines for exactly the expected Pods.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { type Pipeline, serverlessStack, startPipeline } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const CRD = new URL('../../functions/controllers/customcluster/crd.yaml', import.meta.url).pathname;
const group = 'sde.dev';
const version = 'v1alpha1';
const plural = 'customclusters';

describe('owned children after faults (customcluster)', () => {
  let p: Pipeline;
  let ns: string;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;

  const createCustomcluster = (name: string, count: number) =>
    custom.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'Customcluster',
        metadata: { name },
        spec: { count, message: 'm' },
      },
    }) as Promise<{ metadata: { uid: string } }>;
  /** Throws unless every live Customcluster controls exactly `spec.count` Pods and no other Pod exists. */
  const checkExact = async (): Promise<true> => {
    const [ccs, pods] = await Promise.all([
      custom.listNamespacedCustomObject({ group, version, plural, namespace: ns }) as Promise<{
        items: { metadata: { name: string; uid: string }; spec: { count: number } }[];
      }>,
      core.listNamespacedPod({ namespace: ns }),
    ]);
    const live = pods.items.filter((pod) => !pod.metadata?.deletionTimestamp);
    const owner = (pod: (typeof live)[number]) =>
      pod.metadata?.ownerReferences?.find((r) => r.controller)?.uid;
    const problems = [
      ...ccs.items.flatMap((cc) => {
        const n = live.filter((pod) => owner(pod) === cc.metadata.uid).length;
        return n === cc.spec.count ? [] : [`${cc.metadata.name}: ${n} pods, wants ${cc.spec.count}`];
      }),
      ...live
        .filter((pod) => !ccs.items.some((cc) => cc.metadata.uid === owner(pod)))
        .map((pod) => `extra ${pod.metadata?.name}`),
    ];
    if (problems.length) throw new Error(problems.join(', '));
    return true;
  };

  before(async () => {
    p = await startPipeline(async (cluster) => {
      custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
      core = cluster.kubeConfig.makeApiClient(CoreV1Api);
      ns = await cluster.createNamespace('cc-faults');
      await cluster.applyCrd(CRD, { group, version, plural }, ns);
      return {};
    });
  });

  after(async () => {
    await p?.stop();
  });

  it('removes Pods whose owner is gone and restores a missed deletion, after the relay was down', async (t) => {
    await createCustomcluster('keep', 2);
    const gone = await createCustomcluster('gone', 1);
    await waitFor(checkExact, { timeoutMs: 60_000, message: 'the Pods of both Customclusters' });

    await serverlessStack(p).killRelay();
    const started = Date.now();
    // Nothing watches now: each of these is a missed event.
    await custom.deleteNamespacedCustomObject({ group, version, plural, namespace: ns, name: 'gone' });
    const keepPods = await core.listNamespacedPod({ namespace: ns, labelSelector: 'controller=keep' });
    await core.deleteNamespacedPod({ namespace: ns, name: keepPods.items[0]?.metadata?.name ?? '' });
    // A Pod whose owner vanished (a Customcluster deleted while its reconcile was still creating it).
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: {
          name: 'stray',
          labels: { controller: 'gone' },
          ownerReferences: [
            {
              apiVersion: `${group}/${version}`,
              kind: 'Customcluster',
              name: 'gone',
              uid: gone.metadata.uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
      },
    });
    const report = await serverlessStack(p).runResync();
    assert.ok(!report.controllers.customcluster?.error, JSON.stringify(report));
    await waitFor(checkExact, { timeoutMs: 60_000, message: 'exactly the Pods of the Customcluster left' });
    t.diagnostic(`converged ${Date.now() - started} ms after the faults, the relay still down`);
    await p.stack.startRelay();
    await checkExact();
  });
});
