/**
 * Live changes never wait behind a resync (serverless): the resync's keys go to a topic and
 * subscription of their own (core/config.ts, resyncTopicOf), pushed to the same `reconcile` at
 * a bounded rate, so a Foo changed while thousands of resync keys are pending is reconciled before
 * they drain, and the resync keys still all drain afterwards (neither starves). Conditions only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { createKeyPublisher } from '../../core/publish.ts';
import { RESYNC_PUBLISHING } from '../../functions/runtime/resync.ts';
import { type Pipeline, serverlessStack, startPipeline } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const foos = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos' };
const CRD = new URL('../../examples/foo/controllers/foo/crd.yaml', import.meta.url).pathname;
/** Resync keys pending when the live change is made: far more than the resync's push rate drains at once. */
const BACKLOG = 1000;

describe('a live change during a large resync (serverless)', () => {
  let p: Pipeline;
  let ns: string;

  before(async () => {
    p = await startPipeline(async () => ({}), { mode: 'serverless' });
    ns = await p.cluster.createNamespace('priority');
    await p.cluster.applyCrd(CRD, foos, ns);
  });

  after(async () => {
    await p?.stop();
  });

  it('is reconciled while the resync backlog is pending, and the backlog still drains', async () => {
    const stack = serverlessStack(p);
    const custom = p.cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const apps = p.cluster.kubeConfig.makeApiClient(AppsV1Api);
    const replicasOf = (name: string) =>
      apps
        .readNamespacedDeployment({ namespace: ns, name })
        .then((d) => d.spec?.replicas)
        .catch(() => undefined);
    await custom.createNamespacedCustomObject({
      ...foos,
      namespace: ns,
      body: {
        apiVersion: 'samplecontroller.k8s.io/v1alpha1',
        kind: 'Foo',
        metadata: { name: 'live' },
        spec: { deploymentName: 'live', replicas: 1 },
      },
    });
    await waitFor(async () => (await replicasOf('live')) === 1, { message: 'the Foo converged' });

    // What the resync function publishes for BACKLOG keys (here of Foos that do not exist: each
    // reconcile is one GET), on the resync's topic, as it publishes them (no ordering key, batched).
    const publisher = createKeyPublisher({
      projectId: stack.emulator.projectId,
      topic: stack.resyncTopology.topic.split('/').pop() as string,
      emulatorHost: stack.emulator.host,
      ...RESYNC_PUBLISHING,
    });
    const enqueuedAt = new Date().toISOString();
    try {
      for (let i = 0; i < BACKLOG; i += 500)
        await Promise.all(
          Array.from({ length: Math.min(500, BACKLOG - i) }, (_, k) =>
            publisher.publish({
              v: 1,
              controller: 'foo',
              namespace: ns,
              name: `absent-${i + k}`,
              reason: 'resync',
              enqueuedAt,
            }),
          ),
        );
    } finally {
      await publisher.close();
    }
    const resyncAcked = () => stack.resyncPushProxy.stats().acknowledged;
    await waitFor(() => resyncAcked() > 0, { message: 'the resync backlog is being pushed' });

    await custom.patchNamespacedCustomObject(
      { ...foos, namespace: ns, name: 'live', body: { spec: { replicas: 3 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor(async () => (await replicasOf('live')) === 3, { message: 'the live change converged' });
    const drainedWhenLiveDone = resyncAcked();
    assert.ok(
      drainedWhenLiveDone < BACKLOG,
      `the live change waited for the whole resync backlog (${drainedWhenLiveDone} of ${BACKLOG} resync keys were done first)`,
    );

    // Not starved either: every resync key is reconciled.
    await waitFor(() => resyncAcked() >= BACKLOG, {
      timeoutMs: 180_000,
      message: `all ${BACKLOG} resync keys reconciled`,
    });
  });
});
