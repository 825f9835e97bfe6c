/**
 * `npm run soak`: the whole local stack (serverless: relay, Pub/Sub emulator, functions) with every
 * registered controller, a seeded random workload, faults on a schedule, and an auditor apart from
 * Levelset's code that checks every controller's level invariant every second or so. Writes
 * `results.json`, `report.md`, `latency.svg` and `memory.svg` (soak/report.ts), and exits 1 when an
 * invariant is violated after the final quiet period (one resync interval without change or fault).
 *
 *   npm run soak                               # 30 minutes, seed 1, into soak/
 *   npm run soak -- --minutes 3 --out DIR      # the smoke (test/load/soak.load.ts)
 *   npm run soak -- --seed 7                   # another sequence of changes and faults
 *   npm run soak -- --kubeconfig ~/.kube/config  # against a real kube-apiserver (a disposable one:
 *                                              # it makes namespaces soak-*, Tenants and CRDs); the
 *                                              # faults only the local server injects are skipped
 *                                              # (watch drops, outages and latency are injected at a
 *                                              # TCP proxy in front of it: local/tcp-proxy.ts; --direct
 *                                              # to go without)
 *   npm run soak -- --kubeconfig K --restart-apiserver-command 'CMD'
 *                                              # and its restart as a fault: the soak runs CMD under
 *                                              # sh -c, then waits for /readyz (soak/faults.ts)
 *
 * Timeline: start-up (API server, CRDs, the soak's namespaces, the stack), a warm-up (the first
 * primaries, ≥ 1 resync interval, not in the memory slopes), the active phase (a change every
 * 0.3–0.9 s, quiet periods of 30–60 s, bursts of `--burst` changes, one fault at a time on a
 * schedule that injects each kind at least five times in 30 minutes), then the quiet period and the
 * final audit. SIGINT or SIGTERM stops everything the run started and exits 130 / 143 without a
 * report; every child process is the stack's, stopped by its stop (and gone with this process
 * anyway: local/parent-watch.ts).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { constants, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { type LocalApiServer, startLocalApiServer } from '@levelset/apiserver';
import { z } from 'zod';
import { machine } from '../bench/report.ts';
import { createLogger } from '../core/log.ts';
import { PooledKubeConfig } from '../core/pooled-kubeconfig.ts';
import { waitFor } from '../functions/kit/wait.ts';
import { installCrds } from '../local/demo.ts';
import { relaunchWithAllocatorEnv, repoRoot } from '../local/service.ts';
import { startSimulatedNode } from '../local/simulated-node.ts';
import { type LocalStack, startLocalStack } from '../local/stack.ts';
import { readStackState } from '../local/state.ts';
import { startTcpProxy, type TcpProxy } from '../local/tcp-proxy.ts';
import { type AuditResult, createAuditor, LAYOUT, TENANTS, type Violation } from './auditor.ts';
import { registeredCrds } from './crds.ts';
import { faultKinds, faultSchedule, restartApiServerBy } from './faults.ts';
import { leafProcess, MemorySampler, metricsMemory, slopeOf } from './memory.ts';
import { seededRandom } from './random.ts';
import { latencyChart, markdownReport, memoryChart, type SoakResults } from './report.ts';
import { controllerOfKey, count, LatencyTally, resyncCause, Tallies } from './tally.ts';
import { createWorkload, Ledger } from './workload.ts';

/**
 * The soak's own Node flags: a young generation of at most 8 MiB per semi-space, as the functions run
 * (local/stack-services.ts FUNCTION_NODE_OPTIONS). Without it this Node sizes the soak's young
 * generation to 128 MiB, whose pages become resident one after another through the run and stay:
 * the process's RSS rose outside V8's own count of its physical memory for the whole run (decision 74).
 */
const SOAK_NODE_FLAGS = ['--max-semi-space-size=8'];

