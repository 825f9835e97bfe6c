/**
 * Owned children after faults (issue 11), on real parts (relay, Pub/Sub emulator, `reconcile`,
 * local API server with its garbage collector): a Foo deleted while the relay is down, a Deployment
 * whose owner is gone (an owner reference to a Foo that no longer exists), and a child deleted while
 * nothing watched. The garbage collector removes what has no owner; the next resync restores what a
 * Foo still asks for. Waits with deadlines for exactly the expected Deployments.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { type Pipeline, serverlessStack, startPipeline } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const CRD = new URL('../../functions/controllers/foo/crd.yaml', import.meta.url).pathname;
const group = 'samplecontroller.k8s.io';
const version = 'v1alpha1';
const plural = 'foos';

describe('owned children after faults (foo)', () => {
  let p: Pipeline;
  let ns: string;
  let custom: CustomObjectsApi;
  let apps: AppsV1Api;

  const createFoo = (name: string) =>
    custom.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'Foo',
        metadata: { name },
        spec: { deploymentName: `${name}-dep`, replicas: 1 },
      },
    }) as Promise<{ metadata: { uid: string } }>;
  /** Throws unless the namespace holds exactly one Deployment per Foo, controlled by it. */
  const checkExact = async (): Promise<true> => {
    const [foos, deployments] = await Promise.all([
      custom.listNamespacedCustomObject({ group, version, plural, namespace: ns }) as Promise<{
        items: { metadata: { name: string; uid: string } }[];
      }>,
      apps.listNamespacedDeployment({ namespace: ns }),
    ]);
    const want = new Map(foos.items.map((f) => [`${f.metadata.name}-dep`, f.metadata.uid]));
    const have = deployments.items.map((d) => ({
      name: d.metadata?.name ?? '',
      owner: d.metadata?.ownerReferences?.find((r) => r.controller)?.uid,
    }));
    const problems = [
      ...have.filter((d) => want.get(d.name) !== d.owner).map((d) => `extra ${d.name}`),
      ...[...want.keys()].filter((n) => !have.some((d) => d.name === n)).map((n) => `missing ${n}`),
    ];
    if (problems.length) throw new Error(problems.join(', '));
    return true;
  };

  before(async () => {
    p = await startPipeline(async (cluster) => {
      custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
      apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
      ns = await cluster.createNamespace('foo-faults');
      await cluster.applyCrd(CRD, { group, version, plural }, ns);
      return {};
    });
  });

  after(async () => {
    await p?.stop();
  });

  it('removes children whose owner is gone and restores a missed deletion, after the relay was down', async (t) => {
    await createFoo('keep');
    const gone = await createFoo('gone');
    await waitFor(checkExact, { timeoutMs: 60_000, message: 'Deployments of both Foos' });

    await serverlessStack(p).killRelay();
    const started = Date.now();
    // Nothing watches now: each of these is a missed event.
    await custom.deleteNamespacedCustomObject({ group, version, plural, namespace: ns, name: 'gone' });
    await apps.deleteNamespacedDeployment({ namespace: ns, name: 'keep-dep' });
    // A child whose owner vanished (a Foo deleted while its reconcile was still writing it).
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: {
          name: 'stray-dep',
          ownerReferences: [
            {
              apiVersion: `${group}/${version}`,
              kind: 'Foo',
              name: 'gone',
              uid: gone.metadata.uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: {
          selector: { matchLabels: { app: 'stray' } },
          template: {
            metadata: { labels: { app: 'stray' } },
            spec: { containers: [{ name: 'nginx', image: 'nginx:latest' }] },
          },
        },
      },
    });
    const report = await serverlessStack(p).runResync();
    assert.ok(!report.controllers.foo?.error, JSON.stringify(report));
    await waitFor(checkExact, { timeoutMs: 60_000, message: 'exactly the Deployment of the Foo left' });
    t.diagnostic(`converged ${Date.now() - started} ms after the faults, the relay still down`);
    await p.stack.startRelay();
    await checkExact();
  });
});
