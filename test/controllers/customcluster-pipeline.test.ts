/**
 * The customcluster controller end to end, on real parts: relay → Pub/Sub emulator →
 * `reconcile` under functions-framework → Kubernetes API (local API server, or TEST_KUBECONFIG's
 * cluster). The test plays the kubelet (sets pod phases; a real cluster's kubelet does too) and observes only through the
 * Kubernetes API, the functions' logs and the relay's metrics. No reconcile waits for pods: pod
 * events bring the key back.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { findCondition, parseConditions } from '../../core/k8s/conditions.ts';
import { isControlledBy } from '../../core/k8s/owner.ts';
import { messageOf } from '../../examples/customcluster/controllers/customcluster/desired.ts';
import type { StackMode } from '../../local/stack.ts';
import {
  outcomeLines,
  PIPELINE_MODES,
  type Pipeline,
  type RelayInputs,
  relayCounter as relayCounterOf,
  startPipeline,
  watchRelayInputs,
} from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);
const root = new URL('../../', import.meta.url);
const CRD = new URL('examples/customcluster/controllers/customcluster/crd.yaml', root).pathname;
const EXAMPLE = new URL('examples/customcluster/test/fixtures/upstream/customcluster-example.yaml', root)
  .pathname;
const EXAMPLE_MESSAGE = 'Trying to create my own custom resource';
const group = 'sde.dev';
const version = 'v1alpha1';
const plural = 'customclusters';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

// biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
type Json = any;

/** The suite, run once per mode (below). */
const suite = (mode: StackMode) => () => {
  let p: Pipeline;
  let ns: string;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let inputs: RelayInputs;

  const getCc = (name: string): Promise<Json> =>
    custom.getNamespacedCustomObject({ group, version, plural, namespace: ns, name });
  const patchSpec = (name: string, spec: object) =>
    custom.patchNamespacedCustomObject(
      { group, version, plural, namespace: ns, name, body: { spec } },
      mergePatch,
    );
  const ready = (cc: Json) => findCondition(parseConditions(cc?.status?.conditions), 'Ready');
  const livePods = async (cc: Json): Promise<V1Pod[]> =>
    (
      await core.listNamespacedPod({ namespace: ns, labelSelector: `controller=${cc.metadata.name}` })
    ).items.filter(
      (pod) =>
        isControlledBy(pod, cc) &&
        !pod.metadata?.deletionTimestamp &&
        pod.status?.phase !== 'Failed' &&
        pod.status?.phase !== 'Succeeded',
    );
  /** Plays the kubelet: every live pod not yet Running becomes Running. */
  const runAll = async (cc: Json) => {
    for (const pod of await livePods(cc)) {
      if (pod.status?.phase === 'Running') continue;
      await core.patchNamespacedPodStatus(
        { namespace: ns, name: pod.metadata?.name ?? '', body: { status: { phase: 'Running' } } },
        mergePatch,
      );
    }
  };
  /** Waits for `count` live pods running `message`, plays the kubelet, waits for the status to say so. */
  const converged = async (name: string, count: number, message: string) => {
    const cc = await getCc(name);
    await waitFor(
      async () => {
        const pods = await livePods(cc);
        return pods.length === count && pods.every((pod) => messageOf(pod) === message);
      },
      { message: `${count} live pods of ${name} running "${message}"` },
    );
    await runAll(cc);
    return waitFor(
      async () => {
        const c = await getCc(name);
        return c.status?.count === count &&
          c.status?.message === (count > 0 ? message : '') &&
          ready(c)?.status === 'True' &&
          ready(c)?.observedGeneration === c.metadata.generation
          ? c
          : undefined;
      },
      { message: `status of ${name}: count ${count}, Ready at its generation` },
    );
  };
  /** The outcome line of every finished delivery of `customcluster/<ns>/<name>` to `reconcile`. */
  const deliveries = (name: string) => outcomeLines(p, 'customcluster', `${ns}/${name}`);
  const relayCounter = (metric: string, labels = 'controller="customcluster"') =>
    relayCounterOf(p, metric, labels);

  before(async () => {
    p = await startPipeline(
      async (cluster) => {
        custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
        core = cluster.kubeConfig.makeApiClient(CoreV1Api);
        ns = await cluster.createNamespace('cc-e2e');
        await cluster.applyCrd(CRD, { group, version, plural }, ns);
        inputs = await watchRelayInputs(
          cluster.kubeConfig,
          'customcluster',
          { path: `/apis/${group}/${version}/${plural}`, relayResource: `${group}/${version}/${plural}` },
          [
            {
              path: '/api/v1/pods',
              query: { labelSelector: 'controller' },
              relayResource: 'v1/pods?controller',
            },
          ],
        );
        return {};
      },
      { mode },
    );
  });

  after(async () => {
    inputs?.stop();
    await p?.stop();
  });

  it('converges the tutorial example applied with kubectl apply -f', async () => {
    await exec('kubectl', ['--kubeconfig', p.cluster.kubeconfigPath, 'apply', '-n', ns, '-f', EXAMPLE]);
    await converged('cpod-f', 5, EXAMPLE_MESSAGE);
  });

  it('scales up, scales down, and replaces the pods when the message changes', async () => {
    await patchSpec('cpod-f', { count: 7 });
    await converged('cpod-f', 7, EXAMPLE_MESSAGE);
    await patchSpec('cpod-f', { count: 2 });
    await converged('cpod-f', 2, EXAMPLE_MESSAGE);
    await patchSpec('cpod-f', { message: 'a new message' });
    await converged('cpod-f', 2, 'a new message');
  });

  it('does not reconcile again because of its own status write (count reconciles)', async () => {
    const cc = await getCc('cpod-f');
    const [pod] = await livePods(cc);
    assert.ok(pod);
    if (!p.cluster.local) {
      // A real cluster's kubelet owns the pods' phases (a Running pod does not go back to Pending):
      // one pod fails; its events, the replacement's create, binding and start are keys (pod events
      // pass whoever writes them), and each reconcile's status write (count 1, then 2) is a
      // Customcluster event with an unchanged generation, which the relay must drop: every event it
      // dropped is one of those, every key it published is owed to a pod event.
      await inputs.settled(p);
      const filteredBefore = await relayCounter('levelset_relay_events_filtered_total');
      const publishedBefore = await relayCounter('levelset_relay_keys_published_total');
      const podEventsBefore = inputs.seen.events['v1/pods?controller'] ?? 0;
      const droppedBefore = inputs.seen.drops;
      await core.patchNamespacedPodStatus(
        { namespace: ns, name: pod.metadata?.name ?? '', body: { status: { phase: 'Failed' } } },
        mergePatch,
      );
      await converged('cpod-f', 2, 'a new message');
      await waitFor(() => inputs.seen.drops > droppedBefore, { message: 'our watch saw the status write' });
      await inputs.settled(p);
      assert.equal(
        (await relayCounter('levelset_relay_events_filtered_total')) - filteredBefore,
        inputs.seen.drops - droppedBefore,
        'the relay dropped exactly the status-only writes',
      );
      const published = (await relayCounter('levelset_relay_keys_published_total')) - publishedBefore;
      const podEvents = (inputs.seen.events['v1/pods?controller'] ?? 0) - podEventsBefore;
      assert.ok(published >= 1 && published <= podEvents, `${published} keys for ${podEvents} pod events`);
      return;
    }
    // One pod event at a time, each one key → one reconcile → one status write (count 1 then 2),
    // and no pod created or deleted. Each status write is a Customcluster event with an unchanged
    // generation, which the relay must drop: exactly one reconcile per pod event.
    for (const phase of ['Pending', 'Running']) {
      await inputs.settled(p);
      const publishedBefore = await relayCounter('levelset_relay_keys_published_total');
      const deliveredBefore = deliveries('cpod-f').length;
      const droppedBefore = inputs.seen.drops;
      await core.patchNamespacedPodStatus(
        { namespace: ns, name: pod.metadata?.name ?? '', body: { status: { phase } } },
        mergePatch,
      );
      const count = phase === 'Running' ? 2 : 1;
      await waitFor(async () => (await getCc('cpod-f')).status?.count === count, {
        message: `status.count ${count} after the pod went ${phase}`,
      });
      // Our own watch may see the status write after the GET above: wait for it, so that
      // settled() compares the relay with every event.
      await waitFor(() => inputs.seen.drops > droppedBefore, { message: 'our watch saw the status write' });
      await inputs.settled(p);
      assert.equal(inputs.seen.drops, droppedBefore + 1, 'one status-only event');
      assert.equal(
        (await relayCounter('levelset_relay_keys_published_total')) - publishedBefore,
        1,
        'one key published',
      );
      assert.equal(deliveries('cpod-f').length - deliveredBefore, 1, 'one reconcile');
    }
    assert.equal(ready(await getCc('cpod-f'))?.status, 'True');
  });

  it('replaces a Failed pod without being asked again', async () => {
    const cc = await getCc('cpod-f');
    const [victim] = await livePods(cc);
    assert.ok(victim);
    await core.patchNamespacedPodStatus(
      { namespace: ns, name: victim.metadata?.name ?? '', body: { status: { phase: 'Failed' } } },
      mergePatch,
    );
    // The Failed pod's event brings the key back; the reconcile creates a replacement.
    await converged('cpod-f', 2, 'a new message');
  });

  it('rejects count: -1 with 422 before any reconcile sees it', async () => {
    await assert.rejects(
      custom.createNamespacedCustomObject({
        group,
        version,
        plural,
        namespace: ns,
        body: {
          apiVersion: `${group}/${version}`,
          kind: 'Customcluster',
          metadata: { name: 'invalid' },
          spec: { message: 'm', count: -1 },
        },
      }),
      (err: unknown) => err instanceof ApiException && err.code === 422,
    );
    await custom.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'Customcluster',
        metadata: { name: 'after-invalid' },
        spec: { message: 'm', count: 1 },
      },
    });
    await converged('after-invalid', 1, 'm');
    await inputs.settled(p);
    assert.equal(deliveries('invalid').length, 0);
  });

  it('leaves no pod once the Customcluster is deleted (garbage collection)', async () => {
    const cc = await getCc('cpod-f');
    await custom.deleteNamespacedCustomObject({ group, version, plural, namespace: ns, name: 'cpod-f' });
    await waitFor(async () => (await livePods(cc)).length === 0, {
      message: 'the pods to be garbage-collected',
      timeoutMs: 60_000,
    });
  });
};

for (const mode of PIPELINE_MODES) describe(`customcluster end to end (${mode})`, suite(mode));