// The soak's own process (the local API server, the auditor, the workload, the push proxies) runs
// with glibc's malloc settings, as the stack's services do, and with SOAK_NODE_FLAGS: glibc and V8
// read them at start-up only, so a soak started without them runs itself again as a child with them
// and exits with its exit code (local/service.ts relaunchWithAllocatorEnv; decision 74).
const relaunched = await relaunchWithAllocatorEnv(SOAK_NODE_FLAGS);
if (relaunched !== undefined) process.exit(relaunched);

/**
 * `kubeConfig` with its current cluster's server at the soak's proxy (`https://127.0.0.1:port`): a
 * server named by a host name keeps it as the TLS server name (`tls-server-name`), so its
 * certificate still verifies; one named by an IP address needs a certificate that holds 127.0.0.1.
 */
function proxiedKubeconfig(kubeConfig: KubeConfig, port: number): string {
  const config = JSON.parse(kubeConfig.exportConfig()) as {
    clusters: { name: string; cluster: Record<string, unknown> }[];
  };
  const current = kubeConfig.getCurrentCluster();
  for (const c of config.clusters)
    if (c.name === current?.name) {
      const host = new URL(c.cluster.server as string).hostname;
      c.cluster.server = `https://127.0.0.1:${port}`;
      if (!isIP(host.replace(/^\[|\]$/g, '')) && !c.cluster['tls-server-name'])
        c.cluster['tls-server-name'] = host;
    }
  return JSON.stringify(config);
}

/** The command line, checked. */
const Options = z.object({
  minutes: z.coerce
    .number()
    .positive()
    .max(24 * 60),
  seed: z.coerce.number().int(),
  kubeconfig: z.string().optional(),
  out: z.string(),
  resyncSeconds: z.coerce.number().int().min(10).max(3600),
  burst: z.coerce.number().int().min(0).max(10_000),
  restartApiServerCommand: z.string().min(1).optional(),
  direct: z.boolean(),
});
type Options = z.infer<typeof Options>;

const started = performance.now();
const log = (line: string) =>
  process.stderr.write(`[soak ${Math.round((performance.now() - started) / 1000)}s] ${line}\n`);

/** A change pending this long before a resync, and converged within this long after it, converged at the resync. */
const RESYNC_GRACE_MS = 20_000;
/** A fault stays "active" this long after its injection returns (the informers re-watching, keys retried). */
const FAULT_AFTERMATH_MS = 5_000;
/**
 * A change's key is in the keys topic by this long after the change, ms, when the relay saw its
 * event: the relay's collapse window (1 s) and its publish, with room for a loaded machine. An
 * audit this long after the change that finds none of its controller's keys in the topic, the change
 * still pending, finds its key not in flight.
 */
const IN_FLIGHT_AFTER_MS = 10_000;
/** Resyncs kept for the at-resync test: a change pending longer than this many resync intervals is not checked against the older ones. */
const RESYNCS_KEPT = 64;
/** The local API server's watch history's age bound, ms (kube-apiserver's default `--etcd-compaction-interval`). */
const HISTORY_MS = 5 * 60_000;

/** What the run started, stopped in the reverse order by {@link stop}. */
const stopAll: (() => Promise<void>)[] = [];
let stopping = false;
/** Stops everything started so far (each part once), newest first; never throws. */
async function stop(): Promise<void> {
  while (stopAll.length)
    await (stopAll.pop() as () => Promise<void>)().catch((err) => log(`stop: ${String(err)}`));
}
for (const [signal, code] of [
  ['SIGINT', 128 + constants.signals.SIGINT],
  ['SIGTERM', 128 + constants.signals.SIGTERM],
] as const)
  process.once(signal, () => {
    stopping = true;
    log(`${signal}: stopping`);
    void stop().finally(() => process.exit(code));
  });
