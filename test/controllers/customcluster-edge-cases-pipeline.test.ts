/**
 * Customcluster edge cases end to end.
 *
 * Requeue with the local mechanism (functions/runtime/requeue.ts `local`, the local stack's default): a
 * Customcluster asking for more pods than one reconcile creates (MAX_BURST) returns
 * `requeueAfterMs`, and the key comes back by itself — with no relay and no resync running, only the
 * requeue can bring it — until every pod exists. How late each requeue came (requested vs actual) is
 * reported as a test diagnostic; timing is not asserted (benchmarks own timing).
 *
 * An object that passes its CRD's schema but cannot be reconciled (a name of 70 characters: a valid
 * DNS-1123 subdomain, but not a label value for its pods) gets a `Ready=False` condition and a
 * Warning Event, and is delivered exactly once: its own status write does not bring it back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { findCondition, parseConditions } from '../../core/k8s/conditions.ts';
import { LABELS } from '../../core/log.ts';
import { MAX_BURST } from '../../examples/customcluster/controllers/customcluster/index.ts';
import type { LogLine } from '../../local/service.ts';
import {
  type Pipeline,
  pushEnvelope,
  relayCounter,
  serverlessStack,
  startPipeline,
} from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const CRD = new URL('../../examples/customcluster/controllers/customcluster/crd.yaml', import.meta.url)
  .pathname;
const group = 'sde.dev';
const version = 'v1alpha1';
const plural = 'customclusters';

/** Start of a delivery, in ms since the epoch: its final line's Cloud Logging timestamp minus its duration. */
function startOf(line: LogLine): number {
  const ts = line.timestamp as { seconds: number; nanos: number };
  return ts.seconds * 1000 + ts.nanos / 1e6 - Number(line.durationMs ?? 0);
}

describe('customcluster edge cases', () => {
  let p: Pipeline;
  let ns: string;
  let core: CoreV1Api;

  before(async () => {
    p = await startPipeline(
      async (cluster) => {
        core = cluster.kubeConfig.makeApiClient(CoreV1Api);
        ns = await cluster.createNamespace('requeue');
        await cluster.applyCrd(CRD, { group, version, plural }, ns);
        return {};
      },
      { relay: false },
    );
  });
  after(async () => {
    await p?.stop();
  });

  it('requeue (local mechanism): brings a key that asked for it back after requeueAfterMs, until converged', async (t) => {
    const count = MAX_BURST * 2 + 1;
    const custom = p.cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'Customcluster',
        metadata: { name: 'big' },
        spec: { count, message: 'requeued' },
      },
    });
    const res = await fetch(serverlessStack(p).reconcile.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        pushEnvelope({
          v: 1,
          controller: 'customcluster',
          namespace: ns,
          name: 'big',
          reason: 'manual',
          enqueuedAt: new Date().toISOString(),
        }),
      ),
    });
    assert.equal(res.status, 204);
    const deliveries = () =>
      p.logs
        .filter(({ service, line }) => {
          const labels = line[LABELS] as { key?: string } | undefined;
          return service === 'reconcile' && labels?.key === `${ns}/big` && typeof line.outcome === 'string';
        })
        .map(({ line }) => line);
    const all = await waitFor(
      () => {
        const d = deliveries();
        return d.length >= 3 && d.at(-1)?.outcome === 'success' && d;
      },
      { message: 'the key requeued until converged', timeoutMs: 60_000 },
    );
    assert.deepEqual(
      all.map((l) => [l.reason, l.outcome]),
      [
        ['manual', 'requeue'],
        ['requeue', 'requeue'],
        ['requeue', 'success'],
      ],
    );
    const pods = await core.listNamespacedPod({ namespace: ns });
    assert.equal(pods.items.length, count);
    // Requested vs actual: each requeued delivery started (enqueuedAt + requeueAfterMs) + lateness.
    for (let i = 1; i < all.length; i++) {
      const asked = all[i - 1] as LogLine;
      const back = all[i] as LogLine;
      const requested = Number(asked.requeueAfterMs);
      const actual = startOf(back) - Date.parse(String(back.enqueuedAt));
      t.diagnostic(`requeue ${i}: requested ${requested} ms, came back after ${actual.toFixed(1)} ms`);
      assert.ok(requested > 0);
    }
  });

  it('gives an object it cannot reconcile a condition and a Warning Event, and delivers it once', async () => {
    await p.stack.startRelay();
    const custom = p.cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const name = 'c'.repeat(70);
    await custom.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'Customcluster',
        metadata: { name },
        spec: { count: 1, message: 'm' },
      },
    });
    const event = await waitFor(
      async () =>
        (await core.listNamespacedEvent({ namespace: ns })).items.find(
          (e) => e.involvedObject.name === name && e.reason === 'InvalidSpec',
        ),
      { message: 'a Warning InvalidSpec Event on the Customcluster' },
    );
    assert.equal(event.type, 'Warning');
    const cc = (await custom.getNamespacedCustomObject({ group, version, plural, namespace: ns, name })) as {
      status?: { conditions?: unknown };
    };
    const ready = findCondition(parseConditions(cc.status?.conditions), 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'InvalidSpec');
    const deliveries = () =>
      p.logs.filter(({ service, line }) => {
        const labels = line[LABELS] as { key?: string } | undefined;
        return service === 'reconcile' && labels?.key === `${ns}/${name}` && typeof line.outcome === 'string';
      });
    // Quiet: the relay dropped the status write's event and published every key it enqueued.
    await waitFor(
      async () => {
        const dropped = await relayCounter(
          p,
          'levelset_relay_events_filtered_total',
          'controller="customcluster"',
        );
        const enqueued = await relayCounter(
          p,
          'levelset_relay_keys_enqueued_total',
          'controller="customcluster"',
        );
        const published = await relayCounter(
          p,
          'levelset_relay_keys_published_total',
          'controller="customcluster"',
        );
        return dropped >= 1 && enqueued === published && deliveries().length >= 1;
      },
      { message: 'the status write dropped by the relay and the delivery finished' },
    );
    assert.deepEqual(
      deliveries().map(({ line }) => line.outcome),
      ['terminal'],
      'one delivery, acknowledged, not retried',
    );
  });
});
