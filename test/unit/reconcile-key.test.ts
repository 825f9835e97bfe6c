/**
 * `reconcileKey`, the per-delivery core both modes share: a key must name an object of the
 * primary's scope (else `malformed`, never reconciled), and the final line of a delivery is one
 * JSON object with each field once (a terminal line carries the delivery's `reason` and the
 * error's `eventReason`); each delivery is counted in the process's Prometheus metrics, by
 * controller and outcome, with the final line's duration.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { Controller } from '../../core/contract/controller.ts';
import type { Key } from '../../core/contract/key.ts';
import { TerminalError } from '../../core/k8s/errors.ts';
import { createLogger, keyLogger } from '../../core/log.ts';
import type { EnqueueReason } from '../../core/message.ts';
import {
  RECONCILE_DURATION_METRIC,
  RECONCILE_TOTAL_METRIC,
  reconcileDuration,
  reconcileTotal,
  serveMetrics,
} from '../../core/metrics.ts';
import { DRIFT_CORRECTED_METRIC, driftCorrected } from '../../functions/runtime/drift.ts';
import { deliveryDelayMs, reconcileKey, referrerKeys } from '../../functions/runtime/reconcile.ts';

/** A logger whose raw lines (text, as written) are collected. */
function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const log = keyLogger(createLogger('test', stream), {
    cluster: 'default',
    controller: 'fake',
    namespace: '',
    name: 'k',
  }).child({ reason: 'watch' });
  return { log, lines };
}

function fake(namespaced: boolean, reconcile: Controller['reconcile']): Controller {
  return {
    name: 'fake',
    primary: { group: '', version: 'v1', plural: 'things', kind: 'Thing', namespaced },
    watches: [],
    rbac: [],
    reconcile,
  };
}

