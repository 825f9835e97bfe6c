// The in-process mode's runtime against the Kubernetes API (local API server or TEST_KUBECONFIG):
// keys from the informers reach the workers through the workqueue; outcomes are handled as
// controller-runtime does (requeueAfterMs honoured, transient retried with backoff, terminal
// forgotten), never two reconciles of one key at once; /healthz, /readyz and client-go's workqueue
// metrics are served.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import type { Controller, Result } from '../../core/contract/controller.ts';
import type { Key } from '../../core/contract/key.ts';
import { TerminalError } from '../../core/k8s/errors.ts';
import { createLogger } from '../../core/log.ts';
import { configmaps } from '../../functions/kit/resources.ts';
import { startTestCluster, type TestCluster, uniqueSuffix } from '../../functions/kit/testing.ts';
import { type InProcess, startInProcess } from '../../functions/runtime/in-process.ts';
import { waitFor } from '../support/wait.ts';

describe('in-process mode (integration)', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let ns: string;
  let running: InProcess;
  const name = `inproc-${uniqueSuffix()}`;
  /** Reconcile calls per key name, with their times (ms), and the most running at once per key. */
  const calls = new Map<string, number[]>();
  let running1 = 0;
  let maxConcurrentSameKey = 0;
  const lines: Record<string, unknown>[] = [];

  /** Behaviour by ConfigMap name. */
  const behaviour: Record<string, (n: number) => Promise<Result | undefined>> = {
    requeue: async (n) => (n === 1 ? { requeueAfterMs: 300 } : undefined),
    // A quota naming 300 ms, then twice naming none: the runtime's backoff (retry.ts nextRetry).
    limited: async (n) =>
      n === 1 ? { rateLimited: { retryAfterMs: 300 } } : n <= 3 ? { rateLimited: {} } : undefined,
    flaky: async (n) => {
      if (n <= 3) throw Object.assign(new Error('503 ServiceUnavailable'), { code: 503 });
      return undefined;
    },
    broken: async () => {
      throw new TerminalError('Invalid', 'spec is invalid');
    },
    slow: async () => {
      running1++;
      maxConcurrentSameKey = Math.max(maxConcurrentSameKey, running1);
      await new Promise((resolve) => setTimeout(resolve, 50));
      running1--;
      return undefined;
    },
  };

  const controller: Controller = {
    name,
    primary: configmaps,
    rbac: [],
    watches: [
      {
        resource: configmaps,
        get namespace() {
          return ns;
        },
        map: (e: { object: KubernetesObject }): Key[] => [
          { namespace: ns, name: e.object.metadata?.name ?? '' },
        ],
      },
    ],
    async reconcile(key, ctx) {
      const list = calls.get(key.name) ?? [];
      list.push(performance.now());
      calls.set(key.name, list);
      if (key.name === 'evented') {
        const object = await core.readNamespacedConfigMap({ namespace: ns, name: key.name });
        // Recorded in the background (core/k8s/events.ts BackgroundEvents): returns at once.
        await ctx.events.record(
          { apiVersion: 'v1', kind: 'ConfigMap', ...object },
          'Normal',
          'Synced',
          'evented',
        );
      }
      return (behaviour[key.name] ?? (async () => undefined))(list.length);
    },
  };
  const count = (k: string) => calls.get(k)?.length ?? 0;

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    ns = await cluster.createNamespace('inproc');
    running = await startInProcess({
      kubeConfig: cluster.kubeConfig,
      controllers: [controller],
      workers: 4,
      port: 0,
      host: '127.0.0.1',
      logger: createLogger('relay', { write: () => {} }),
      reconcileLogger: createLogger('functions', { write: (s: string) => void lines.push(JSON.parse(s)) }),
    });
    await running.relay.whenReady();
  });

  after(async () => {
    await running?.stop();
    await cluster?.stop();
  });

  const create = (n: string) =>
    core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: n } } });

  it('retries a rate-limited key after the delay named, else the backoff the counts give, as the serverless mode; forgets it on success', async () => {
    await create('limited');
    const limited = `${ns}/limited`;
    // Counted as the message would carry it (the queue's NumRequeues) while it waits the 300 ms.
    await waitFor(() => running.queues.get(name)?.numRequeues(limited) === 1, { message: 'one rate limit' });
    await waitFor(() => count('limited') === 4, { message: 'limited reconciled 4 times' });
    const [t0, t1, t2, t3] = calls.get('limited') as [number, number, number, number];
    // 300 ms named; then the backoff continues from the count: 10 ms, 20 ms (not 5 ms again).
    assert.ok(t1 - t0 >= 295, `waited ${t1 - t0} ms, asked 300`);
    assert.ok(t2 - t1 >= 9.5 && t3 - t2 >= 19.5, `waited ${t2 - t1} ms, then ${t3 - t2} ms`);
    await waitFor(() => running.queues.get(name)?.numRequeues(limited) === 0, { message: 'forgotten' });
    const outcomes = lines.filter(
      (l) => (l['logging.googleapis.com/labels'] as { key?: string })?.key === limited,
    );
    assert.deepEqual(
      outcomes.map((l) => [l.outcome, l.rateLimited]),
      [
        ['requeue', true],
        ['requeue', true],
        ['requeue', true],
        ['success', undefined],
      ],
    );
  });

  it('reconciles a new object once and forgets it on success', async () => {
    await create('plain');
    await waitFor(() => count('plain') === 1, { message: 'plain reconciled' });
    assert.equal(running.queues.get(name)?.numRequeues(`${ns}/plain`), 0);
  });

  it('honours requeueAfterMs: the key comes back after that delay, not before', async () => {
    await create('requeue');
    await waitFor(() => count('requeue') === 2, { message: 'requeued reconcile' });
    const [first, second] = calls.get('requeue') as number[];
    assert.ok(
      (second as number) - (first as number) >= 290,
      `came back after ${(second as number) - (first as number)} ms`,
    );
    const outcomes = lines.filter(
      (l) => (l['logging.googleapis.com/labels'] as { key?: string })?.key === `${ns}/requeue`,
    );
    assert.deepEqual(
      outcomes.map((l) => l.outcome),
      ['requeue', 'success'],
    );
    assert.equal(outcomes[0]?.requeueAfterMs, 300);
  });

  it('retries a transient failure with per-key backoff, then forgets the key on success', async () => {
    await create('flaky');
    await waitFor(() => count('flaky') === 4, { message: 'flaky reconciled 4 times' });
    const t = calls.get('flaky') as number[];
    // 5 ms, 10 ms, 20 ms backoff (client-go's exponential limiter): growing gaps.
    assert.ok((t[3] as number) - (t[0] as number) >= 30, 'waited 5 + 10 + 20 ms at least');
    await waitFor(() => running.queues.get(name)?.numRequeues(`${ns}/flaky`) === 0, { message: 'forgotten' });
    const text = await (await fetch(`http://127.0.0.1:${running.relay.port}/metrics`)).text();
    assert.match(text, new RegExp(`workqueue_retries_total\\{name="${name}"\\} [3-9]`));
    assert.match(text, new RegExp(`workqueue_adds_total\\{name="${name}"\\} \\d+`));
    assert.match(text, new RegExp(`workqueue_depth\\{name="${name}"\\} \\d+`));
    assert.match(text, /workqueue_work_duration_seconds_bucket/);
    assert.match(text, /levelset_relay_keys_published_total/);
    // The reconciles' and the process's metrics, on the same endpoint.
    assert.match(
      text,
      new RegExp(`levelset_reconcile_total\\{controller="${name}",outcome="transient"\\} [3-9]`),
    );
    assert.match(text, /levelset_reconcile_duration_seconds_bucket/);
    assert.match(text, /process_resident_memory_bytes \d+/);
  });

  it('records an Event in the background: it appears', async () => {
    await create('evented');
    await waitFor(
      async () =>
        (await core.listNamespacedEvent({ namespace: ns })).items.some(
          (e) => e.involvedObject.name === 'evented' && e.reason === 'Synced',
        ),
      { message: 'the Synced Event of evented' },
    );
  });

  it('does not retry a terminal failure', async () => {
    await create('broken');
    await waitFor(() => lines.some((l) => l.outcome === 'terminal'), { message: 'terminal outcome' });
    await create('after-broken');
    await waitFor(() => count('after-broken') === 1, { message: 'a later key reconciled' });
    assert.equal(count('broken'), 1);
  });

  it('never reconciles one key twice at once, and reconciles once more after a change seen meanwhile', async () => {
    await create('slow');
    await waitFor(() => count('slow') >= 1, { message: 'slow started' });
    for (let i = 0; i < 5; i++)
      await core.patchNamespacedConfigMap({
        namespace: ns,
        name: 'slow',
        body: [{ op: 'add', path: '/metadata/labels', value: { n: String(i) } }],
      });
    await waitFor(
      () =>
        running.queues.get(name)?.processing === 0 &&
        running.queues.get(name)?.length === 0 &&
        count('slow') >= 2,
      { message: 'slow settled' },
    );
    assert.equal(maxConcurrentSameKey, 1);
  });

  it('serves /healthz and /readyz', async () => {
    assert.equal((await fetch(`http://127.0.0.1:${running.relay.port}/healthz`)).status, 200);
    assert.equal((await fetch(`http://127.0.0.1:${running.relay.port}/readyz`)).status, 200);
  });

  it('resync adds every primary key', async () => {
    const before = count('plain');
    assert.ok((await running.resync()) >= 5);
    await waitFor(() => count('plain') === before + 1, { message: 'plain reconciled by the resync' });
  });
});
