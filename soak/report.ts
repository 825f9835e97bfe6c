/**
 * The soak's figures and their report: `results.json` (every figure), `report.md`, `latency.svg`
 * (change→converged CDF, overall and per fault kind: bench/report.ts's chart) and `memory.svg`
 * (each process's RSS over time).
 */
import { cdfChart } from '../bench/report.ts';
import type { Violation } from './auditor.ts';
import { judgeSlope, type MemorySample, SLOPE_LIMIT_MIB_PER_HOUR, type Slope } from './memory.ts';
import type { LatencyFigures, LatencyTally } from './tally.ts';

export type { LatencyFigures } from './tally.ts';

export interface SoakResults {
  /** The command line, for the report (`--kubeconfig`'s path and the restart command left out). */
  command?: string;
  startedAt: string;
  /** The end of the run's warm-up, ms since the epoch: the memory slopes start there. */
  warmupEndMs?: number;
  /** Wall time of the whole run, s (start-up and the final quiet period included). */
  durationS: number;
  minutes: number;
  seed: number;
  /** `local API server` or the kubeconfig's server. */
  cluster: string;
  machine: Record<string, string | number>;
  resyncIntervalMs: number;
  changes: {
    total: number;
    byKind: Record<string, number>;
    inBursts: number;
    failedWrites: number;
    /** Steps of the workload skipped because a read of theirs failed (the API server restarted or unreachable). */
    failedSteps?: number;
    bursts: number;
  };
  faults: { kind: string; description: string; injected: number; failed: number; skipped?: string }[];
  latency: { overall: LatencyFigures; noFault: LatencyFigures; perFault: Record<string, LatencyFigures> };
  /**
   * Changes that converged only at a resync, overall, per fault kind active meanwhile (`none`: no
   * fault), per kind of change, and per cause (soak/run.ts `resyncCause`), each cause per fault kind.
   */
  atResync: {
    total: number;
    perFault: Record<string, number>;
    perKind: Record<string, number>;
    perCause?: Record<string, number>;
    perCauseFault?: Record<string, Record<string, number>>;
  };
  /** Changes the auditor never saw converge (their primaries were still off their level at the end). */
  neverConverged: number;
  audits: { count: number; failedReads: number; p50DurationMs?: number; maxDurationMs?: number };
  resyncs: number;
  /** Invariants violated at the final audit, after the quiet period (must be none). */
  finalViolations: Violation[];
  memory: Record<string, { slope?: Slope; peakRssMiB?: number; lastRssMiB?: number }>;
  /** Warnings and errors the stack's processes logged, per process. */
  warnings: Record<string, number>;
  notes: string[];
}

const s = (ms: number | undefined) => (ms === undefined ? '—' : `${(ms / 1000).toFixed(1)} s`);
const mib = (x: number | undefined) => (x === undefined ? '—' : `${x.toFixed(1)}`);
const range = (r: [number, number] | undefined) => (r ? `${mib(r[0])} → ${mib(r[1])}` : '—');
/** A life's threads at its first and last sample, or — when not read. */
const threadRange = (r: [number, number] | undefined) => (r ? `${r[0]} → ${r[1]}` : '—');
const withErr = (x: number | undefined, err: number | undefined) =>
  `${mib(x)}${err !== undefined ? ` ± ${mib(err)}` : ''}`;
/** `a 3, b 1`, or `none`. */
const counts = (c: Record<string, number>) =>
  Object.entries(c)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ') || 'none';

/**
 * What the memory slopes measure, process by process: the causes decision 71 found with probes of
 * this stack and workload without faults (RSS by mapping from `/proc/<pid>/smaps`, V8's spaces, heap
 * snapshots), written under the table so that a reader of any run's figures has them.
 */
