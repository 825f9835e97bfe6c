/**
 * `npm run bench`: one run, side by side — the serverless path vs the in-process mode, the relay's
 * leading-edge collapse vs trailing-only, metadata-only vs full-object informers, API cost, resync,
 * cold start. Writes `results.json` (every figure, the sizes, the machine, each section's wall
 * time), `latency.svg` (the CDF chart) and `report.md` (bench/report.ts says how to read each figure).
 *
 *   npm run bench                 # full sizes, into bench/
 *   npm run bench -- --tiny       # tiny sizes, into a temp dir (npm run test:load runs this once)
 *   npm run bench -- --out DIR    # elsewhere
 *   npm run bench -- --only collapse --only relay   # some sections, into a temp dir
 *
 * Each section is a file of bench/sections/, run on what bench/environment.ts starts for it. Every
 * figure comes with the baseline measured in the same run. Nothing here is a test: no figure is
 * asserted.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startPubSubEmulator } from '../local/pubsub-emulator.ts';
import { repoRoot } from '../local/service.ts';
import {
  type ApiServer,
  type Emulator,
  emulatorEnv,
  type Section,
  type SectionEnv,
  sizesFor,
  startApiServer,
} from './environment.ts';
import { type BenchResults, cdfChart, machine, markdownReport, ratio, type Series } from './report.ts';
import { apiCost } from './sections/api-cost.ts';
import { breakdown } from './sections/breakdown.ts';
import { coldStart } from './sections/cold-start.ts';
import { collapse } from './sections/collapse.ts';
import { reconcileCost } from './sections/cost.ts';
import { e2eThroughput } from './sections/e2e-throughput.ts';
import { fleet } from './sections/fleet.ts';
import { memoryAndResync } from './sections/memory-resync.ts';
import { relayThroughput } from './sections/relay.ts';
import { resyncPriority } from './sections/resync-priority.ts';
import { retries } from './sections/retries.ts';
import { topicCosts } from './sections/topic.ts';
import { tracingCost } from './sections/tracing.ts';
import { log } from './support.ts';

/** The sections, in the order they run (`--only` takes their names). */
const SECTIONS: Section[] = [
  e2eThroughput,
  breakdown,
  collapse,
  relayThroughput,
  apiCost,
  reconcileCost,
  coldStart,
  resyncPriority,
  retries,
  topicCosts,
  fleet,
  memoryAndResync,
  // Last: it registers the OpenTelemetry SDK for the rest of this process.
  tracingCost,
];

const { values: args } = parseArgs({
  options: {
    tiny: { type: 'boolean', default: false },
    out: { type: 'string' },
    only: { type: 'string', multiple: true },
  },
});
const tiny = args.tiny ?? false;
const names = SECTIONS.map((s) => s.name);
const unknown = args.only?.filter((n) => !names.includes(n)) ?? [];
if (unknown.length) {
  console.error(`unknown section ${unknown.join(', ')}; sections: ${names.join(', ')}`);
  process.exit(2);
}
// A partial or tiny run never overwrites the committed full report.
const outDir =
  args.out ?? (tiny || args.only ? mkdtempSync(join(tmpdir(), 'levelset-bench-')) : join(repoRoot, 'bench'));
mkdirSync(outDir, { recursive: true });

const sizes = sizesFor(tiny);
const started = performance.now();
const results: BenchResults = {
  generatedAt: new Date().toISOString(),
  tiny,
  durationMs: 0,
  sectionMs: {},
  machine: machine(),
  sizes,
  notes: [],
  figures: [],
  cost: [],
  fleet: undefined,
};
const chart: Series[] = [];
let emulator: Promise<Emulator> | undefined;
const selected = SECTIONS.filter((s) => !args.only || args.only.includes(s.name));
/**
 * An API server started, empty, while the section before runs (a start is a second or more, most
 * of it waiting on the process and kubectl): a section takes it as its own. Only started when a
 * section took one and another section follows.
 */
let spare: Promise<ApiServer> | undefined;
const freshApiServer = (more: boolean): Promise<ApiServer> => {
  const server = spare ?? startApiServer();
  spare = more ? startApiServer() : undefined;
  return server;
};

try {
  // A section that fails is reported as a note; the others still run.
  for (const [i, section] of selected.entries()) {
    const more = i < selected.length - 1;
    log(`section ${section.name}`);
    const t0 = performance.now();
    const servers: Promise<ApiServer>[] = [];
    let own: Promise<ApiServer> | undefined;
    const env: SectionEnv = {
      tiny,
      sizes,
      log,
      apiServer: () => {
        if (!own) {
          own = freshApiServer(more);
          servers.push(own);
        }
        return own;
      },
      anotherApiServer: () => {
        const server = startApiServer();
        servers.push(server);
        return server;
      },
      emulator: () => {
        emulator ??= startPubSubEmulator().then(emulatorEnv);
        return emulator;
      },
    };
    try {
      const out = await section.run(env);
      results.figures.push(...out.figures);
      results.notes.push(...(out.notes ?? []));
      chart.push(...(out.chart ?? []));
      results.cost.push(...(out.cost ?? []));
      results.fleet ??= out.fleet;
    } catch (err) {
      log(`${section.name} failed: ${err instanceof Error ? err.stack : String(err)}`);
      results.notes.push(
        `section ${section.name} failed in this run: ${err instanceof Error ? err.message : String(err)}`,
      );
    } finally {
      for (const server of servers) await (await server.catch(() => undefined))?.stop();
    }
    results.sectionMs[section.name] = Math.round(performance.now() - t0);
  }
} finally {
  await (await spare?.catch(() => undefined))?.stop();
  if (emulator) {
    const e = await emulator.catch(() => undefined);
    await e?.pubsub.close().catch(() => {});
    await e?.emulator.stop();
  }
}

results.durationMs = Math.round(performance.now() - started);
writeFileSync(join(outDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
writeFileSync(join(outDir, 'latency.svg'), cdfChart('Latency distributions (CDF, log scale)', chart));
writeFileSync(join(outDir, 'report.md'), markdownReport(results, 'latency.svg'));
log(`wrote ${join(outDir, 'report.md')}`);
// The headline figures of the cost and fleet sections, on stderr as the run ends.
if (results.cost.length)
  log(
    `summary: $ per million converged reconciles (busy, isolated): ${results.cost
      .map((r) => `${r.controller} ${r.perMillion.convergedBusy}, ${r.perMillion.convergedIsolated}`)
      .join('; ')}`,
  );
for (const f of results.figures.filter(
  (x) => x.section === 'fleet' && /^function processes|per second/.test(x.name),
))
  log(`summary: fleet, ${f.name}: ${f.value} ${f.unit} vs ${f.baseline?.value} (${ratio(f)})`);
console.log(outDir);
process.exit(0);
