/**
 * Missed events, counted: a change to a Foo's Deployment whose watch event the local API server
 * loses on purpose (`dropNextWatchEvents`: the relay's watch stays open and healthy, it just never
 * hears of it) is not reconciled until the resync; the resync's reconcile corrects it and is counted
 * as drift exactly once (one `drift: true` line for the key); a second resync finds nothing.
 * Serverless mode (the key message's `reason` says `resync`), local only: the fault is the local API
 * server's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { LABELS } from '../../core/log.ts';
import { type Pipeline, relayCounter, serverlessStack, startPipeline } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const CRD = new URL('../../examples/foo/controllers/foo/crd.yaml', import.meta.url).pathname;
const resource = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos' };

describe('drift the resync corrects is counted', { skip: !!process.env.TEST_KUBECONFIG }, () => {
  let p: Pipeline;
  let ns: string;
  let apps: AppsV1Api;
  const keyLines = (filter: (line: Record<string, unknown>) => boolean) =>
    p.logs.filter(({ service, line }) => {
      const labels = line[LABELS] as { controller?: string; key?: string } | undefined;
      return (
        service === 'reconcile' && labels?.controller === 'foo' && labels.key === `${ns}/web` && filter(line)
      );
    });
  const resyncOutcomes = () => keyLines((l) => l.reason === 'resync' && typeof l.outcome === 'string').length;
  const driftLines = () => keyLines((l) => l.drift === true);
  const replicas = async () =>
    (await apps.readNamespacedDeployment({ namespace: ns, name: 'web-nginx' })).spec?.replicas;
  /** Runs the resync function once and waits for the reconcile of our key it published. */
  const resync = async () => {
    const before = resyncOutcomes();
    await serverlessStack(p).runResync();
    await waitFor(() => resyncOutcomes() > before, { message: `the resync's reconcile of ${ns}/web` });
  };

  before(async () => {
    p = await startPipeline(
      async (cluster) => {
        apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
        ns = await cluster.createNamespace('drift');
        await cluster.applyCrd(CRD, resource, ns);
        return {};
      },
      { mode: 'serverless' },
    );
  });
  after(async () => {
    await p?.stop();
  });

  it('a change whose watch event was lost is corrected by the resync and counted as drift once', async () => {
    const custom = p.cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      ...resource,
      namespace: ns,
      body: {
        apiVersion: 'samplecontroller.k8s.io/v1alpha1',
        kind: 'Foo',
        metadata: { name: 'web' },
        spec: { deploymentName: 'web-nginx', replicas: 1 },
      },
    });
    // Converged by watch events: the Deployment made (its own ADDED is dropped by the Foo's
    // skipOwnCreates, docs/architecture.md decision 32).
    await waitFor(() => replicas().then((r) => r === 1), { message: 'the Deployment web-nginx' });
    // Settled: every key the relay queued is published and every published key reconciled.
    await waitFor(
      async () => {
        const enqueued = await relayCounter(p, 'levelset_relay_keys_enqueued_total', 'controller="foo"');
        const published = await relayCounter(p, 'levelset_relay_keys_published_total', 'controller="foo"');
        const finished = keyLines((l) => l.reason === 'watch' && typeof l.outcome === 'string').length;
        return enqueued === published && finished >= published && finished >= 1;
      },
      { message: 'every watch key of the Foo published and reconciled' },
    );

    const local = p.cluster.local;
    assert.ok(local);
    local.faults.dropNextWatchEvents({ storage: 'apps/deployments', namespace: ns, name: 'web-nginx' }, 1);
    await apps.patchNamespacedDeployment(
      { namespace: ns, name: 'web-nginx', body: { spec: { replicas: 4 } }, fieldManager: 'kubectl-edit' },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    assert.equal(await replicas(), 4, 'the change is stored; only its watch event was lost');

    await resync();
    await waitFor(() => replicas().then((r) => r === 1), { message: 'the resync restoring replicas 1' });
    // The drift line follows the delivery's outcome line: it may reach the log a moment later.
    await waitFor(() => driftLines().length > 0, { message: 'the drift line' }).catch(() => {});
    const drift = driftLines();
    assert.equal(
      drift.length,
      1,
      JSON.stringify(
        keyLines(() => true).map(({ line }) => [line.reason, line.message, line.outcome, line.changes]),
      ),
    );
    assert.equal(drift[0]?.line.severity, 'WARNING');

    // The next resync finds the key converged: no more drift.
    await resync();
    assert.equal(driftLines().length, 1);
  });
});
