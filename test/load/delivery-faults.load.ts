/**
 * Faults of the local delivery path (issue 19): the topology `npm start` creates (ordered push
 * subscription, retry 1 → 10 s, dead letter after 5 attempts) must never stop delivering. A poison
 * key ends in the dead letters while every other key flows, and `levelset dead-letters replay` brings
 * it back; `reconcile` SIGKILLed mid-burst or SIGTERMed while idle and restarted seconds later, and
 * the emulator restarted while the function is down, each converge. Exact-state checks as in
 * faults.test.ts: every copy of every source in every target namespace, none extra, each at its
 * source's resourceVersion and data. Convergence times are reported as test diagnostics.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { PubSub } from '@google-cloud/pubsub';
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import type { FaultInjector, RequestLog } from '@levelset/apiserver';
import { emulatorClientOptions } from '../../core/publish.ts';
import {
  COPY_LABEL,
  REPLICATE_TO_ANNOTATION,
  SOURCE_ANNOTATION,
  SOURCE_VERSION_ANNOTATION,
} from '../../functions/controllers/secret-replicator/plan.ts';
import { uniqueSuffix } from '../../functions/kit/testing.ts';
import { repoRoot } from '../../local/service.ts';
import { stackFaults } from '../../local/stack-faults.ts';
import type { StallReport } from '../../local/watchdog.ts';
import { PIPELINE_MODES, type Pipeline, serverlessStack, startPipeline } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const runPrefix = `dlv-${uniqueSuffix()}`;
/** The watchdog's stall limit here: above the local maximum backoff (10 s), so a retried key is no stall. */
const STALL_MS = 12_000;

/** Runs the `levelset` bin against the stack of `stateDir`. */
function levelset(args: string[], stateDir: string): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(process.execPath, [join(repoRoot, 'cli', 'levelset.ts'), ...args], {
    cwd: repoRoot,
    env: { ...process.env, LEVELSET_STATE_DIR: stateDir, METADATA_SERVER_DETECTION: 'none' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout })));
}