// A failure anywhere (a loop's rejected promise) still stops every child and removes the temp dir.
for (const event of ['uncaughtException', 'unhandledRejection'] as const)
  process.on(event, (err) => {
    log(`${event}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    void stop().finally(() => process.exit(1));
  });

/** Runs the soak; resolves with the process's exit code. */
async function soak(options: Options, command: string): Promise<number> {
  const t0 = Date.now();

  const dir = mkdtempSync(join(tmpdir(), 'levelset-soak-'));
  stopAll.push(async () => rmSync(dir, { recursive: true, force: true }));
  const random = seededRandom(options.seed);
  const notes: string[] = [];

  // The cluster: the local API server in this process (its fault injector is the soak's), or a real one.
  let local: LocalApiServer | undefined;
  let kubeconfigPath: string;
  if (options.kubeconfig) kubeconfigPath = options.kubeconfig;
  else {
    // The watch history: up to 5 000 events per resource (a burst of a thousand changes), none older
    // than 5 minutes (etcd's compaction interval in kube-apiserver's default). Without the age
    // bound, the history of the Secrets (every 900 KiB source's copies, 1.2 MB of JSON each) filled
    // for longer than the run and was most of this process's heap growth (decision 68).
    local = await startLocalApiServer({
      kubeconfigPath: join(dir, 'kubeconfig'),
      historySize: 5000,
      historyMs: HISTORY_MS,
      // Nothing reads its request log: the default 100 000 entries (≈ 20 MiB) filled for the whole
      // run, a growth of this process's heap that plateaus only after it; and Events live as long
      // as the history (kube-apiserver's `--event-ttl` is 1 h, longer than a run): the controllers
      // record about 40 new Events a minute under this workload (decision 71).
      requestLogEntries: 1000,
      eventTtlMs: HISTORY_MS,
    });
    const server = local;
    stopAll.push(() => server.stop());
    kubeconfigPath = local.kubeconfigPath;
  }
  const kubeConfig = new PooledKubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  const clusterName = local
    ? 'local API server (apiserver/, in the soak process)'
    : `real API server ${kubeConfig.getCurrentCluster()?.server ?? '?'}`;
  log(`cluster: ${clusterName}`);
  if (local) {
    const node = await startSimulatedNode(kubeConfig, createLogger('soak-node'));
    stopAll.push(() => node.stop());
  }
  const crds = registeredCrds();
  await installCrds(kubeConfig, crds);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  await waitFor(() => custom.listClusterCustomObject(TENANTS).then(() => true), {
    timeoutMs: 30_000,
    message: 'the CRDs served',
  });

  // The figures, as aggregates (soak/tally.ts): a converged change is tallied and dropped.
  const latency = { overall: new LatencyTally(), noFault: new LatencyTally(), perFault: new Tallies() };
  const atResync = {
    total: 0,
    perFault: {} as Record<string, number>,
    perKind: {} as Record<string, number>,
    perCause: {} as Record<string, number>,
    perCauseFault: {} as Record<string, Record<string, number>>,
  };
  /** The delivery watchdog's dead letters by controller at the latest audit. */
  let deadLetteredNow: Record<string, number> = {};
  const ledger = new Ledger((c) => {
    if (c.convergedAt === undefined) return;
    const ms = c.convergedAt - c.at;
    latency.overall.record(ms);
    if (c.faults.size === 0) latency.noFault.record(ms);
    for (const f of c.faults) latency.perFault.of(f).record(ms);
    if (!c.atResync) return;
    atResync.total++;
    const cause = resyncCause(c, deadLetteredNow);
    count(atResync.perCause, cause);
    atResync.perCauseFault[cause] ??= {};
    for (const f of c.faults.size ? c.faults : ['none']) {
      count(atResync.perFault, f);
      count(atResync.perCauseFault[cause], f);
    }
    count(atResync.perKind, c.kind);
  });
  let failedWrites = 0;
  const workload = createWorkload({
    kubeConfig,
    random,
    ledger,
    onFailedWrite: () => {
      failedWrites++;
    },
  });
  if (!local)
    stopAll.push(async () => {
      // A real cluster keeps what the soak made: delete it (Tenants first: they hold namespaces).
      const core = kubeConfig.makeApiClient(CoreV1Api);
      for (const name of workload.tenantNames())
        await custom.deleteClusterCustomObject({ ...TENANTS, name }).catch(() => undefined);
      for (const name of workload.madeNamespaces())
        await core.deleteNamespace({ name }).catch(() => undefined);
    });
  await workload.setup();

  // The stack: every registered controller, serverless.
  const warnings: Record<string, number> = {};
  /** The latest resyncs (at most {@link RESYNCS_KEPT}), and how many there were. */
  const resyncs: { at: number; durationMs: number }[] = [];
  let resyncCount = 0;
  const resyncIntervalMs = options.resyncSeconds * 1000;
  const stateDir = join(dir, 'state');
  // On a real server, the stack's processes reach it through the soak's TCP proxy (the connection
  // faults); the auditor, the workload and the API server's restart reach it directly.
  let proxy: TcpProxy | undefined;
  let stackKubeconfigPath = kubeconfigPath;
  if (!local && !options.direct) {
    const server = new URL(kubeConfig.getCurrentCluster()?.server ?? '');
    const started = await startTcpProxy(server.hostname, Number(server.port || 443));
    proxy = started;
    stopAll.push(() => started.stop());
    stackKubeconfigPath = join(dir, 'stack.kubeconfig');
    writeFileSync(stackKubeconfigPath, proxiedKubeconfig(kubeConfig, started.port), { mode: 0o600 });
    log(`the stack reaches ${server.host} through the soak's TCP proxy on port ${started.port}`);
  }
  const stack: LocalStack = await startLocalStack({
    mode: 'serverless',
    kubeconfigPath: stackKubeconfigPath,
    env: { LEVELSET_SOURCE_NAMESPACE: LAYOUT.sourceNamespace, LOG_LEVEL: 'warn' },
    resyncIntervalMs,
    stateDir,
    tracing: false,
    onLog: (service, line) => {
      if (['WARNING', 'ERROR', 'CRITICAL'].includes(String(line.severity)) || line.raw)
        warnings[service] = (warnings[service] ?? 0) + 1;
    },
    onResync: (report) => {
      if (report instanceof Error) log(`resync failed: ${report.message}`);
      else {
        resyncCount++;
        resyncs.push({ at: Date.now(), durationMs: report.durationMs });
        if (resyncs.length > RESYNCS_KEPT) resyncs.shift();
      }
    },
  });
  stopAll.push(() => stack.stop());
  // The keys in flight, for the causes of a change converged only at a resync (on by default).
  const { watchdog } = stack;
  if (!watchdog) throw new Error('the soak reads the delivery watchdog, which did not start');
  log(
    `stack started: relay ${stack.relay()?.pid}, reconcile ${stack.reconcile.pid}, emulator ${stack.emulator.pid}`,
  );
  const { reconcileMetricsUrl: reconcileMetrics, resyncMetricsUrl: resyncMetrics } =
    readStackState(stateDir) ?? {};

  // Memory.
  /** A pid of the stack's, or undefined while that process is down (a getter that throws then). */
  const pidOf = (get: () => number | undefined) => () => {
    try {
      return get();
    } catch {
      return undefined;
    }
  };
  const sampler = new MemorySampler([
    {
      name: 'relay',
      pid: pidOf(() => stack.relay()?.pid),
      memory: async () => {
        const url = stack.relay()?.url;
        return url ? metricsMemory(new URL('/metrics', url).href) : undefined;
      },
    },
    {
      name: 'reconcile',
      pid: pidOf(() => stack.reconcile.pid),
      memory: async () => (reconcileMetrics ? metricsMemory(reconcileMetrics) : undefined),
    },
    {
      name: 'resync',
      pid: pidOf(() => stack.resync.pid),
      memory: async () => (resyncMetrics ? metricsMemory(resyncMetrics) : undefined),
    },
    // Google's emulator is a Java process under a Node guard (local/guard.ts): its RSS is the Java
    // process's (no V8 heap); the guard's own is sampled apart.
    {
      name: 'pubsub-emulator',
      pid: pidOf(() => {
        const guard = stack.emulator.pid;
        const java = guard ? leafProcess(guard) : undefined;
        return java !== guard ? java : undefined;
      }),
    },
    { name: 'emulator guard', pid: pidOf(() => stack.emulator.pid) },
    {
      name: local ? 'soak (API server, auditor, workload)' : 'soak (auditor, workload)',
      pid: () => process.pid,
      memory: async () => {
        const { heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
        return {
          heapMiB: heapUsed / 2 ** 20,
          heapTotalMiB: heapTotal / 2 ** 20,
          externalMiB: external / 2 ** 20,
          arrayBuffersMiB: arrayBuffers / 2 ** 20,
        };
      },
    },
  ]);

  // The auditor's loop: converges pending changes.
  const auditor = createAuditor(kubeConfig);
  const auditDurations = new LatencyTally();
  let failedReads = 0;
  let auditing = true;
  const onAudit = (result: AuditResult) => {
    auditDurations.record(result.durationMs);
    // The keys topic now (the delivery watchdog runs in this process): what is in flight.
    const delivery = watchdog.status();
    deadLetteredNow = delivery.deadLetteredByController;
    const violated = new Set(result.violations.map((v) => v.key));
    for (const c of [...ledger.pending]) {
      const controllers = [...new Set(c.keys.map(controllerOfKey))];
      c.deadLetteredAtFirstAudit ??= controllers.reduce((n, k) => n + (deadLetteredNow[k] ?? 0), 0);
      if (c.at < result.startedAt && c.keys.every((k) => !violated.has(k))) {
        c.atResync = resyncs.some(
          (r) =>
            r.at - r.durationMs - c.at >= RESYNC_GRACE_MS &&
            result.startedAt >= r.at - r.durationMs &&
            result.startedAt - r.at <= RESYNC_GRACE_MS,
        );
        ledger.converged(c, result.startedAt);
      } else if (
        c.notInFlightAt === undefined &&
        result.startedAt - c.at >= IN_FLIGHT_AFTER_MS &&
        controllers.every((k) => !delivery.backlogByController[k])
      )
        c.notInFlightAt = result.startedAt;
    }
  };
  const auditLoop = (async () => {
    while (auditing) {
      const begun = Date.now();
      try {
        onAudit(await auditor.audit());
      } catch {
        failedReads++;
      }
      await sleep(Math.max(0, 1000 - (Date.now() - begun)));
    }
  })();
  const memoryLoop = (async () => {
    while (auditing) {
      await sampler.sample().catch((err) => log(`memory sample: ${String(err)}`));
      await sleep(options.minutes >= 10 ? 10_000 : 3_000);
    }
  })();

  // The schedule.
  const totalMs = options.minutes * 60_000;
  const quietEndMs = resyncIntervalMs + 10_000;
  const activeEnd = t0 + totalMs - quietEndMs;
  log('warm-up: the first primaries');
  await workload.seed();
  const warmupEnd = Math.max(Date.now() + 5_000, t0 + Math.min(resyncIntervalMs, totalMs / 6));
  const kinds = faultKinds({
    stack,
    apiFaults: local?.faults,
    workload,
    random,
    ...(proxy ? { proxy } : {}),
    ...(options.restartApiServerCommand && !local
      ? { restartApiServer: restartApiServerBy(options.restartApiServerCommand, kubeConfig, log) }
      : {}),
  });
  const injectable = kinds.filter((k) => !k.skipped);
  const faultCounts = new Map(kinds.map((k) => [k.name, { injected: 0, failed: 0 }]));
  // Each kind at least five times in 30 minutes: slots at most 30 s apart, each kind at seeded
  // random slots, the process restarts in the first third (soak/faults.ts faultSchedule).
  const faultPeriodMs = Math.max(
    8_000,
    Math.min(30_000, (activeEnd - warmupEnd) / Math.max(1, injectable.length * 5 + 1)),
  );
  const slots: number[] = [];
  for (let slot = warmupEnd + faultPeriodMs; slot < activeEnd; slot += faultPeriodMs) slots.push(slot);
  const schedule = faultSchedule(
    injectable,
    slots.length,
    5 * Math.max(1, Math.floor(options.minutes / 30)),
    random,
  );
  const lastRestart = schedule.findLastIndex((k) => k?.restarts);
  const restartsEnd = lastRestart >= 0 ? slots[lastRestart + 1] : undefined;
  if (restartsEnd)
    log(
      `process restarts until ${Math.round((restartsEnd - t0) / 1000)} s, none after (the memory slopes' last life)`,
    );
  const faultLoop = (async () => {
    for (const [i, slot] of slots.entries()) {
      await sleep(Math.max(0, slot - Date.now()));
      // A fault the schedule holds still runs when the faults before it took longer than their
      // slots (the active phase may have ended): every kind gets its count.
      if (stopping) break;
      const kind = schedule[i];
      if (!kind) continue;
      const count = faultCounts.get(kind.name) as { injected: number; failed: number };
      ledger.faultStarted(kind.name);
      try {
        await kind.inject();
        count.injected++;
      } catch (err) {
        count.failed++;
        log(`fault ${kind.name} failed: ${String(err)}`);
      }
      setTimeout(() => ledger.faultEnded(kind.name), FAULT_AFTERMATH_MS).unref();
      log(`fault ${kind.name} (${count.injected}); ${ledger.total} changes, ${ledger.pending.size} pending`);
    }
  })();
  // A step's own read (which primary to change, which child to break) can fail while the API server
  // is restarted or unreachable: the step is skipped (its writes retry, soak/workload.ts).
  let failedSteps = 0;
  const stepFailed = (err: unknown) => {
    if (failedSteps++ === 0)
      log(`a step of the workload failed (skipped; counted from now on): ${String(err)}`);
  };
  let bursts = 0;
  // A burst about every 7 minutes (one at least), the first half a period after the warm-up.
  const burstEvery = (activeEnd - warmupEnd) / Math.max(1, Math.round((activeEnd - warmupEnd) / 420_000));
  let nextBurst = warmupEnd + burstEvery / 2;
  let nextQuiet = warmupEnd + random.int(120, 240) * 1000;
  while (Date.now() < activeEnd && !stopping) {
    if (options.burst > 0 && Date.now() >= nextBurst) {
      log(`burst of ${options.burst} changes`);
      await workload.burst(options.burst).catch(stepFailed);
      bursts++;
      nextBurst += burstEvery;
    } else if (Date.now() >= nextQuiet) {
      const ms = random.int(30, 60) * 1000;
      log(`quiet for ${ms / 1000} s`);
      await sleep(Math.min(ms, Math.max(0, activeEnd - Date.now())));
      nextQuiet = Date.now() + random.int(180, 300) * 1000;
    } else {
      await workload.step().catch(stepFailed);
      await sleep(random.int(300, 900));
    }
  }
  await faultLoop;
  local?.faults.clear();
  // Everything a fault stops is running again: inject() mends what it breaks, even when it failed half-way.
  if (!stack.relay()) await stack.startRelay().catch((err) => log(`relay restart: ${String(err)}`));
  log(`quiet period: ${quietEndMs / 1000} s (one resync interval and 10 s), no change, no fault`);
  await sleep(quietEndMs);

  // The final audit, with a few retries of a failed read (not of a violation).
  let final: AuditResult | undefined;
  for (let i = 0; i < 5 && !final; i++) final = await auditor.audit().catch(() => undefined);
  if (final) onAudit(final);
  auditing = false;
  await auditLoop;
  await memoryLoop;
  const finalViolations: Violation[] = final?.violations ?? [
    { key: '-', detail: 'the final audit could not read the cluster' },
  ];
  log(`final audit: ${finalViolations.length} invariants violated`);

  // The figures.
  const unconverged = [...ledger.pending];
  const auditMs = auditDurations.figures();
  const memory: SoakResults['memory'] = {};
  for (const [name, samples] of sampler.samples)
    memory[name] = {
      slope: slopeOf(samples, warmupEnd),
      peakRssMiB: samples.length ? Math.max(...samples.map((s) => s.rssMiB)) : undefined,
      lastRssMiB: samples.at(-1)?.rssMiB,
    };
  if (!local)
    notes.push(
      `Against a real kube-apiserver: the faults only the local API server can inject were skipped (see the faults table); etcd compaction is the cluster's own; ${options.restartApiServerCommand ? "the API server's restart is injected by the operator's command (--restart-apiserver-command), then /readyz awaited" : 'its restart was not injected (no --restart-apiserver-command)'}.`,
    );
  notes.push(
    ...(local
      ? [
          'The API server outage is the local server paused with every connection reset for 5 s, its store kept: the local server cannot be restarted as a process (its store is in memory), as a kube-apiserver restart keeps etcd.',
        ]
      : []),
    'The relay and the functions run as the cluster admin here (the end-to-end tests run them least-privileged).',
  );
  const results: SoakResults = {
    command,
    startedAt: new Date(t0).toISOString(),
    warmupEndMs: warmupEnd,
    durationS: (Date.now() - t0) / 1000,
    minutes: options.minutes,
    seed: options.seed,
    cluster: clusterName,
    machine: machine(),
    resyncIntervalMs,
    changes: {
      total: ledger.total,
      byKind: ledger.byKind,
      inBursts: ledger.inBursts,
      failedWrites,
      failedSteps,
      bursts,
    },
    faults: kinds.map((k) => ({
      kind: k.name,
      description: k.description,
      injected: faultCounts.get(k.name)?.injected ?? 0,
      failed: faultCounts.get(k.name)?.failed ?? 0,
      ...(k.skipped ? { skipped: k.skipped } : {}),
    })),
    latency: {
      overall: latency.overall.figures(),
      noFault: latency.noFault.figures(),
      perFault: latency.perFault.figures(kinds.map((k) => k.name)),
    },
    atResync,
    neverConverged: unconverged.length,
    audits: {
      count: auditMs.n,
      failedReads,
      ...(auditMs.n ? { p50DurationMs: auditMs.p50, maxDurationMs: auditMs.max } : {}),
    },
    resyncs: resyncCount,
    finalViolations,
    memory,
    warnings,
    notes,
  };
  mkdirSync(options.out, { recursive: true });
  writeFileSync(
    join(options.out, 'results.json'),
    `${JSON.stringify(
      {
        ...results,
        memorySamples: Object.fromEntries(sampler.samples),
        unconverged: unconverged.slice(0, 50).map((c) => ({ ...c, faults: [...c.faults] })),
      },
      null,
      2,
    )}\n`,
  );
  writeFileSync(
    join(options.out, 'latency.svg'),
    latencyChart(
      latency.overall,
      latency.noFault,
      new Map(kinds.map((k) => [k.name, latency.perFault.of(k.name)])),
    ),
  );
  writeFileSync(join(options.out, 'memory.svg'), memoryChart('Soak: RSS over time', sampler.samples, t0));
  writeFileSync(join(options.out, 'report.md'), markdownReport(results, command));
  log(`report: ${join(options.out, 'report.md')}`);
  await stop();
  return finalViolations.length === 0 ? 0 : 1;
}

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    seed: { type: 'string', default: '1' },
    kubeconfig: { type: 'string' },
    out: { type: 'string' },
    'resync-seconds': { type: 'string', default: '60' },
    burst: { type: 'string', default: '1000' },
    'restart-apiserver-command': { type: 'string' },
    direct: { type: 'boolean', default: false },
  },
});
const options = Options.parse({
  ...values,
  out: values.out ?? join(repoRoot, 'soak'),
  resyncSeconds: values['resync-seconds'],
  restartApiServerCommand: values['restart-apiserver-command'],
  direct: values.direct,
});
process.env.METADATA_SERVER_DETECTION ??= 'none';
const command = `npm run soak -- --minutes ${options.minutes} --seed ${options.seed}${options.kubeconfig ? ' --kubeconfig …' : ''}${options.restartApiServerCommand ? " --restart-apiserver-command '…'" : ''}`;
log(`soak: ${options.minutes} min, seed ${options.seed}, out ${relative(process.cwd(), options.out) || '.'}`);
try {
  process.exitCode = await soak(options, command);
} catch (err) {
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
} finally {
  await stop();
}