export const MEMORY_CAUSES =
  "What grows, where (decision 71: the stack and this workload without faults, 16–18 minutes at one and two to three times this run's change rate, RSS by mapping from `/proc/<pid>/smaps`): `reconcile`'s and the relay's memory rises in the first minutes of a life and at a burst, then stays at the mark the largest burst left (their V8 heaps, heap total and memory outside glibc's main arena flat from minute 6 on: `reconcile` 129 → 131 MiB while it ran 7 000 more reconciles); `reconcile`'s RSS floor still moves by about 20 MiB from one 3-minute window to the next, which is glibc's main arena (`[heap]`, 38 ↔ 57 MiB), returned to the system only while its top is free: over a life of five or six windows that alone fits as ±70 MiB/h, so `reconcile`'s verdict here is the allocator's noise, not a leak. Neither function's V8 heap grows with its work (decision 75: three heap snapshots of each, every one after a full collection, at minutes 10, 15.5 and 20.8 of a 22-minute soak of this workload with a burst of 1 000 changes between each two): `reconcile`'s live heap 89.2 → 89.9 → 90.1 MiB while it ran 4 452 reconciles, 0.28 then 0.09 MiB per 1 000, of which V8's compiled code 0.63 MiB and most of the rest the bounded cache of Event counts (at most 4 096 entries) and a publisher and connections made once; `resync`'s 87.3 → 87.6 → 87.6 MiB over ten resyncs, its compiled code 0.27 MiB of it and Node's buffer of fetch timings (at most 250 entries) the rest; no Map keyed by object, key or uid, no metric label, span, timer or connection grew. Their heap floor and heap total here are V8's sawtooth: within every 3-minute window of those lives the heap total moved between about 74 and 110 MiB as V8 grew and shrank its capacity between collections, and the floors of heap in use were 67–72 MiB in every window, so a life's first and last figures, or a fit of five floors, are where the samples fell on it, not a growth; their RSS follows that capacity (V8's pages: `reconcile`'s main arena stayed at 21 MiB while its RSS floor rose 195 → 216 MiB after a burst) and, in `resync`, the external Buffers of each resync (20–85 MiB), up and down. The soak's own process holds the local API server: its watch history keeps 5 minutes of every resource's events (`HISTORY_MS`), so its heap follows the rate of large writes (the 900 KiB Secrets and their copies) of the last 5 minutes, not the run's length, and V8 keeps the heap capacity the largest window needed (each version now shares the strings its write left unchanged with the one before: the heap's floor 152–170 MiB against 213–281 MiB without, in probes at this run's rate); it also held every answered request (up to 100 000, about 200 bytes each: most of the heap's growth between minutes 5 and 15 of the probe) and every Event ever recorded, now bounded (`requestLogEntries` 1 000; Events expire after their last write as kube-apiserver's `--event-ttl`, here after the history's 5 minutes). `resync`'s RSS steps up with the buffers of a large resync and stays. The emulator's growth is its threads (decision 68). Every Node process here, the soak's own included, runs with glibc's mmap and trim thresholds fixed at 128 KiB and at most 2 arenas (local/service.ts `ALLOCATOR_ENV`, decision 74): with glibc's dynamic thresholds the soak's main arena kept the 1.2 MB blocks of the Secrets' JSON (140 → 168 MiB in 8 minutes, against 101 MiB flat side by side). The soak's own process also runs with a young generation of at most 8 MiB per semi-space (`--max-semi-space-size=8`, as the functions): with this Node's default of 128 MiB, the pages its scavenges once touched stayed resident, an RSS growth outside V8's own count of its heap that lasted the whole run (RSS floor 616 ± 238 against 134 ± 39 MiB/h side by side over 10 minutes).";

