/**
 * Faults the whole pipeline survives (issue 11), on real parts: the secret-replicator through the
 * relay, the Pub/Sub emulator and `reconcile` under functions-framework, against the local API
 * server. Each test injects one fault, then waits (with a deadline, never a sleep) until the cluster
 * is in exactly the expected state: every copy of every source in every target namespace, none
 * extra, each at its source's current resourceVersion and data. Convergence times are reported as
 * test diagnostics. Local only: the faults are the local API server's and the local stack's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import type { FaultInjector, RequestLog } from '@levelset/apiserver';
import { emulatorClientOptions } from '../../core/publish.ts';
import {
  COPY_LABEL,
  copyLabelValue,
  REPLICATE_TO_ANNOTATION,
  SOURCE_ANNOTATION,
  SOURCE_VERSION_ANNOTATION,
} from '../../functions/controllers/secret-replicator/plan.ts';
import { uniqueSuffix } from '../../functions/kit/testing.ts';
import { stackFaults } from '../../local/stack-faults.ts';
import { type Pipeline, relayCounter, serverlessStack, startPipeline } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const run = uniqueSuffix();
const prefix = `flt-${run}`;
/** gRPC channel options (google-gax passes a client's `grpc.*` options on) for a channel that reconnects within 10 ms. */
const FAST_RECONNECT = { 'grpc.initial_reconnect_backoff_ms': 5, 'grpc.max_reconnect_backoff_ms': 10 };
/** Silence limit of the relay's watches here; the local API server bookmarks every second. */
const SILENCE_TIMEOUT_MS = 3_000;