for (const mode of PIPELINE_MODES)
  describe(`the local delivery path never stalls (${mode}, the topology of npm start)`, {
    skip: !!process.env.TEST_KUBECONFIG,
  }, () => {
    const prefix = `${runPrefix}-${mode === 'serverless' ? 's' : 'i'}`;
    const serverless = { skip: mode !== 'serverless' && 'serverless only (Pub/Sub, dead letters)' };
    let p: Pipeline;
    let requests: RequestLog;
    let core: CoreV1Api;
    let faults: FaultInjector;
    let source: string;
    let stateDir: string;
    let version = 0;
    const stalls: StallReport[] = [];

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
    const sources = ['a', 'b', 'c', 'd', 'e', 'f'];
    const updateAll = () => Promise.all(sources.map(updateSource));

    /**
     * Throws unless the cluster holds exactly the expected copies (see faults.test.ts), ignoring the
     * sources named in `except` (a poisoned key: its copies may be anything).
     */
    const checkExact = async (except: readonly string[] = []): Promise<true> => {
      const [sourceList, namespaces, copies] = await Promise.all([
        core.listNamespacedSecret({ namespace: source }),
        core.listNamespace(),
        core.listSecretForAllNamespaces({ labelSelector: COPY_LABEL }),
      ]);
      const targets = namespaces.items
        .filter((n) => n.metadata?.name?.startsWith(`${prefix}-t`) && !n.metadata.deletionTimestamp)
        .map((n) => n.metadata?.name ?? '');
      const expected = new Map<string, V1Secret>();
      for (const s of sourceList.items)
        if (!except.includes(s.metadata?.name ?? ''))
          for (const ns of targets) expected.set(`${ns}/${s.metadata?.name}`, s);
      const problems: string[] = [];
      const found = new Set<string>();
      for (const c of copies.items) {
        const origin = c.metadata?.annotations?.[SOURCE_ANNOTATION];
        if (!origin?.startsWith(`${source}/`) || except.includes(origin.slice(source.length + 1))) continue;
        const id = `${c.metadata?.namespace}/${c.metadata?.name}`;
        found.add(id);
        const s = expected.get(id);
        if (!s) problems.push(`extra ${id}`);
        else if (
          c.metadata?.annotations?.[SOURCE_VERSION_ANNOTATION] !== s.metadata?.resourceVersion ||
          JSON.stringify(c.data) !== JSON.stringify(s.data)
        )
          problems.push(`stale ${id}`);
      }
      for (const id of expected.keys()) if (!found.has(id)) problems.push(`missing ${id}`);
      if (problems.length)
        throw new Error(`${problems.length} differences: ${problems.slice(0, 8).join(', ')}`);
      return true;
    };
    const converged = async (t: TestContext, since: number, except: readonly string[] = []) => {
      await waitFor(() => checkExact(except), {
        timeoutMs: 90_000,
        intervalMs: 100,
        message: 'exactly the expected copies',
      });
      const ms = Date.now() - since;
      t.diagnostic(`converged ${ms} ms after the fault was injected`);
      return ms;
    };
    const deadLetters = async () => {
      const run = await levelset(['dead-letters', 'list', '-o', 'json'], stateDir);
      return JSON.parse(run.stdout) as { controller?: string; key?: string; deliveryAttempts?: number }[];
    };

    before(async () => {
      stateDir = mkdtempSync(join(tmpdir(), 'levelset-delivery-'));
      // The topology `npm start` creates: 5 delivery attempts, retry 1 → 10 s.
      p = await startPipeline(
        async (cluster) => {
          core = cluster.kubeConfig.makeApiClient(CoreV1Api);
          source = `${prefix}-src`;
          await core.createNamespace({ body: { metadata: { name: source } } });
          for (const i of [0, 1, 2])
            await core.createNamespace({ body: { metadata: { name: `${prefix}-t${i}` } } });
          return { LEVELSET_SOURCE_NAMESPACE: source };
        },
        { mode, stateDir, deliveryStallMs: STALL_MS, onDeliveryStall: (report) => stalls.push(report) },
      );
      const local = p.cluster.local;
      assert.ok(local);
      faults = local.faults;
      requests = local.requests;
      for (const name of sources) await createSource(name);
      await waitFor(() => checkExact(), { timeoutMs: 60_000, message: 'initial copies' });
    });

    after(async () => {
      faults?.clear();
      await p?.stop();
      if (stateDir) rmSync(stateDir, { recursive: true, force: true });
    });

    it('keeps every other key flowing while one key fails every attempt (in-process: the workqueue retries it)', {
      skip: mode !== 'in-process' && 'in-process only (serverless: the dead-letter test below)',
    }, async (t) => {
      const started = Date.now();
      const stopFailing = faults.failNext(
        { verb: 'get', resource: 'secrets', namespace: source, name: 'poison' },
        Number.POSITIVE_INFINITY,
        { status: 500 },
      );
      try {
        await createSource('poison');
        await delay(200); // the poison key is queued first
        await updateAll();
        await converged(t, started, ['poison']);
        await updateAll();
        await converged(t, Date.now(), ['poison']);
      } finally {
        stopFailing();
      }
      const fixedAt = Date.now();
      await updateSource('poison'); // an event for it, as a fix of its cause would bring
      await converged(t, fixedAt);
    });

    it(
      'dead-letters a poison key after 5 attempts while every other key keeps flowing; replay brings it back',
      serverless,
      async (t) => {
        const started = Date.now();
        // Every read of the poison source fails: each delivery of its key answers 500.
        const stopFailing = faults.failNext(
          { verb: 'get', resource: 'secrets', namespace: source, name: 'poison' },
          Number.POSITIVE_INFINITY,
          { status: 500 },
        );
        try {
          await createSource('poison');
          await delay(200); // the poison key is published first
          await updateAll();
          await converged(t, started, ['poison']);
          const letters = await waitFor(
            async () => {
              const l = await deadLetters();
              return l.some((d) => d.key === `${source}/poison`) ? l : undefined;
            },
            { timeoutMs: 60_000, intervalMs: 500, message: 'the poison key in the dead-letter subscription' },
          );
          t.diagnostic(`poison key dead-lettered ${Date.now() - started} ms after it was published`);
          const poison = letters.find((d) => d.key === `${source}/poison`);
          assert.equal(poison?.controller, 'secret-replicator');
          assert.equal(poison?.deliveryAttempts, 5);
          // Keys published after the dead-lettering are delivered too.
          await updateAll();
          await converged(t, Date.now(), ['poison']);
        } finally {
          stopFailing();
        }
        const replayedAt = Date.now();
        const replay = await levelset(['dead-letters', 'replay'], stateDir);
        assert.equal(replay.code, 0, replay.stdout);
        assert.match(replay.stdout, /replayed 1 of 1 dead letters/);
        await converged(t, replayedAt);
        assert.deepEqual(await deadLetters(), []);
      },
    );

    /** Kills what reconciles (serverless: `reconcile`; in-process: the one process) with SIGKILL. */
    const killReconciler = async () => {
      if (p.stack.mode === 'serverless')
        await stackFaults(p.stack).restartFunction('reconcile', { killOnly: true });
      else await stackFaults(p.stack).killRelay();
    };
    const startReconciler = async () => {
      if (p.stack.mode === 'serverless') await stackFaults(p.stack).restartFunction('reconcile');
      else await p.stack.startRelay();
    };
    /** Copy writes (in the target namespaces) since `since`, ms epoch. */
    const copyWrites = (since: number) =>
      requests
        .entries({ verb: ['create', 'patch', 'update'], resource: 'secrets' })
        .filter((e) => e.time >= since && e.namespace !== source).length;

    for (const downMs of [0, 3_000, 10_000])
      it(`converges after ${mode === 'serverless' ? 'reconcile' : 'the in-process process'} is SIGKILLed mid-burst and restarted ${downMs / 1000} s later`, async (t) => {
        // Copy writes are slowed so reconciles are in flight when it is killed.
        const removeLatency = faults.addLatency(
          { verb: ['create', 'patch', 'update'], resource: 'secrets' },
          300,
        );
        const burst = Date.now();
        let started: number;
        try {
          await updateAll();
          await waitFor(() => copyWrites(burst) > 0, { message: 'reconciles writing copies' });
          started = Date.now();
          await killReconciler();
          await updateAll(); // changes while it is down
          await delay(downMs);
          await startReconciler();
        } finally {
          removeLatency();
        }
        await converged(t, started);
      });

    it(`converges after ${mode === 'serverless' ? 'reconcile' : 'the in-process process'} is SIGTERMed while idle and restarted 3 s later`, async (t) => {
      await waitFor(() => checkExact(), { message: 'idle: everything delivered' });
      const started = Date.now();
      if (p.stack.mode === 'serverless')
        await stackFaults(p.stack).restartFunction('reconcile', { killOnly: true, signal: 'SIGTERM' });
      else await p.stack.stopRelay();
      await updateAll();
      await delay(3_000);
      await startReconciler();
      await converged(t, started);
    });

    it('converges after the emulator is restarted while reconcile is down', serverless, async (t) => {
      const faults = stackFaults(serverlessStack(p));
      const started = Date.now();
      await faults.restartFunction('reconcile', { killOnly: true });
      await updateAll(); // delivered to the old emulator, never acknowledged: lost with it
      await faults.stopEmulator();
      await faults.startEmulator();
      await updateAll(); // every key again, to the new emulator (the relay's retry buffer holds what failed meanwhile)
      await faults.restartFunction('reconcile');
      await converged(t, started);
      t.diagnostic(`watchdog recoveries so far: ${JSON.stringify(stalls)}`);
    });

    it(
      'the watchdog notices keys published but not delivered while reconcile answers, and recovers',
      serverless,
      async (t) => {
        const stack = serverlessStack(p);
        await waitFor(() => checkExact(), { message: 'idle: everything delivered' });
        const stallsBefore = stalls.length;
        // A push subscription that delivers nothing: gone (as one whose push loop died).
        const pubsub = new PubSub({
          projectId: stack.emulator.projectId,
          ...emulatorClientOptions(stack.emulator.host),
        });
        try {
          await pubsub.subscription(stack.topology.subscription).delete();
        } finally {
          await pubsub.close();
        }
        const started = Date.now();
        await updateAll();
        // `levelset status` shows the backlog and the last delivery meanwhile.
        const status = await waitFor(
          async () => {
            const run = await levelset(['status'], stateDir);
            const backlog = Number(/backlog\s+(\d+) undelivered keys/.exec(run.stdout)?.[1]);
            return backlog >= sources.length ? run.stdout : undefined;
          },
          { intervalMs: 500, message: 'levelset status showing the backlog' },
        );
        assert.match(status, /delivered\s+last \d{4}-\d\d-\d\dT/);
        assert.match(status, /oldest\s+\S+/);
        await converged(t, started);
        assert.equal(stalls.length, stallsBefore + 1, 'one recovery reported');
        assert.ok((stalls.at(-1)?.republished ?? 0) >= sources.length, JSON.stringify(stalls.at(-1)));
        t.diagnostic(`watchdog recovery: ${JSON.stringify(stalls.at(-1))}`);
        await waitFor(() => stack.watchdog?.status().backlog === 0, { message: 'an empty backlog' });
      },
    );
  });
