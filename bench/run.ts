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
 *   npm run bench -- --push-model cloud   # the serverless path also with a model of Cloud Pub/Sub's push (figures labelled modelled)
 *
 * Each section is a file of bench/sections/, run on what bench/environment.ts starts for it. Every
 * figure comes with the baseline measured in the same run. Nothing here is a test: no figure is
 * asserted.
 *
 * SIGTERM or SIGINT (a test's timeout, Ctrl-C) stops what the run started — the running section's
 * local stacks and API servers, the spare API server, the emulator — each by its own stop, and
 * exits 128 + the signal's number (143, 130) without writing a report.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startPubSubEmulator } from '../local/pubsub-emulator.ts';
import { repoRoot } from '../local/service.ts';
import {
  type AnyLocalStack,
  type LocalStackOptions,
  PUSH_MODELS,
  type PushModel,
  startLocalStack,
} from '../local/stack.ts';
import {
  type ApiServer,
  type Emulator,
  emulatorEnv,
  type PeerOptions,
  type Section,
  type SectionEnv,
  sizesFor,
  startApiServer,
} from './environment.ts';
import { type BenchResults, cdfChart, machine, markdownReport, ratio, type Series } from './report.ts';
import { admission } from './sections/admission.ts';
import { apiCost } from './sections/api-cost.ts';
import { breakdown } from './sections/breakdown.ts';
import { buildTime } from './sections/build.ts';
import { coldStart } from './sections/cold-start.ts';
import { collapse } from './sections/collapse.ts';
import { reconcileCost } from './sections/cost.ts';
import { e2eThroughput } from './sections/e2e-throughput.ts';
import { fleet } from './sections/fleet.ts';
import { memoryAndResync } from './sections/memory-resync.ts';
import { peer } from './sections/peer.ts';
import { relayThroughput } from './sections/relay.ts';
import { resyncPriority } from './sections/resync-priority.ts';
import { retries } from './sections/retries.ts';
import { topicCosts } from './sections/topic.ts';
import { tracingCost } from './sections/tracing.ts';
import { webhooksSection } from './sections/webhooks.ts';
import { log } from './support.ts';

/** The sections, in the order they run (`--only` takes their names). */
const SECTIONS: Section[] = [
  e2eThroughput,
  breakdown,
  collapse,
  relayThroughput,
  apiCost,
  admission,
  reconcileCost,
  coldStart,
  webhooksSection,
  buildTime,
  resyncPriority,
  retries,
  topicCosts,
  fleet,
  memoryAndResync,
  // On a real cluster, only with --peer (a note otherwise).
  peer,
  // Last: it registers the OpenTelemetry SDK for the rest of this process.
  tracingCost,
];

const { values: args } = parseArgs({
  options: {
    tiny: { type: 'boolean', default: false },
    out: { type: 'string' },
    only: { type: 'string', multiple: true },
    kubeconfig: { type: 'string' },
    peer: { type: 'string', multiple: true },
    'peer-sizes': { type: 'string', default: '200,1000' },
    'push-model': { type: 'string', default: 'emulator' },
  },
});
const pushModel = args['push-model'] as PushModel;
if (!PUSH_MODELS.includes(pushModel)) {
  console.error(`--push-model takes one of ${PUSH_MODELS.join(', ')}`);
  process.exit(2);
}
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
/** The peer section's cluster and binaries (`--peer NAME=PATH`, with `--kubeconfig`). */
const peerOptions = ((): PeerOptions | undefined => {
  if (!args.peer?.length) return undefined;
  const binaries = Object.fromEntries(
    args.peer.map((p) => {
      const at = p.indexOf('=');
      if (at <= 0) throw new Error(`--peer takes NAME=PATH, not ${p}`);
      return [p.slice(0, at), p.slice(at + 1)];
    }),
  );
  if (!args.kubeconfig) throw new Error('--peer needs --kubeconfig: the real cluster the peers run on');
  const peerSizes = (args['peer-sizes'] ?? '').split(',').map(Number);
  if (!peerSizes.every((n) => Number.isInteger(n) && n > 0))
    throw new Error('--peer-sizes takes whole numbers, e.g. 200,1000');
  return { binaries, kubeconfigPath: args.kubeconfig, sizes: peerSizes };
})();
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

/** The running section's local stacks and API servers (started or starting), for {@link stopOnSignal}. */
let sectionStarted: { stacks: Promise<AnyLocalStack>[]; servers: Promise<ApiServer>[] } = {
  stacks: [],
  servers: [],
};
/** The signal that interrupted the run: nothing starts after it. */
let interrupted: NodeJS.Signals | undefined;
/** The stop a signal began; it ends the process. */
let stopping: Promise<void> | undefined;
const refuseIfInterrupted = () => {
  if (interrupted) throw new Error(`the bench was interrupted (${interrupted})`);
};

/**
 * Stops what the run started, each by its own stop (the running section's stacks first, then the
 * API servers, then the emulator), and exits 128 + the signal's number. The section itself may
 * still be running: what it starts from now on is refused.
 */
const stopOnSignal = (signal: NodeJS.Signals) => {
  if (interrupted) return;
  interrupted = signal;
  log(`${signal}: stopping what the bench started`);
  const settled = async <T>(p: Promise<T> | undefined) => p?.catch(() => undefined);
  stopping = (async () => {
    await Promise.all(sectionStarted.stacks.map(async (s) => (await settled(s))?.stop()));
    await Promise.all([...sectionStarted.servers, spare].map(async (s) => (await settled(s))?.stop()));
    const e = await settled(emulator);
    await e?.pubsub.close().catch(() => {});
    await e?.emulator.stop();
  })()
    .catch((err: unknown) => {
      log(`stopping after ${signal} failed: ${String(err)}`);
    })
    .finally(() => process.exit(128 + constants.signals[signal]));
};
process.on('SIGTERM', stopOnSignal);
process.on('SIGINT', stopOnSignal);

try {
  // A section that fails is reported as a note; the others still run.
  for (const [i, section] of selected.entries()) {
    if (interrupted) break;
    const more = i < selected.length - 1;
    log(`section ${section.name}`);
    const t0 = performance.now();
    const servers: Promise<ApiServer>[] = [];
    const stacks: Promise<AnyLocalStack>[] = [];
    sectionStarted = { stacks, servers };
    let own: Promise<ApiServer> | undefined;
    const env: SectionEnv = {
      tiny,
      sizes,
      log,
      pushModel,
      ...(peerOptions ? { peer: peerOptions } : {}),
      apiServer: () => {
        refuseIfInterrupted();
        if (!own) {
          own = freshApiServer(more);
          servers.push(own);
        }
        return own;
      },
      anotherApiServer: () => {
        refuseIfInterrupted();
        const server = startApiServer();
        servers.push(server);
        return server;
      },
      emulator: () => {
        refuseIfInterrupted();
        emulator ??= startPubSubEmulator().then(emulatorEnv);
        return emulator;
      },
      startLocalStack: ((options: LocalStackOptions) => {
        refuseIfInterrupted();
        const stack = startLocalStack(options);
        stacks.push(stack);
        return stack;
      }) as typeof startLocalStack,
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

// Interrupted: no report; the stop ends the process.
if (stopping) await stopping;

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