describe('faults survived by the pipeline (secret-replicator)', {
  skip: !!process.env.TEST_KUBECONFIG,
}, () => {
  let p: Pipeline;
  let core: CoreV1Api;
  let faults: FaultInjector;
  let requests: RequestLog;
  let source: string;
  let version = 0;

  const makeNamespace = async (label: string) => {
    const name = `${prefix}-t${label}`;
    await core.createNamespace({ body: { metadata: { name } } });
    return name;
  };
  const sourceSecret = (name: string): V1Secret => ({
    metadata: { name, namespace: source, annotations: { [REPLICATE_TO_ANNOTATION]: `${prefix}-t.*` } },
    type: 'Opaque',
    data: { v: Buffer.from(`${name}-${++version}`).toString('base64') },
  });
  const createSource = (name: string) =>
    core.createNamespacedSecret({ namespace: source, body: sourceSecret(name) });
  const updateSource = (name: string) =>
    core.patchNamespacedSecret({
      namespace: source,
      name,
      body: [{ op: 'replace', path: '/data', value: sourceSecret(name).data }],
    });
  const deleteSource = (name: string) => core.deleteNamespacedSecret({ namespace: source, name });

  /**
   * Throws unless the cluster holds exactly the expected copies: for each Secret of the source
   * namespace, one copy in every (non-terminating) target namespace with the source's data and
   * resourceVersion; no copy of a source that does not exist, none outside the targets.
   */
  const checkExact = async (): Promise<true> => {
    // Sources by a cluster-wide LIST: a fault aimed at the relay's LIST of the source namespace stays the relay's.
    const [sources, namespaces, copies] = await Promise.all([
      core.listSecretForAllNamespaces({ fieldSelector: `metadata.namespace=${source}` }),
      core.listNamespace(),
      core.listSecretForAllNamespaces({ labelSelector: COPY_LABEL }),
    ]);
    const targets = namespaces.items
      .filter((n) => n.metadata?.name?.startsWith(`${prefix}-t`) && !n.metadata.deletionTimestamp)
      .map((n) => n.metadata?.name ?? '');
    const expected = new Map<string, V1Secret>();
    for (const s of sources.items) for (const ns of targets) expected.set(`${ns}/${s.metadata?.name}`, s);
    const problems: string[] = [];
    const found = new Set<string>();
    for (const c of copies.items) {
      if (!c.metadata?.annotations?.[SOURCE_ANNOTATION]?.startsWith(`${source}/`)) continue;
      const id = `${c.metadata.namespace}/${c.metadata.name}`;
      found.add(id);
      const s = expected.get(id);
      if (!s) problems.push(`extra ${id}`);
      else if (
        c.metadata.annotations[SOURCE_VERSION_ANNOTATION] !== s.metadata?.resourceVersion ||
        JSON.stringify(c.data) !== JSON.stringify(s.data)
      )
        problems.push(`stale ${id}`);
    }
    for (const id of expected.keys()) if (!found.has(id)) problems.push(`missing ${id}`);
    if (problems.length)
      throw new Error(`${problems.length} differences: ${problems.slice(0, 8).join(', ')}`);
    return true;
  };
  /** Waits for {@link checkExact}; reports and returns the time it took (ms from `since`). */
  const converged = async (t: TestContext, since: number, timeoutMs = 60_000) => {
    await waitFor(checkExact, { timeoutMs, intervalMs: 100, message: 'exactly the expected copies' });
    const ms = Date.now() - since;
    t.diagnostic(`converged ${ms} ms after the fault was injected`);
    return ms;
  };
  /**
   * While `starting` (the emulator's start) runs, asks the stack's emulator address for the keys
   * topic's subscriptions every few ms (90 s at most), on a channel that reconnects at once,
   * until it answers; then waits for `starting`.
   * @returns the first answer: `subscribed` when it lists the push subscription, else `no
   * subscription` or the error's message (e.g. the topic not found)
   */
  const firstAnswer = async (starting: Promise<void>): Promise<string> => {
    const stack = serverlessStack(p);
    starting.catch(() => {}); // awaited below, once the address answered
    const pubsub = new PubSub({
      projectId: stack.emulator.projectId,
      ...emulatorClientOptions(stack.emulator.host),
      ...FAST_RECONNECT,
    });
    const topic = pubsub.topic(stack.topology.topic);
    try {
      return await waitFor(
        async () => {
          try {
            const [subscriptions] = await topic.getSubscriptions({ gaxOpts: { timeout: 250, retry: null } });
            return subscriptions.some((s) => s.name === stack.topology.subscription)
              ? 'subscribed'
              : 'no subscription';
          } catch (err) {
            // Not reachable yet (gRPC UNAVAILABLE, DEADLINE_EXCEEDED): ask again.
            if ([14, 4].includes((err as { code?: number }).code ?? 0)) return undefined;
            return (err as Error).message;
          }
        },
        { timeoutMs: 90_000, intervalMs: 5, message: "an answer at the emulator's address" },
      );
    } finally {
      await pubsub.close();
      await starting;
    }
  };
  const readyz = async () => {
    const relay = p.stack.relay();
    if (!relay) throw new Error('relay not running');
    const res = await fetch(new URL('/readyz', relay.url));
    return { status: res.status, body: await res.text() };
  };

  before(async () => {
    p = await startPipeline(
      async (cluster) => {
        core = cluster.kubeConfig.makeApiClient(CoreV1Api);
        source = `${prefix}-src`;
        await core.createNamespace({ body: { metadata: { name: source } } });
        for (const i of [0, 1, 2]) await makeNamespace(String(i));
        return {
          LEVELSET_SOURCE_NAMESPACE: source,
          RELAY_WATCH_SILENCE_TIMEOUT_MS: String(SILENCE_TIMEOUT_MS),
          RELAY_PUBLISH_TIMEOUT_MS: '2000',
        };
      },
      // The faults here fail some deliveries on purpose (a reset mid-reconcile counts as an attempt;
      // a refused connection does not, local/push-proxy.ts): allow Pub/Sub's maximum, so none of
      // these keys is dead-lettered (test/load/delivery-faults.load.ts runs with npm start's 5).
      { maxDeliveryAttempts: 100 },
      { bookmarkIntervalMs: 1_000 },
    );
    const local = p.cluster.local;
    assert.ok(local);
    faults = local.faults;
    requests = local.requests;
    for (const name of ['a', 'b', 'c']) await createSource(name);
    await waitFor(checkExact, { timeoutMs: 60_000, message: 'initial copies' });
  });

  after(async () => {
    faults?.clear();
    await p?.stop();
  });

  it('misses nothing while watches are dropped repeatedly and the history is compacted (410)', async (t) => {
    const started = Date.now();
    const lists = () => requests.count({ verb: 'list', resource: 'secrets', namespace: source });
    const listsBefore = lists();
    // Watches dropped every 100 ms while sources change.
    const stopDropping = faults.dropWatchesEvery(100);
    try {
      await updateSource('a');
      await updateSource('c');
      await createSource('d');
    } finally {
      stopDropping();
    }
    // Then the re-watches are held while more changes land and the history is compacted past the
    // relay's resourceVersion: they get 410 Gone, and the relay must re-list.
    const removeLatency = faults.addLatency({ verb: 'watch' }, 4_000);
    try {
      faults.dropWatches('close');
      await updateSource('b');
      await makeNamespace('3');
      await deleteSource('b');
      faults.compactHistory();
    } finally {
      removeLatency();
    }
    await converged(t, started);
    await waitFor(() => lists() > listsBefore, { message: 'the relay re-listed after 410 Gone' });
  });

  it('restarts a watch that stays open but silent (no event, no bookmark), and misses nothing', async (t) => {
    // Every informer watching first (the previous fault left re-watches in flight).
    await waitFor(
      async () =>
        (await relayCounter(p, 'levelset_relay_informer_watching', `resource="v1/secrets@${source}"`)) === 1,
      { message: 'the sources informer watching' },
    );
    const silenced = faults.silenceWatches();
    const started = Date.now();
    assert.ok(silenced >= 1, `silenced ${silenced} watches`);
    const restartsBefore = await relayCounter(p, 'levelset_relay_watch_silence_restarts_total', '');
    await updateSource('a');
    await createSource('e');
    await converged(t, started, 30_000);
    // Every silenced watch was noticed and watched again (the others may have converged it first).
    await waitFor(
      async () =>
        (await relayCounter(p, 'levelset_relay_watch_silence_restarts_total', '')) - restartsBefore >=
        silenced,
      { timeoutMs: 3 * SILENCE_TIMEOUT_MS, message: `${silenced} silence restarts` },
    );
    // The per-watch gauge of the last event (or bookmark) is a recent Unix time for every informer.
    const relay = p.stack.relay();
    assert.ok(relay);
    const text = await (await fetch(new URL('/metrics', relay.url))).text();
    const stamps = [...text.matchAll(/^levelset_relay_watch_last_event_timestamp_seconds\{[^}]*\} (\S+)/gm)];
    assert.ok(
      stamps.some((m) => m[0].includes(`resource="v1/secrets@${source}"`)),
      'a series for the sources informer',
    );
    for (const m of stamps) assert.ok(Date.now() / 1000 - Number(m[1]) < 30, `recent: ${m[0]}`);
  });

  it('converges through 409/429/500/503 answers and reset connections; the relay honours Retry-After', async (t) => {
    const started = Date.now();
    const writes = { verb: ['create', 'update', 'patch', 'delete'], resource: 'secrets' };
    // One of each: a failing key is retried (functions/runtime/retry.ts), dead-lettered only after its attempts.
    faults.failNext(writes, 1, { status: 409 });
    faults.failNext(writes, 1, { status: 429, retryAfterSeconds: 1 });
    faults.failNext(writes, 1, { status: 500 });
    faults.failNext(writes, 1, { status: 503 });
    faults.failNext(writes, 1, { reset: true });
    faults.failNext({ verb: 'list', resource: 'namespaces' }, 1, { status: 500 });
    faults.failNext({ verb: 'list', resource: 'secrets', namespace: source }, 1, {
      status: 429,
      retryAfterSeconds: 3,
    });
    const since = Date.now();
    faults.dropWatches('reset');
    await makeNamespace('4');
    await converged(t, started, 90_000);
    assert.ok(
      p.logs.some(({ service, line }) => service === 'reconcile' && line.outcome === 'transient'),
      'a reconcile failed transiently and was retried',
    );
    // The relay's LIST answered 429 with Retry-After: 3 was not retried before 3 s.
    const { throttled, next } = await waitFor(
      () => {
        const lists = requests
          .entries({ verb: 'list', resource: 'secrets', namespace: source })
          .filter((e) => e.time >= since);
        const i = lists.findIndex((e) => e.status === 429);
        const [throttled, next] = [lists[i], lists[i + 1]];
        return throttled && next ? { throttled, next } : undefined;
      },
      // Its next LIST waits max(restart backoff, Retry-After): the backoff may have grown to 30 s.
      { timeoutMs: 45_000, message: "the relay's LIST answered 429, then its next LIST" },
    );
    const waited = next.time - throttled.time;
    t.diagnostic(`relay waited ${waited} ms after 429 Retry-After: 3`);
    assert.ok(waited >= 2_900, `waited ${waited} ms`);
  });

  it('reports not ready while it cannot watch, ready again after, and misses nothing', async (t) => {
    const started = Date.now();
    const stopFailing = faults.failNext(
      { verb: ['list', 'watch'], resource: 'secrets', namespace: source },
      Number.POSITIVE_INFINITY,
      { status: 503 },
    );
    try {
      faults.dropWatches('reset');
      const notReady = await waitFor(
        async () => {
          const r = await readyz();
          return r.status === 503 ? r : undefined;
        },
        { timeoutMs: 30_000, message: '/readyz 503' },
      );
      assert.match(notReady.body, new RegExp(`v1/secrets@${source}: cannot watch`));
      t.diagnostic(
        `/readyz false ${Date.now() - started} ms after the watches broke: ${notReady.body.trim()}`,
      );
      await updateSource('c');
    } finally {
      stopFailing();
    }
    await waitFor(async () => (await readyz()).status === 200, { timeoutMs: 60_000, message: '/readyz 200' });
    await converged(t, started);
  });

  it('converges after the relay is killed with collapsed keys not yet published', async (t) => {
    const sourceCount = (await core.listNamespacedSecret({ namespace: source })).items.length;
    await stackFaults(serverlessStack(p)).killRelay();
    await p.stack.startRelay({ RELAY_COLLAPSE_MS: '60000' });
    let started = Date.now();
    try {
      for (const name of ['a', 'c', 'd']) {
        await updateSource(name);
        await updateSource(name);
      }
      const pending = await waitFor(
        async () => {
          const n = await relayCounter(p, 'levelset_relay_keys_pending', '');
          const received = await relayCounter(p, 'levelset_relay_events_received_total', 'v1/secrets@');
          return received >= sourceCount + 6 && n > 0 ? n : undefined; // the sources listed, then the burst
        },
        { message: 'the burst collapsed and waiting in the relay' },
      );
      started = Date.now();
      t.diagnostic(`relay SIGKILLed with ${pending} keys pending`);
    } finally {
      await stackFaults(serverlessStack(p)).killRelay();
      await p.stack.startRelay();
    }
    await converged(t, started);
  });

  it('converges after reconcile is killed mid-reconcile: no duplicate, no orphaned copy', async (t) => {
    // Creates into two namespaces hang, so the reconcile is killed after the others were written.
    const slow = [`${prefix}-t3`, `${prefix}-t4`];
    let removeLatency = slow.map((namespace) =>
      faults.addLatency({ verb: 'create', resource: 'secrets', namespace }, 8_000),
    );
    await createSource('f');
    const readCopy = (namespace: string) =>
      core.readNamespacedSecret({ namespace, name: 'f' }).catch(() => undefined);
    await waitFor(
      async () => (await Promise.all([0, 1, 2].map((i) => readCopy(`${prefix}-t${i}`)))).every(Boolean),
      { message: 'some copies written' },
    );
    let started = Date.now();
    await stackFaults(serverlessStack(p)).restartFunction('reconcile');
    for (const remove of removeLatency) remove();
    t.diagnostic('reconcile SIGKILLed after 3 of 5 copies were written');
    await converged(t, started);

    // The same mid-delete: the copies' deletions hang in two namespaces.
    removeLatency = slow.map((namespace) =>
      faults.addLatency({ verb: 'delete', resource: 'secrets', namespace }, 8_000),
    );
    await deleteSource('f');
    await waitFor(
      async () => (await Promise.all([0, 1, 2].map((i) => readCopy(`${prefix}-t${i}`)))).every((c) => !c),
      { message: 'some copies deleted' },
    );
    started = Date.now();
    await stackFaults(serverlessStack(p)).restartFunction('reconcile');
    for (const remove of removeLatency) remove();
    t.diagnostic('reconcile SIGKILLed after 3 of 5 copies were deleted');
    await converged(t, started);
  });

  it('retries keys from its bounded buffer while the Pub/Sub emulator restarts, without a resync', async (t) => {
    const errorsBefore = await relayCounter(p, 'levelset_relay_publish_errors_total', '');
    const started = Date.now();
    await stackFaults(serverlessStack(p)).stopEmulator();
    try {
      await updateSource('a');
      await createSource('g');
      await waitFor(
        async () => (await relayCounter(p, 'levelset_relay_publish_errors_total', '')) > errorsBefore,
        { message: 'publishes failing while the emulator is down' },
      );
      const buffered = await relayCounter(p, 'levelset_relay_retry_buffer_keys', '');
      t.diagnostic(`emulator down ${Date.now() - started} ms; ${buffered} keys in the retry buffer`);
    } finally {
      // What the relay reaches first at the emulator's address is the whole topology, as Pub/Sub
      // never loses it: a key published to the topic before its subscription existed was lost.
      assert.equal(await firstAnswer(stackFaults(serverlessStack(p)).startEmulator()), 'subscribed');
    }
    // The emulator's JVM restarts first (13-30 s on a loaded 2-core machine), then the backoff runs out.
    await converged(t, started, 120_000);
    assert.ok((await relayCounter(p, 'levelset_relay_keys_retried_total', '')) > 0, 'keys retried');
    assert.equal(await relayCounter(p, 'levelset_relay_retry_buffer_keys', ''), 0);
  });

  it('prunes, at the next resync, copies of a source deleted while the relay was down and a copy whose source never existed', async (t) => {
    await p.stack.stopRelay();
    const started = Date.now();
    await deleteSource('d');
    // A copy of a source that never existed: no event about its source will ever come.
    const ghost = { namespace: source, name: 'ghost' };
    await core.createNamespacedSecret({
      namespace: `${prefix}-t0`,
      body: {
        metadata: {
          name: 'ghost',
          labels: { [COPY_LABEL]: copyLabelValue(ghost) },
          annotations: { [SOURCE_ANNOTATION]: `${source}/ghost` },
        },
        data: { v: Buffer.from('left behind').toString('base64') },
      },
    });
    await assert.rejects(checkExact(), /extra .*ghost/);
    const report = await serverlessStack(p).runResync();
    assert.ok(!report.controllers['secret-replicator']?.error, JSON.stringify(report));
    await converged(t, started);
    await p.stack.startRelay();
  });
});
