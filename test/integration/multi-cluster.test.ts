/**
 * One set of functions, two clusters, end to end on real parts: a relay in each cluster (each
 * naming its cluster in its keys: `RELAY_CLUSTER`) → one Pub/Sub emulator topic → one `reconcile`
 * and one `resync` under functions-framework serving both (`LEVELSET_CLUSTERS`) → each cluster's
 * Kubernetes API. Foo objects of the same namespace and name in both clusters converge each in its
 * own cluster; a key of one cluster never writes to the other; one relay killed, the other cluster
 * keeps converging (and the resync covers the dead relay's cluster); a key of an unknown cluster is
 * malformed.
 *
 * Two local API servers; with `TEST_KUBECONFIG` (one real cluster) set, `TEST_KUBECONFIG_2` must
 * name a second cluster, else the file is skipped (two clusters cannot be one).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type V1Deployment } from '@kubernetes/client-node';
import { LABELS } from '../../core/log.ts';
import { emulatorClientOptions } from '../../core/publish.ts';
import {
  secondClusterSkip,
  startSecondTestCluster,
  startTestCluster,
  type TestCluster,
} from '../../functions/kit/testing.ts';
import type { LogLine } from '../../local/service.ts';
import { type LocalStack, startLocalStack } from '../../local/stack.ts';
import { stackFaults } from '../../local/stack-faults.ts';
import { pushEnvelope } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const CRD = new URL('../../examples/foo/controllers/foo/crd.yaml', import.meta.url).pathname;
const group = 'samplecontroller.k8s.io';
const version = 'v1alpha1';
const plural = 'foos';
const A = 'cluster-a';
const B = 'cluster-b';

const skip = secondClusterSkip;

describe('one set of functions for two clusters (serverless)', { skip }, () => {
  const clusters = new Map<string, TestCluster>();
  const logs: { service: string; line: LogLine }[] = [];
  let stack: LocalStack;
  let ns: string;
  const api = (id: string) => {
    const kc = (clusters.get(id) as TestCluster).kubeConfig;
    return {
      custom: kc.makeApiClient(CustomObjectsApi),
      apps: kc.makeApiClient(AppsV1Api),
      core: kc.makeApiClient(CoreV1Api),
    };
  };
  const createFoo = (id: string, name: string, replicas: number) =>
    api(id).custom.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'Foo',
        metadata: { name },
        spec: { deploymentName: name, replicas },
      },
    });
  const deployment = (id: string, name: string): Promise<V1Deployment | undefined> =>
    api(id)
      .apps.readNamespacedDeployment({ namespace: ns, name })
      .catch(() => undefined);
  /** Outcome lines of `reconcile` for foo keys, with their labels. */
  const outcomes = () =>
    logs
      .filter(({ service, line }) => service === 'reconcile' && typeof line.outcome === 'string')
      .map(({ line }) => ({
        line,
        labels: (line[LABELS] ?? {}) as { cluster?: string; controller?: string; key?: string },
      }));

  before(async () => {
    clusters.set(A, await startTestCluster());
    clusters.set(B, await startSecondTestCluster());
    ns = await (clusters.get(A) as TestCluster).createNamespace('fleet');
    // The same namespace name in cluster B: keys of both clusters name the same namespace/name.
    await api(B).core.createNamespace({
      body: { metadata: { name: ns, labels: { 'levelset.dev/test': 'true' } } },
    });
    for (const c of clusters.values()) await c.applyCrd(CRD, { group, version, plural }, ns);
    stack = await startLocalStack({
      kubeconfigPath: (clusters.get(A) as TestCluster).kubeconfigPath,
      clusters: [...clusters].map(([id, c]) => ({ id, kubeconfigPath: c.kubeconfigPath })),
      collapseMs: 50,
      // As the peer bench runs it: no second reader of the keys topic (the next test asserts it).
      deliveryWatchdog: false,
      onLog: (service, line) => {
        logs.push({ service, line });
        if (process.env.LEVELSET_TEST_VERBOSE) process.stderr.write(`[${service}] ${JSON.stringify(line)}\n`);
      },
    });
  });

  after(async () => {
    await stack?.stop();
    const b = clusters.get(B);
    if (b && !b.local)
      await api(B)
        .core.deleteNamespace({ name: ns })
        .catch(() => {});
    for (const c of clusters.values()) await c.stop();
  });

  it('without the delivery watchdog: the keys topic has the push subscription alone', async () => {
    assert.equal(stack.watchdog, undefined);
    const pubsub = new PubSub({
      projectId: stack.emulator.projectId,
      ...emulatorClientOptions(stack.emulator.host),
    });
    try {
      const [subscriptions] = await pubsub.topic(stack.topology.topic).getSubscriptions();
      assert.deepEqual(
        subscriptions.map((s) => s.name),
        [stack.topology.subscription],
        'the emulator delivers each key once, to the push subscription',
      );
    } finally {
      await pubsub.close();
    }
  });

  it('reconciles a Foo of the same namespace/name in each cluster against its own cluster', async () => {
    await createFoo(A, 'twin', 1);
    await createFoo(B, 'twin', 3);
    const inA = await waitFor(() => deployment(A, 'twin'), { message: 'Deployment twin in cluster A' });
    const inB = await waitFor(() => deployment(B, 'twin'), { message: 'Deployment twin in cluster B' });
    assert.equal(inA.spec?.replicas, 1);
    assert.equal(inB.spec?.replicas, 3);
    // Each Deployment is owned by its own cluster's Foo.
    const fooA = (await api(A).custom.getNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      name: 'twin',
    })) as {
      metadata: { uid: string };
    };
    const fooB = (await api(B).custom.getNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      name: 'twin',
    })) as {
      metadata: { uid: string };
    };
    assert.equal(inA.metadata?.ownerReferences?.[0]?.uid, fooA.metadata.uid);
    assert.equal(inB.metadata?.ownerReferences?.[0]?.uid, fooB.metadata.uid);
    // The same function processes ran both, each outcome line labelled with its cluster.
    for (const id of [A, B])
      await waitFor(
        () =>
          outcomes().some(
            (o) => o.labels.controller === 'foo' && o.labels.key === `${ns}/twin` && o.labels.cluster === id,
          ),
        { message: `an outcome line of ${id}'s key twin` },
      );
  });

  it('a key of cluster A never writes to cluster B', async () => {
    await createFoo(B, 'only-b', 2);
    await waitFor(
      () =>
        outcomes().some(
          (o) => o.labels.cluster === B && o.labels.key === `${ns}/only-b` && o.line.outcome === 'success',
        ),
      { message: "cluster B's key only-b reconciled" },
    );
    // Read once its reconcile is over: the create's own managedFields patch comes after the POST.
    const before = await waitFor(() => deployment(B, 'only-b'), {
      message: 'Deployment only-b in cluster B',
    });
    // Cluster A's key of the same namespace/name: its Foo does not exist there.
    const res = await fetch(stack.reconcile.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        pushEnvelope(
          {
            v: 2,
            cluster: A,
            controller: 'foo',
            namespace: ns,
            name: 'only-b',
            reason: 'manual',
            enqueuedAt: new Date().toISOString(),
          },
          'cross-talk',
        ),
      ),
    });
    assert.equal(res.status, 204);
    const line = await waitFor(
      () =>
        logs.find(({ line }) => line.messageId === 'cross-talk' && typeof line.outcome === 'string')?.line,
      { message: "the outcome of cluster A's key only-b" },
    );
    assert.equal(line.outcome, 'success');
    assert.equal(line.notFound, true, 'no Foo only-b in cluster A: nothing to do');
    assert.equal((line[LABELS] as { cluster?: string }).cluster, A);
    assert.equal(await deployment(A, 'only-b'), undefined, 'nothing created in cluster A');
    const after = await deployment(B, 'only-b');
    assert.equal(after?.metadata?.resourceVersion, before.metadata?.resourceVersion, 'cluster B untouched');
  });

  it("with cluster A's relay killed, cluster B keeps converging; the resync covers cluster A", async () => {
    await stackFaults(stack).killRelay(A);
    assert.equal(stack.relay(A), undefined);
    await createFoo(B, 'while-a-down', 1);
    await waitFor(() => deployment(B, 'while-a-down'), { message: "cluster B converging without A's relay" });
    // Cluster A's change: no relay sees it; the resync (every cluster) publishes its key.
    await createFoo(A, 'missed', 2);
    const report = await stack.runResync();
    assert.deepEqual(Object.keys((report as { clusters?: object }).clusters ?? {}).sort(), [A, B]);
    assert.ok(!report.controllers.foo?.error, JSON.stringify(report));
    const missed = await waitFor(() => deployment(A, 'missed'), {
      message: "cluster A's Foo reconciled by the resync",
    });
    assert.equal(missed.spec?.replicas, 2);
    await stack.startRelay({}, A);
  });

  it('a key of an unknown cluster is malformed: 204, logged, nothing retried', async () => {
    const res = await fetch(stack.reconcile.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        pushEnvelope(
          {
            v: 2,
            cluster: 'nowhere',
            controller: 'foo',
            namespace: ns,
            name: 'twin',
            reason: 'manual',
            enqueuedAt: new Date().toISOString(),
          },
          'unknown-cluster',
        ),
      ),
    });
    assert.equal(res.status, 204);
    const line = await waitFor(
      () =>
        logs.find(({ line }) => line.messageId === 'unknown-cluster' && typeof line.outcome === 'string')
          ?.line,
      { message: 'the malformed line of the unknown cluster' },
    );
    assert.equal(line.outcome, 'malformed');
    assert.match(String(line.message), /unknown cluster "nowhere"/);
    // The resync refuses to enumerate an unknown cluster (400), and enumerates one named.
    const refused = await fetch(stack.resync.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ cluster: 'nowhere' }),
    });
    assert.equal(refused.status, 400);
    const one = await fetch(stack.resync.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ cluster: B }),
    });
    assert.equal(one.status, 200);
    assert.deepEqual(Object.keys(((await one.json()) as { clusters: object }).clusters), [B]);
  });
});
