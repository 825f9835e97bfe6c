// npm run bench on tiny sizes, once, so that the benchmark cannot rot (in `npm run test:load`, which CI
// runs after npm test: docs/architecture.md decision 41 (12)): it must run end to end and
// write every section (each section's code runs; its tiny sizes measure nothing worth reading). No timing is asserted (benchmarks are not tests); only that the figures are
// sane: the cost section prices every shipped controller, the fleet section has its ratios.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  type BenchResults,
  cdfChart,
  costTable,
  type Figure,
  markdownReport,
  ratio,
  SECTIONS,
} from '../../bench/report.ts';
import { controllers } from '../../examples/registry.ts';
import { PRELOAD } from '../../local/parent-watch.ts';
import { killSession, session, sessionEmptied } from '../support/processes.ts';
import { waitFor } from '../support/wait.ts';

const root = new URL('../..', import.meta.url).pathname;

/** ms a bench process may run; then it gets SIGTERM, which makes it stop what it started. */
const BENCH_TIMEOUT_MS = 600_000;
/** ms a bench process has to stop what it started after SIGTERM (its stacks stop side by side). */
const BENCH_STOP_MS = 60_000;

/** Resolves `true` when `p` settles within `ms`, else `false` (the timer does not outlive it). */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A `bench/run.ts` process in a session of its own (its id is the process's pid), whose processes
 * the test lists. Out of this process's group, a Ctrl-C of the test does not reach it: it watches
 * its parent as the local stack's children do (local/parent-watch.ts), and stops when the test goes.
 */
function startBench(args: string[]) {
  const child = spawn(process.execPath, [`--import=${PRELOAD}`, join(root, 'bench', 'run.ts'), ...args], {
    cwd: root,
    detached: true,
    env: { ...process.env, METADATA_SERVER_DETECTION: undefined },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stdout.resume();
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    sid: child.pid ?? 0,
    exited,
    stderr: () => stderr,
    kill: (signal: NodeJS.Signals) => child.kill(signal),
  };
}

/**
 * Runs `bench/run.ts` with `args` until it exits 0 and leaves no process. At
 * {@link BENCH_TIMEOUT_MS} it is sent SIGTERM, and the test fails; either way its session must be
 * empty afterwards (what a failure leaves is killed, and named).
 * @returns its stderr
 */
async function runBench(args: string[]): Promise<string> {
  const bench = startBench(args);
  try {
    if (!(await within(bench.exited, BENCH_TIMEOUT_MS))) {
      bench.kill('SIGTERM');
      const stopped = await within(bench.exited, BENCH_STOP_MS);
      await sessionEmptied(bench.sid);
      throw new Error(
        `bench ${args.join(' ')} did not finish in ${BENCH_TIMEOUT_MS} ms (${stopped ? 'stopped on SIGTERM' : 'still running after SIGTERM'}): ${bench.stderr().slice(-3000)}`,
      );
    }
    assert.equal(await bench.exited, 0, bench.stderr().slice(-3000));
    await sessionEmptied(bench.sid);
    return bench.stderr();
  } finally {
    killSession(bench.sid);
  }
}

/**
 * The bench's sections (bench/run.ts, `--only` names) in three groups of about the same time, each
 * run by a bench process of its own, side by side: one process running them all, one after the
 * other, was the longest file of `npm test` by far (at load 15 it reached its tenth section at its
 * 600 s timeout), its stacks started one at a time (docs/architecture.md decision 41). The groups'
 * sections as one tiny run took them at load 13-19 (`results.json` sectionMs, seconds): e2e 53,
 * collapse 13, relay 1, api-cost 2, resync-priority 62, retries 3, topic 45 | breakdown 27, cost
 * 58, fleet 107 (before it started its two stacks side by side) | cold-start 54, memory/resync 150,
 * tracing 4, admission 9 (webhooks, build and peer, a note without --peer, added since). Each group keeps the run's order (tracing last: it registers the OpenTelemetry SDK for
 * the rest of its process). Together they are every section: the figures below must come from every
 * section of the report.
 */
const GROUPS = [
  ['e2e/throughput', 'collapse', 'relay', 'api-cost', 'resync-priority', 'retries', 'topic'],
  ['breakdown', 'admission', 'cost', 'webhooks', 'fleet'],
  ['cold-start', 'build', 'memory/resync', 'peer', 'tracing'],
];

/** One group's run: its results.json, report.md and latency.svg. */
interface GroupRun {
  only: string[];
  results: BenchResults;
  report: string;
  svg: string;
}

test('npm run bench -- --tiny writes results.json, report.md and the SVG chart with every section', async (t) => {
  if (process.env.TEST_KUBECONFIG) {
    t.skip('the bench runs its own local API server');
    return;
  }
  const out = mkdtempSync(join(tmpdir(), 'levelset-bench-test-'));
  try {
    const runs = await Promise.all(
      GROUPS.map(async (only, i): Promise<GroupRun> => {
        const dir = join(out, String(i));
        const stderr = await runBench(['--tiny', '--out', dir, ...only.flatMap((s) => ['--only', s])]);
        assert.doesNotMatch(stderr, /MetadataLookupWarning/, 'no Pub/Sub client probes a metadata server');
        return {
          only,
          results: JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')),
          report: readFileSync(join(dir, 'report.md'), 'utf8'),
          svg: readFileSync(join(dir, 'latency.svg'), 'utf8'),
        };
      }),
    );
    for (const run of runs)
      assert.deepEqual(
        Object.keys(run.results.sectionMs),
        run.only,
        'each process ran its sections, in order',
      );
    // The three runs' results as one run's.
    const results: BenchResults = {
      ...(runs[0] as GroupRun).results,
      notes: runs.flatMap((r) => r.results.notes),
      figures: runs.flatMap((r) => r.results.figures),
      cost: runs.flatMap((r) => r.results.cost),
      fleet: runs.map((r) => r.results.fleet).find((f) => f !== undefined),
    };
    assert.equal(results.tiny, true);
    assert.ok(Number(results.machine.cpus) >= 1);
    const sections = new Set(results.figures.map((f: { section: string }) => f.section));
    // Every section but `peer`, which needs a real cluster and the peer's binaries (--peer): a note says it was skipped.
    assert.deepEqual(
      [...sections].sort(),
      Object.keys(SECTIONS)
        .filter((s) => s !== 'peer')
        .sort(),
      'a figure in every section',
    );
    assert.ok(
      results.notes.some((n: string) => /^peer: skipped/.test(n)),
      results.notes.join('\n'),
    );
    for (const f of results.figures)
      assert.ok(Number.isFinite(f.value), `${f.section}: ${f.name} is a number`);
    assert.ok(
      !results.figures.some((f: { name: string }) => /growth over the idle process/.test(f.name)),
      'no informer RSS growth at tiny sizes (noise)',
    );
    assert.ok(results.notes.some((n: string) => /RSS growth .* reported from/.test(n)));
    // What it costs: every shipped controller measured in its function process and priced.
    assert.deepEqual(
      results.cost.map((r: { controller: string }) => r.controller).sort(),
      controllers.map((c) => c.name).sort(),
      'a cost row per shipped controller',
    );
    for (const r of results.cost) {
      assert.ok(r.cpuMs.converged > 0 && r.cpuMs.changing > 0, `${r.controller}: CPU time measured`);
      assert.ok(r.wallMs.converged > 0, `${r.controller}: wall time measured`);
      assert.ok(r.peakRssMib > 0, `${r.controller}: memory measured`);
      for (const [k, v] of Object.entries(r.perMillion))
        assert.ok((v as number) > 0.4, `${r.controller}: $ per million (${k}) above the request price alone`);
      assert.ok(
        r.billedMs.isolated >= 100,
        `${r.controller}: an isolated reconcile is billed at least 100 ms`,
      );
      assert.ok(
        r.breakEvenPerHour.isolated > 0 && r.breakEvenPerHour.busy > 0,
        `${r.controller}: break-even`,
      );
    }
    const cost = results.figures.filter((f: Figure) => f.section === 'cost');
    for (const c of controllers)
      assert.ok(
        cost.some((f: Figure) => f.name.startsWith(`${c.name}: Cloud Run $ per million`) && f.baseline),
        `${c.name}: a cost figure beside its baseline`,
      );
    assert.ok(
      cost.some((f: Figure) => /Autopilot/.test(f.name) && f.value > 0),
      'the always-on pod priced',
    );
    // The fleet: one deployment for two clusters beside one per cluster, as ratios.
    const fleet = results.figures.filter((f: Figure) => f.section === 'fleet');
    for (const re of [/^function processes .*total peak RSS/, /reconciles per second/]) {
      const f = fleet.find((x: Figure) => re.test(x.name));
      assert.ok(f, `fleet: ${re}`);
      assert.ok(f.value > 0 && (f.baseline?.value ?? 0) > 0, `fleet: ${f.name} and its baseline measured`);
      assert.match(ratio(f), /^[0-9.]+×$/, `fleet: ${f.name} has a ratio`);
    }
    assert.equal(results.fleet?.foosPerCluster, results.sizes.fleetFoos);
    // Every section ran alone on its own API server, and none failed.
    assert.ok(!results.notes.some((n: string) => /^section .* failed/.test(n)), results.notes.join('\n'));
    // Issue 34's rows: Levelset's own time beside the in-process end to end, with its targets.
    for (const kind of ['Secret change', 'Foo change'])
      for (const q of ['p50', 'p95']) {
        const f = results.figures.find(
          (x: Figure) =>
            x.section === 'e2e' && x.name.startsWith(`${kind}: Levelset's own time`) && x.name.includes(q),
        );
        assert.ok(
          f?.target && f.baseline?.name === 'in-process end to end',
          `${kind}: own time ${q} with its target`,
        );
      }
    // The publish's 2 ms target applies to Levelset's part of it; the whole publish stands beside a
    // bare publish to the same emulator (docs/architecture.md decision 37).
    for (const re of [/the publish, Levelset's part/, /reconcile: reads/])
      assert.ok(
        results.figures.some((f: Figure) => f.section === 'breakdown' && re.test(f.name) && f.target),
        `breakdown: ${re} with its target`,
      );
    assert.ok(
      results.figures.some(
        (f: Figure) =>
          f.section === 'breakdown' &&
          /relay saw → Pub\/Sub accepted the key/.test(f.name) &&
          /^a bare @google-cloud\/pubsub publish/.test(f.baseline?.name ?? ''),
      ),
      'breakdown: the publish beside a bare publish to the same emulator',
    );
    // Each report has every section (those its run did not measure say so); together they hold every figure's text.
    for (const { report } of runs) {
      assert.doesNotMatch(report, /https?:\/\//, 'the report links nothing outside the repository');
      for (const s of Object.values(SECTIONS)) assert.ok(report.includes(`## ${s.title}`), s.title);
      assert.match(report, /!\[[^\]]*\]\(latency\.svg\)/);
      assert.match(report, /## Reproduce/);
    }
    const report = runs.map((r) => r.report).join('\n');
    assert.match(report, /A push through Cloud Pub\/Sub \(estimated, not measured\)/);
    assert.match(report, /\| controller \| CPU ms \/ reconcile/, 'the per-controller cost table');
    for (const c of controllers) assert.match(report, new RegExp(`^\\| ${c.name} \\| `, 'm'), c.name);
    assert.match(report, /baseline = 2 namespaces\./, "the API-cost text names this run's baseline");
    for (const { svg } of runs) assert.match(svg, /^<svg [^>]*>[\s\S]*<\/svg>\n$/);
    assert.match(
      runs.find((r) => r.only.includes('e2e/throughput'))?.svg ?? '',
      /^<svg [^>]*>[\s\S]*<polyline[\s\S]*<\/svg>\n$/,
      'the latency chart of the end to end',
    );
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('SIGTERM stops what the bench started: its stacks, API server and emulator', {
  skip: process.platform !== 'linux',
}, async (t) => {
  if (process.env.TEST_KUBECONFIG) {
    t.skip('the bench runs its own local API server');
    return;
  }
  const out = mkdtempSync(join(tmpdir(), 'levelset-bench-test-'));
  const bench = startBench(['--tiny', '--out', out, '--only', 'e2e/throughput']);
  try {
    // The serverless stack runs once its relay does (the stack starts the relay last but for its resync timer).
    await waitFor(() => session(bench.sid).some((p) => /levelset\.ts relay/.test(p.args)), {
      timeoutMs: 300_000,
      intervalMs: 500,
      message: `a relay in the bench's session: ${bench.stderr().slice(-2000)}`,
    });
    bench.kill('SIGTERM');
    assert.ok(
      await within(bench.exited, BENCH_STOP_MS),
      `the bench exits after SIGTERM: ${bench.stderr().slice(-2000)}`,
    );
    assert.equal(await bench.exited, 143, bench.stderr().slice(-2000));
    assert.match(bench.stderr(), /SIGTERM: stopping what the bench started/);
    await sessionEmptied(bench.sid);
  } finally {
    killSession(bench.sid);
    rmSync(out, { recursive: true, force: true });
  }
});

test('the latency chart of a run that measured no latency has empty axes (it used to loop forever)', () => {
  const svg = cdfChart('none', []);
  assert.match(svg, /^<svg /);
  assert.match(svg, /<\/svg>\s*$/);
  assert.match(svg, />1 ms</);
});

/** A run's results holding `figures` and `cost`, the rest empty. */
const resultsOf = (figures: Figure[], cost: BenchResults['cost'] = []): BenchResults => ({
  generatedAt: '',
  tiny: true,
  durationMs: 1000,
  sectionMs: {},
  machine: { cpus: 2 },
  sizes: {},
  notes: [],
  figures,
  cost,
  fleet: undefined,
});

test('the report shows each figure once, in its section, with the baseline this run measured', () => {
  const figures: Figure[] = [
    {
      section: 'api-cost',
      name: 'secret-replicator, no-op reconcile, 2 namespaces',
      value: 3,
      unit: 'requests',
      baseline: { name: '2 namespaces', value: 3 },
    },
    { section: 'cold-start', name: 'spawn → first 204', value: 900, unit: 'ms' },
  ];
  const report = markdownReport(resultsOf(figures), 'latency.svg');
  for (const f of figures) assert.equal(report.split(f.name).length - 1, 1, `${f.name} once`);
  const apiCost = report.slice(report.indexOf(`## ${SECTIONS['api-cost']?.title}`));
  assert.match(apiCost, /baseline = 2 namespaces\.[^\n]*\n\n\| figure \|/);
  assert.doesNotMatch(report, /10 namespaces|## Summary/);
});

test("the cost section's summary has one row per controller, in the order measured", () => {
  const row = (controller: string) => ({
    controller,
    cpuMs: { converged: 3, changing: 5 },
    wallMs: { converged: 3.1, changing: 8.8 },
    billedMs: { busy: 3, isolated: 100 },
    perMillion: { convergedBusy: 0.48, convergedIsolated: 2.93, changingBusy: 0.53, changingIsolated: 2.93 },
    breakEvenPerHour: { isolated: 4645, busy: 28577 },
    rssMib: 290,
    peakRssMib: 303,
  });
  const lines = costTable([row('foo'), row('topic')]).split('\n');
  assert.equal(lines.length, 4);
  assert.match(
    lines[2] as string,
    /^\| foo \| 3, 5 \| 3\.1, 8\.8 \| 3, 100 \| 0\.48, 2\.93 \| 0\.53, 2\.93 \| 4645, 28577 \| 303 \|$/,
  );
  assert.match(lines[3] as string, /^\| topic \|/);
  const report = markdownReport(
    resultsOf(
      [{ section: 'cost', name: 'foo: x', value: 1, unit: '$', baseline: { name: 'isolated', value: 2 } }],
      [row('foo')],
    ),
    'latency.svg',
  );
  assert.match(report, /\| foo: x \|[^\n]*\n\n\| controller \|/);
  assert.doesNotMatch(report, /A push through Cloud Pub\/Sub/, 'nothing under a section without figures');
});