/** The memory chart: each process's RSS (MiB) over the run's minutes, one line per process. */
export function memoryChart(
  title: string,
  samples: ReadonlyMap<string, readonly MemorySample[]>,
  t0: number,
): string {
  const W = 760;
  const H = 360;
  const m = { l: 60, r: 20, t: 30, b: 90 };
  const all = [...samples.values()].flat();
  const tMax = Math.max(1, ...all.map((x) => (x.at - t0) / 60_000));
  const yMax = Math.max(50, ...all.map((x) => x.rssMiB)) * 1.1;
  const x = (min: number) => m.l + (min / tMax) * (W - m.l - m.r);
  const y = (v: number) => H - m.b - (v / yMax) * (H - m.t - m.b);
  const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b'];
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>${title}</title>`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="18" text-anchor="middle" font-size="14">${title}</text>`,
  ];
  const step = tMax > 20 ? 5 : tMax > 5 ? 1 : 0.5;
  for (let t = 0; t <= tMax + 1e-9; t += step)
    out.push(
      `<line x1="${x(t)}" y1="${m.t}" x2="${x(t)}" y2="${H - m.b}" stroke="#ddd"/>`,
      `<text x="${x(t)}" y="${H - m.b + 16}" text-anchor="middle">${t} min</text>`,
    );
  const yStep = yMax > 800 ? 200 : yMax > 200 ? 100 : 25;
  for (let v = 0; v <= yMax; v += yStep)
    out.push(
      `<line x1="${m.l}" y1="${y(v)}" x2="${W - m.r}" y2="${y(v)}" stroke="#eee"/>`,
      `<text x="${m.l - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`,
    );
  [...samples.entries()].forEach(([name, series], i) => {
    const color = colors[i % colors.length];
    // One polyline per pid: a restarted process starts a new line.
    const byPid = new Map<number, MemorySample[]>();
    for (const p of series) byPid.set(p.pid, [...(byPid.get(p.pid) ?? []), p]);
    for (const segment of byPid.values())
      out.push(
        `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${segment
          .map((p) => `${x((p.at - t0) / 60_000).toFixed(1)},${y(p.rssMiB).toFixed(1)}`)
          .join(' ')}"/>`,
      );
    const ly = H - m.b + 34 + Math.floor(i / 3) * 16;
    const lx = m.l + (i % 3) * 230;
    out.push(
      `<line x1="${lx}" y1="${ly - 4}" x2="${lx + 20}" y2="${ly - 4}" stroke="${color}" stroke-width="2"/>`,
      `<text x="${lx + 26}" y="${ly}">${name} (${byPid.size} pid${byPid.size === 1 ? '' : 's'})</text>`,
    );
  });
  out.push(
    `<text x="14" y="${(H - m.b + m.t) / 2}" transform="rotate(-90 14 ${(H - m.b + m.t) / 2})" text-anchor="middle">RSS, MiB</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}

/**
 * The latency chart: change→converged CDFs, all changes, those with no fault meanwhile and those
 * under each of the four busiest fault kinds (each CDF drawn from its histogram's quantiles).
 */
export function latencyChart(
  overall: LatencyTally,
  noFault: LatencyTally,
  perFault: ReadonlyMap<string, LatencyTally>,
): string {
  const busiest = [...perFault]
    .sort((a, b) => b[1].count - a[1].count)
    .slice(0, 4)
    .filter(([, t]) => t.count > 0);
  return cdfChart("Soak: change → converged (the auditor's view)", [
    { name: 'all changes', values: overall.cdfValues() },
    { name: 'no fault meanwhile', values: noFault.cdfValues() },
    ...busiest.map(([k, t]) => ({ name: `during ${k}`, values: t.cdfValues() })),
  ]);
}

/** `1 change`, `2 changes`: `n` and the noun in its number (`plural` given, else the singular and an s). */
export const counted = (n: number, singular: string, plural = `${singular}s`): string =>
  `${n} ${n === 1 ? singular : plural}`;

/** What each cause of {@link SoakResults.atResync} means (soak/run.ts `resyncCause`). */
const RESYNC_CAUSES: Record<string, string> = {
  'not in flight':
    "none of its controllers' keys was in the keys topic at an audit while it was pending (the relay never published its key, or a fault lost it: a killed relay's collapsed keys, a stopped emulator's messages, a missed event)",
  'dead-lettered':
    'a key of its controller was dead-lettered while it was pending (it failed every delivery)',
  'in flight':
    "its controller's keys were in the keys topic at every audit while it was pending (a backlog: it may have converged by its own delivery as the resync ran)",
};

/** report.md of a run. */
export function markdownReport(r: SoakResults, command: string): string {
  const lat = (name: string, f: LatencyFigures) =>
    `| ${name} | ${f.n} | ${s(f.p50)} | ${s(f.p99)} | ${s(f.max)} |`;
  const lines = [
    '# Levelset soak',
    '',
    `\`${command}\`: ${r.minutes} minutes, seed ${r.seed}, on the **${r.cluster}** (started ${r.startedAt}, ${Math.round(r.durationS)} s wall time with start-up and the final quiet period). Machine: ${r.machine.cpus} × ${r.machine.cpuModel}, ${Math.round(Number(r.machine.memoryBytes) / 2 ** 30)} GiB, ${r.machine.node}, load average at the start ${r.machine.loadAverage} (shared with other work: the times are a loaded machine's).`,
    '',
    "What runs: the whole local stack, serverless (the relay, the Pub/Sub emulator, `reconcile` and `resync` under functions-framework, a resync timer), with every controller of `examples/registry.ts`; the soak drives secret-replicator, foo, icecream, customcluster, configmap-bundle and tenant (Topic and Subscription run idle: no Topic is created). The auditor (`soak/auditor.ts`) reads the cluster with its own clients and imports nothing of Levelset's; a change has converged at the first audit whose reads started after it and found every primary it touched at its level (resolution: one audit round, see below).",
    '',
    `## Invariants violated at the end: ${r.finalViolations.length}`,
    '',
    r.finalViolations.length
      ? r.finalViolations.map((v) => `- \`${v.key}\`: ${v.detail}`).join('\n')
      : `None, after a quiet period of one resync interval (${r.resyncIntervalMs / 1000} s) with no change and no fault.`,
    '',
    '## Changes',
    '',
    `${counted(r.changes.total, 'change')} made (${r.changes.inBursts} in ${counted(r.changes.bursts, 'burst')}); ${counted(r.changes.failedWrites, 'write')} of the soak failed every retry (not counted: no change was made)${r.changes.failedSteps ? `; ${r.changes.failedSteps === 1 ? '1 step of the workload was skipped, a read of its failed' : `${r.changes.failedSteps} steps of the workload were skipped, a read of theirs failed`}` : ''}. ${r.neverConverged === 1 ? '1 change never converged' : `${r.neverConverged} changes never converged`}.`,
    '',
    '| change | count |',
    '| --- | ---: |',
    ...Object.entries(r.changes.byKind)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `| ${k} | ${n} |`),
    '',
    '## Faults',
    '',
    '| fault | injected | failed to inject | what |',
    '| --- | ---: | ---: | --- |',
    ...r.faults.map(
      (f) =>
        `| ${f.kind} | ${f.skipped ? `skipped: ${f.skipped}` : f.injected} | ${f.failed} | ${f.description} |`,
    ),
    '',
    '## Change → converged',
    '',
    'A change counts under a fault kind when that fault was active at any time while the change was pending (a fault stays active 5 s after its injection ends).',
    '',
    '| changes | n | p50 | p99 | max |',
    '| --- | ---: | ---: | ---: | ---: |',
    lat('all', r.latency.overall),
    lat('no fault meanwhile', r.latency.noFault),
    ...Object.entries(r.latency.perFault).map(([k, f]) => lat(`during ${k}`, f)),
    '',
    '![change→converged CDF](latency.svg)',
    '',
    `Audits: ${r.audits.count} (${r.audits.failedReads} failed reads, retried), each ${s(r.audits.p50DurationMs)} median, ${s(r.audits.maxDurationMs)} max: the latencies are measured to that resolution. Resyncs: ${r.resyncs}.`,
    '',
    '## Converged only at a resync',
    '',
    `${r.atResync.total === 1 ? '1 change' : `${r.atResync.total} changes`} converged within 20 s after a resync completed, having been pending at least 20 s before it started: the missed events (or failed deliveries) the resync covered, and changes that a backlog delayed past a resync. Per fault kind active meanwhile: ${counts(r.atResync.perFault)}. Per change: ${counts(r.atResync.perKind)}.`,
    ...(r.atResync.perCause
      ? [
          '',
          "By cause, from the delivery watchdog's backlog of the change's controllers at each audit (local/watchdog.ts; a change counts under every fault kind active while it was pending):",
          '',
          '| cause | changes | per fault kind active meanwhile | what |',
          '| --- | ---: | --- | --- |',
          ...Object.entries(RESYNC_CAUSES).map(
            ([cause, what]) =>
              `| ${cause} | ${r.atResync.perCause?.[cause] ?? 0} | ${counts(r.atResync.perCauseFault?.[cause] ?? {})} | ${what} |`,
          ),
        ]
      : []),
    '',
    '## Memory',
    '',
    "RSS from `/proc/<pid>/status` and the V8 heap in use every few seconds (every sample is in results.json): the heap is `nodejs_heap_size_used_bytes` and the external memory (Buffers outside the heap) `nodejs_external_memory_bytes` of the relay's, `reconcile`'s and `resync`'s own `/metrics` (prom-client's process metrics), and `process.memoryUsage()` of the soak's own process, all as the process sees them between its collections (nothing forces a GC: garbage not yet collected is counted); the Pub/Sub emulator is Google's Java process (RSS only) under a Node guard (local/guard.ts, RSS only). A process a fault killed and started again is a new pid: a new life, its own series. Each life's first three minutes (and the run's warm-up) are left out, and each life is fitted on its own (least squares, MiB/hour); the table gives the longest life's fit. The heap in use is a sawtooth (it grows between collections), so its fit depends on where the samples fall; the heap's floor, the least heap in use of each 3-minute window of the life (soak/memory.ts `floorOf`), is the heap just after a collection, what a leak raises: its slope (± its standard error, from the fit's residuals) is the figure to read. The faults that restart a process (relay-kill, function-kill, emulator-restart) are all injected in the first third of the run (soak/faults.ts `faultSchedule`), so that the relay, `reconcile` and the emulator each have one long last life, never killed, after them; every life's fit is in results.json (`memory.<process>.slope.lives`).",
    '',
    `The RSS is judged as the heap is, by its floor (the least RSS of each 3-minute window of the life: the RSS rises and falls with the heap's collections and the allocator's returns), fitted with its standard error: **within** ${SLOPE_LIMIT_MIB_PER_HOUR} MiB/h when the slope plus twice its standard error is at most ${SLOPE_LIMIT_MIB_PER_HOUR}, **above** when the slope less twice its standard error exceeds it, **undecided** when the life is too short or too noisy to tell (the interval spans the limit). The V8 heap's own figures (used, total) and the memory outside it (external: Buffers and ArrayBuffers) tell where a growth of the RSS is: one the heap and external do not show is the allocator's (malloc's arenas, freed and not returned) or native code's. The threads (\`Threads\` of \`/proc/<pid>/status\`) show one kind of native growth: Google's Pub/Sub emulator keeps a thread for every ordering key it has seen, one per object key changed, for its life (decision 68).`,
    '',
    '| process | RSS floor slope (MiB/h) | judged | RSS slope (MiB/h) | heap floor slope (MiB/h) | heap slope (MiB/h) | fitted over (the longest life) | RSS in it (MiB) | heap in it (MiB) | heap total in it (MiB) | external in it (MiB) | threads in it | lives after warm-up | peak RSS (MiB) |',
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...Object.entries(r.memory).map(
      ([name, m]) =>
        `| ${name} | ${withErr(m.slope?.rssFloorMiBPerHour, m.slope?.rssFloorStdErr)} | ${judgeSlope(m.slope?.rssFloorMiBPerHour, m.slope?.rssFloorStdErr)} | ${mib(m.slope?.rssMiBPerHour)} | ${withErr(m.slope?.heapFloorMiBPerHour, m.slope?.heapFloorStdErr)} | ${mib(m.slope?.heapMiBPerHour)} | ${m.slope ? `${((m.slope.toMs - m.slope.fromMs) / 60_000).toFixed(1)} min` : '—'} | ${range(m.slope?.rssMiB)} | ${range(m.slope?.heapMiB)} | ${range(m.slope?.heapTotalMiB)} | ${range(m.slope?.externalMiB)} | ${threadRange(m.slope?.threads)} | ${m.slope?.segments ?? 0} | ${mib(m.peakRssMiB)} |`,
    ),
    '',
    '![RSS over time](memory.svg)',
    '',
    MEMORY_CAUSES,
    '',
    `Warnings and errors logged by the stack: ${counts(r.warnings)}.`,
    '',
    ...(r.notes.length ? ['## Notes', '', ...r.notes.map((n) => `- ${n}`), ''] : []),
  ];
  return `${lines.join('\n')}\n`;
}