/** A KubeConfig never contacted: the fake controllers make no request and record no Event. */
function neverContacted(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'http://127.0.0.1:9' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

const run = (
  controller: Controller,
  key: Key,
  reason?: EnqueueReason,
  clusters?: { cluster: string; known: string[] },
) => {
  const { log, lines } = capture();
  const calls: Key[] = [];
  const wrapped = {
    ...controller,
    reconcile: (k: Key, ctx: Parameters<Controller['reconcile']>[1]) => {
      calls.push(k);
      return controller.reconcile(k, ctx);
    },
  };
  return reconcileKey(new Map([['fake', wrapped]]), 'fake', key, {
    cluster: clusters?.cluster,
    kubeConfig: (cluster) => {
      if (clusters && !clusters.known.includes(cluster)) return undefined;
      return neverContacted();
    },
    log,
    retriedBy: 'Pub/Sub',
    ...(reason ? { reason } : {}),
  }).then((result) => ({ result, lines, calls }));
};

describe('reconcileKey', () => {
  it("reads the primary not older than the delivery's resourceVersion, and after a conflict reads the latest", async () => {
    const seen: (string | undefined)[] = [];
    const controller = fake(false, async (_k, ctx) => {
      seen.push(ctx.primaryResourceVersion);
      if (seen.length === 1) throw Object.assign(new Error('Conflict'), { code: 409 });
      return {};
    });
    const { log } = capture();
    const { outcome } = await reconcileKey(
      new Map([['fake', controller]]),
      'fake',
      { namespace: '', name: 'k' },
      {
        kubeConfig: neverContacted,
        log,
        retriedBy: 'Pub/Sub',
        primaryResourceVersion: '42',
      },
    );
    assert.equal(outcome, 'success');
    assert.deepEqual(seen, ['42', undefined]);
  });

  it('a key without a namespace for a namespaced primary is malformed, never reconciled', async () => {
    const { result, lines, calls } = await run(
      fake(true, async () => undefined),
      { namespace: '', name: 'foo' },
    );
    assert.deepEqual(result, { outcome: 'malformed' });
    assert.deepEqual(calls, []);
    assert.match(lines.at(-1) ?? '', /key without a namespace for \\"fake\\", whose Thing is namespaced/);
  });

  it('a key with a namespace for a cluster-scoped primary is malformed; without one it is reconciled', async () => {
    const scoped = fake(false, async () => undefined);
    assert.deepEqual((await run(scoped, { namespace: 'ns', name: 'foo' })).result, { outcome: 'malformed' });
    const { result, calls } = await run(scoped, { namespace: '', name: 'foo' });
    assert.deepEqual(result, { outcome: 'success' });
    assert.deepEqual(calls, [{ namespace: '', name: 'foo' }]);
  });

  it('the terminal line carries "reason" once (the delivery\'s) and the error\'s as eventReason', async () => {
    const { result, lines } = await run(
      fake(true, async () => {
        throw new TerminalError('InvalidSpec', 'spec.x is not valid');
      }),
      { namespace: 'ns', name: 'foo' },
    );
    assert.deepEqual(result, { outcome: 'terminal' });
    const line = lines.at(-1) ?? '';
    assert.equal(line.match(/"reason":/g)?.length, 1, line);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    assert.equal(parsed.reason, 'watch');
    assert.equal(parsed.eventReason, 'InvalidSpec');
    assert.equal(parsed.outcome, 'terminal');
  });

  it('a resync key whose reconcile changed something is drift: one WARNING line with drift: true, counted once', async () => {
    const count = async () =>
      (await driftCorrected.get()).values.find((v) => v.labels.controller === 'fake')?.value ?? 0;
    const key = { namespace: 'ns', name: 'foo' };
    const before = await count();
    const changed = fake(true, async () => ({ changed: true }));
    const drift = await run(changed, key, 'resync');
    assert.deepEqual(drift.result, { outcome: 'success' });
    const lines = drift.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      lines.filter((l) => l.drift === true).map((l) => l.severity),
      ['WARNING'],
    );
    assert.equal(await count(), before + 1, DRIFT_CORRECTED_METRIC);
    // A watch key's change was announced; a converged resync key changed nothing: neither is drift.
    for (const { result, lines: other } of [
      await run(changed, key, 'watch'),
      await run(
        fake(true, async () => ({})),
        key,
        'resync',
      ),
    ]) {
      assert.deepEqual(result, { outcome: 'success' });
      assert.ok(!other.some((l) => l.includes('"drift"')));
    }
    assert.equal(await count(), before + 1);
  });

  it("a reconcile's referrers come back as keys of every controller whose primary is their resource, in the key's cluster", async () => {
    const referrers = [
      { resource: { group: '', kind: 'Thing' }, namespace: 'ns', name: 'uses-it' },
      { resource: { group: 'example.com', kind: 'Unreconciled' }, namespace: 'ns', name: 'nobody' },
    ];
    const { result } = await run(
      fake(true, async () => ({ driftCorrected: true, referrers })),
      { namespace: 'ns', name: 'foo' },
      undefined,
      { cluster: 'cluster-2', known: ['cluster-2'] },
    );
    assert.deepEqual(result, {
      outcome: 'success',
      referrers: [{ cluster: 'cluster-2', controller: 'fake', namespace: 'ns', name: 'uses-it' }],
    });
    const registry = new Map([
      ['a', fake(true, async () => undefined)],
      ['b', { ...fake(true, async () => undefined), name: 'b' }],
    ]);
    assert.deepEqual(
      referrerKeys(registry, 'default', referrers.slice(0, 1)).map((k) => k.controller),
      ['fake', 'b'],
      'each controller of the resource',
    );
    assert.deepEqual(referrerKeys(registry, 'default'), []);
  });

  it('runs the reconcile with its cluster in the context; a key of an unknown cluster is malformed, never reconciled', async () => {
    const seen: string[] = [];
    const controller = fake(true, async (_key, ctx) => {
      seen.push(ctx.cluster);
      return undefined;
    });
    const known = { cluster: 'cluster-2', known: ['cluster-1', 'cluster-2'] };
    assert.deepEqual((await run(controller, { namespace: 'ns', name: 'a' }, undefined, known)).result, {
      outcome: 'success',
    });
    assert.deepEqual((await run(controller, { namespace: 'ns', name: 'a' })).result, { outcome: 'success' });
    assert.deepEqual(seen, ['cluster-2', 'default']);
    const { result, lines, calls } = await run(controller, { namespace: 'ns', name: 'a' }, undefined, {
      cluster: 'elsewhere',
      known: known.known,
    });
    assert.deepEqual(result, { outcome: 'malformed' });
    assert.deepEqual(calls, []);
    assert.match(lines.at(-1) ?? '', /unknown cluster \\"elsewhere\\": message dropped/);
  });

  it('counts each delivery by controller and outcome, with the duration of its final line; /metrics serves them', async () => {
    const total = async (outcome: string) =>
      (await reconcileTotal.get()).values.find(
        (v) => v.labels.controller === 'fake' && v.labels.outcome === outcome,
      )?.value ?? 0;
    const observed = async (outcome: string) =>
      (await reconcileDuration.get()).values.find(
        (v) =>
          v.metricName === `${RECONCILE_DURATION_METRIC}_count` &&
          v.labels.controller === 'fake' &&
          v.labels.outcome === outcome,
      )?.value ?? 0;
    const before = { success: await total('success'), terminal: await total('terminal') };
    const durations = { success: await observed('success'), malformed: await observed('malformed') };
    const key = { namespace: 'ns', name: 'a' };
    const ok = await run(
      fake(true, async () => undefined),
      key,
    );
    await run(
      fake(true, async () => {
        throw new TerminalError('InvalidSpec', 'no');
      }),
      key,
    );
    await run(
      fake(true, async () => undefined),
      { namespace: '', name: 'a' },
    );
    assert.equal(await total('success'), before.success + 1);
    assert.equal(await total('terminal'), before.terminal + 1);
    assert.equal(await observed('success'), durations.success + 1);
    assert.equal(await observed('malformed'), durations.malformed, 'a malformed line has no duration');
    const final = JSON.parse(ok.lines.at(-1) ?? '{}') as { durationMs?: number };
    assert.equal(typeof final.durationMs, 'number');

    const { server, port } = await serveMetrics(0);
    try {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      assert.match(
        text,
        new RegExp(`^${RECONCILE_TOTAL_METRIC}\\{controller="fake",outcome="success"\\} \\d+$`, 'm'),
      );
      assert.match(text, new RegExp(`^${DRIFT_CORRECTED_METRIC}`, 'm'));
      assert.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
      assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' })).status, 405);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('deliveryDelayMs: ms from enqueuedAt to delivery, never negative', () => {
    const enqueuedAt = '2026-01-01T00:00:00.000Z';
    assert.equal(deliveryDelayMs(enqueuedAt, Date.parse(enqueuedAt) + 1234.4), 1234);
    assert.equal(deliveryDelayMs(enqueuedAt, Date.parse(enqueuedAt) - 500), 0, 'a clock ahead of ours');
  });
});
