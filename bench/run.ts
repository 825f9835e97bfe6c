/**
 * `npm run bench`: one run, side by side — the serverless path vs the in-process mode, the relay's
 * leading-edge collapse vs trailing-only, metadata-only vs full-object informers, API cost, resync,
 * cold start. Writes `results.json`, `report.md` and `latency.svg` (see bench/report.ts for how to
 * read each figure).
 *
 *   npm run bench                 # full sizes, into bench/
 *   npm run bench -- --tiny       # tiny sizes, into a temp dir (npm test runs this once)
 *   npm run bench -- --out DIR    # elsewhere
 *   npm run bench -- --only collapse --only relay   # some sections, into a temp dir
 *
 * Every figure comes with the baseline measured in the same run. Nothing here is a test: no
 * figure is asserted (timing belongs in benchmarks, not tests).
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { PubSub } from '@google-cloud/pubsub';
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { readSpans, type TracedSpan } from '../cli/impl/trace.ts';
import type { Controller } from '../functions/contract/controller.ts';
import { controllers as registry } from '../functions/controllers/index.ts';
import { REPLICATE_TO_ANNOTATION } from '../functions/controllers/secret-replicator/plan.ts';
import { createEventRecorder } from '../functions/k8s/events.ts';
import { ATTR, SPAN } from '../functions/k8s/tracing.ts';
import { configmaps, pods } from '../functions/kit/resources.ts';
import { createLogger, LABELS } from '../functions/log.ts';
import type { KeyMessage } from '../functions/message.ts';
import { PooledKubeConfig } from '../functions/pooled-kubeconfig.ts';
import { createKeyPublisher, emulatorClientOptions } from '../functions/publish.ts';
import { inDeliverySpan, reconcileKey } from '../functions/reconcile.ts';
import { RESYNC_PUBLISHING, resyncAll } from '../functions/resync.ts';
import { startTracing } from '../functions/tracing.ts';
import { startGrpcProxy } from '../local/grpc-proxy.ts';
import { freePort, type PubSubEmulator, startPubSubEmulator } from '../local/pubsub-emulator.ts';
import { startPushProxy } from '../local/push-proxy.ts';
import { repoRoot } from '../local/service.ts';
import { startSimulatedNode } from '../local/simulated-node.ts';
import {
  type AnyLocalStack,
  FUNCTION_CONCURRENCY,
  FUNCTION_NODE_OPTIONS,
  functionsCli,
  type LocalCluster,
  type LocalStack,
  RELAY_ENV,
  RELAY_NODE_OPTIONS,
  STACK_MODES,
  type StackMode,
  startLocalStack,
} from '../local/stack.ts';
import type { CollapseMode } from '../relay/collapse.ts';
import { createRelayMetrics } from '../relay/metrics.ts';
import { KeyPipeline, planInformers } from '../relay/pipeline.ts';
import { startRelay } from '../relay/relay.ts';
import { bundle } from '../scripts/bundle.ts';
import { COMPILE_CACHE, packageFunctions, WARM_COMPILE_CACHE } from '../scripts/package-functions.ts';
import { packageRelay, RELAY_EXTERNAL } from '../scripts/package-relay.ts';
import { CountingKubeConfig } from '../test/support/counting-kubeconfig.ts';
import { sumSeries } from '../test/support/metrics.ts';
import { waitFor } from '../test/support/wait.ts';

import {
  autopilotPodPerHour,
  billedSeconds,
  breakEvenPerHour,
  type CostRow,
  cloudRunPerMillion,
  PRICES,
  type ReconcileCost,
  TERRAFORM_DEFAULTS,
} from './cost.ts';
import {
  cdfChart,
  costTable,
  type Figure,
  machine,
  markdownReport,
  quantiles,
  ratio,
  type Series,
} from './report.ts';

const exec = promisify(execFile);
const { values: args } = parseArgs({
  options: {
    tiny: { type: 'boolean', default: false },
    out: { type: 'string' },
    only: { type: 'string', multiple: true },
  },
});
const tiny = args.tiny ?? false;
/** The sections, in the order they run (`--only` takes these names); declared below. */
const SECTIONS_IN_ORDER: [string, () => Promise<void>][] = [
  ['e2e/throughput', e2eAndThroughput],
  ['breakdown', breakdown],
  ['collapse', collapse],
  ['relay', relayThroughput],
  ['api-cost', apiCost],
  ['cost', reconcileCost],
  ['cold-start', coldStart],
  ['resync-priority', () => onOwnApiServer(resyncPriority)],
  ['topic', () => onOwnApiServer(topicCosts)],
  ['fleet', fleet],
  // After every section that starts a relay on the shared API server: it leaves 100k ConfigMaps
  // there, which a relay watching ConfigMaps (configmap-bundle) would list before it is ready.
  ['memory/resync', memoryAndResync],
  // Last: it registers the OpenTelemetry SDK for the rest of this process.
  ['tracing', tracingCost],
];
const SECTION_NAMES = SECTIONS_IN_ORDER.map(([name]) => name);
const unknown = args.only?.filter((n) => !SECTION_NAMES.includes(n)) ?? [];
if (unknown.length) {
  console.error(`unknown section ${unknown.join(', ')}; sections: ${SECTION_NAMES.join(', ')}`);
  process.exit(2);
}
// A partial or tiny run never overwrites the committed full report.
const outDir =
  args.out ?? (tiny || args.only ? mkdtempSync(join(tmpdir(), 'levelset-bench-')) : join(repoRoot, 'bench'));
mkdirSync(outDir, { recursive: true });

/** ConfigMaps watched by the informer-RSS children of a full run. */
const FULL_RSS_SIZES = [10_000, 100_000] as const;
/** From how many watched objects an informer's RSS growth is reported (below, it is noise). */
const RSS_GROWTH_MIN_OBJECTS = 10_000;

const sizes = tiny
  ? {
      e2eChanges: 4,
      rotation: 2,
      targets: 2,
      foos: 5,
      isolated: 4,
      burst: 50,
      objects: 3,
      objectUpdates: 10,
      collapseMs: 250,
      rssSmall: 50,
      rssLarge: 200,
      coldStarts: 1,
      priorityBacklog: 100,
      priorityChanges: 3,
      pipelineEvents: 5000,
      publishKeys: 200,
      tracedReconciles: 50,
      topics: 3,
      fleetFoos: 3,
      namespaces: [2, 4, 8],
    }
  : {
      e2eChanges: 200,
      // objects changed in turn: one changes again 16 changes later, beyond the serverless
      // relay's 250 ms window
      rotation: 16,
      targets: 3,
      foos: 1000,
      isolated: 50,
      burst: 1000,
      objects: 100,
      objectUpdates: 50,
      collapseMs: 250,
      rssSmall: FULL_RSS_SIZES[0],
      rssLarge: FULL_RSS_SIZES[1],
      coldStarts: 5,
      priorityBacklog: 5_000,
      priorityChanges: 10,
      pipelineEvents: 200_000,
      publishKeys: 5_000,
      tracedReconciles: 1000,
      topics: 20,
      fleetFoos: 200,
      namespaces: [10, 100, 1000],
    };

const figures: Figure[] = [];
/** Wall time of each section that ran (ms), in order (results.json `sectionMs`). */
const sectionMs: Record<string, number> = {};
/** The cost section's per-controller table (results.json `cost`). */
const costRows: CostRow[] = [];
/** The fleet section's two configurations, as measured (results.json `fleet`). */
let fleetSummary: Record<string, unknown> | undefined;
const chart: Series[] = [];
const notes: string[] = [];
const started = performance.now();
const log = (s: string) =>
  process.stderr.write(`[bench ${Math.round((performance.now() - started) / 1000)}s] ${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.timeOrigin + performance.now();
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const quiet = createLogger('bench', { write: () => {} });

/** Creates `topic` on the emulator and the relay's key publisher (functions/publish.ts) on it. */
async function publisherOnNewTopic(topic: string) {
  await pubsub.createTopic(topic);
  return createKeyPublisher({
    projectId: emulator.projectId,
    topic,
    emulatorHost: emulator.host,
    logger: quiet,
  });
}

/** Runs `fn` with a bounded number of concurrent calls over `items`. */
async function pool<T>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (i < items.length) await fn(items[i++] as T);
    }),
  );
}

/** A cluster-wide watch that resolves waiters when a predicate on the latest objects holds. */
function watchObjects(kc: KubeConfig, path: string) {
  const objects = new Map<string, KubernetesObject>();
  const waiters = new Set<{ check: () => boolean; resolve: (t: number) => void }>();
  let abort: { abort(): void } | undefined;
  const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace}/${o.metadata?.name}`;
  let stopped = false;
  const onEvent = (type: string, o: KubernetesObject) => {
    if (type === 'BOOKMARK') return;
    if (type === 'DELETED') objects.delete(keyOf(o));
    else objects.set(keyOf(o), o);
    const t = now();
    for (const w of waiters)
      if (w.check()) {
        waiters.delete(w);
        w.resolve(t);
      }
  };
  // Bookmarks keep an idle watch alive (undici ends a response body silent for 300 s); a watch that
  // ends anyway is started again (without resourceVersion: every current object comes as ADDED).
  const start = (): Promise<void> =>
    new Watch(kc)
      .watch(path, { allowWatchBookmarks: true }, onEvent, () => {
        if (!stopped) setTimeout(() => void start(), 100);
      })
      .then((c) => {
        abort = c;
      });
  const ready = start();
  return {
    ready,
    get: (ns: string, name: string) => objects.get(`${ns}/${name}`),
    all: () => objects.values(),
    /** Resolves with the time (ms since the epoch) at which `check` first held. */
    until(check: () => boolean, timeoutMs = 60_000): Promise<number> {
      if (check()) return Promise.resolve(now());
      return new Promise((resolve, reject) => {
        const w = { check, resolve };
        waiters.add(w);
        setTimeout(() => {
          if (waiters.delete(w)) reject(new Error(`timed out watching ${path}`));
        }, timeoutMs).unref();
      });
    },
    stop: () => {
      stopped = true;
      abort?.abort();
    },
  };
}

/**
 * The local API server in a process of its own, so that its sockets do not count against the
 * bench process's open-file limit (thousands of short requests per second).
 */
async function startApiServerProcess(): Promise<{ kubeconfigPath: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'levelset-bench-apiserver-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  const child = spawn(
    process.execPath,
    [join(repoRoot, 'local', 'apiserver', 'main.ts'), '--kubeconfig', kubeconfigPath, '--history', '20000'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  log(`local API server: pid ${child.pid}; bench: pid ${process.pid}`);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('KUBECONFIG=')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`local apiserver exited with ${code}`)));
  });
  return {
    kubeconfigPath,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The bench's API server and its clients; a section may run on one of its own ({@link onOwnApiServer}). */
let local = await startApiServerProcess();
let kc = new PooledKubeConfig();
kc.loadFromFile(local.kubeconfigPath);
let core = kc.makeApiClient(CoreV1Api);
let custom = kc.makeApiClient(CustomObjectsApi);
const emulator: PubSubEmulator = await startPubSubEmulator();
const pubsub = new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.host) });
const createNs = (name: string, labels: Record<string, string> = {}) =>
  core.createNamespace({ body: { metadata: { name, labels } } });

/**
 * Creates Foo `name` in `namespace`, naming a Deployment of the same name with 1 replica, through
 * `client` (default: the bench's API server's).
 */
function createFoo(namespace: string, name: string, client: CustomObjectsApi = custom) {
  return client.createNamespacedCustomObject({
    group: 'samplecontroller.k8s.io',
    version: 'v1alpha1',
    plural: 'foos',
    namespace,
    body: {
      apiVersion: 'samplecontroller.k8s.io/v1alpha1',
      kind: 'Foo',
      metadata: { name },
      spec: { deploymentName: name, replicas: 1 },
    },
  });
}

/** Applies the CRDs of the controllers the sections create objects of. */
async function applyCrds(kubeconfigPath: string): Promise<void> {
  for (const crd of ['foo', 'customcluster', 'icecream'])
    await exec('kubectl', [
      '--kubeconfig',
      kubeconfigPath,
      'apply',
      '-f',
      join(repoRoot, 'functions', 'controllers', crd, 'crd.yaml'),
    ]);
}

/**
 * Runs a section on an API server of its own, empty but for the CRDs (`local`, `kc`, `core` and
 * `custom` are its while it runs): a relay started on the bench's shared one first lists, and
 * publishes keys for, the thousands of objects the earlier sections left there.
 */
async function onOwnApiServer(section: () => Promise<void>): Promise<void> {
  const shared = { local, kc, core, custom };
  const own = await startApiServerProcess();
  try {
    local = own;
    kc = new PooledKubeConfig();
    kc.loadFromFile(own.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    await applyCrds(own.kubeconfigPath);
    await section();
  } finally {
    ({ local, kc, core, custom } = shared);
    await own.stop();
  }
}

try {
  await applyCrds(local.kubeconfigPath);
  // A section that fails is reported as a note; the others still run.
  for (const [name, fn] of SECTIONS_IN_ORDER) {
    if (args.only && !args.only.includes(name)) continue;
    log(`section ${name}`);
    const t0 = performance.now();
    try {
      await fn();
    } catch (err) {
      log(`${name} failed: ${err instanceof Error ? err.stack : String(err)}`);
      notes.push(`section ${name} failed in this run: ${err instanceof Error ? err.message : String(err)}`);
    }
    sectionMs[name] = Math.round(performance.now() - t0);
  }
} finally {
  await pubsub.close().catch(() => {});
  await emulator.stop();
  await local.stop();
}

const durationMs = performance.now() - started;
const m = machine();
const results = {
  generatedAt: new Date().toISOString(),
  tiny,
  durationMs: Math.round(durationMs),
  sectionMs,
  machine: m,
  sizes,
  notes,
  figures,
  cost: costRows,
  fleet: fleetSummary,
};
writeFileSync(join(outDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
writeFileSync(join(outDir, 'latency.svg'), cdfChart('Latency distributions (CDF, log scale)', chart));
writeFileSync(
  join(outDir, 'report.md'),
  markdownReport({
    figures,
    machine: m,
    sizes: Object.fromEntries(Object.entries(sizes).filter(([, v]) => typeof v === 'number')) as Record<
      string,
      number
    >,
    durationMs,
    sectionMs,
    tiny,
    chartFile: 'latency.svg',
    notes,
    extra: costRows.length ? { cost: costTable(costRows) } : {},
  }),
);
log(`wrote ${join(outDir, 'report.md')}`);
// The new sections' headline figures, on stderr as the run ends.
if (costRows.length)
  log(
    `summary: $ per million converged reconciles (busy, isolated): ${costRows
      .map((r) => `${r.controller} ${r.perMillion.convergedBusy}, ${r.perMillion.convergedIsolated}`)
      .join('; ')}`,
  );
for (const f of figures.filter((x) => x.section === 'fleet' && /^function processes|per second/.test(x.name)))
  log(`summary: fleet, ${f.name}: ${f.value} ${f.unit} vs ${f.baseline?.value} (${ratio(f)})`);
console.log(outDir);
process.exit(0);

// ---------------------------------------------------------------------------------------------

/** End to end and throughput, in both modes, on the same API server, with a simulated node. */
async function e2eAndThroughput(): Promise<void> {
  const simulated = await startSimulatedNode(kc, quiet);
  try {
    await e2eAndThroughputOnNode();
  } finally {
    await simulated.stop();
  }
}

async function e2eAndThroughputOnNode(): Promise<void> {
  const source = 'bench-source';
  await createNs(source);
  const targets = Array.from({ length: sizes.targets }, (_, i) => `bench-target-${i}`);
  for (const t of targets) await createNs(t);
  const secrets = watchObjects(kc, '/api/v1/secrets');
  const deployments = watchObjects(kc, '/apis/apps/v1/deployments');
  const foos = watchObjects(kc, '/apis/samplecontroller.k8s.io/v1alpha1/foos');
  await Promise.all([secrets.ready, deployments.ready, foos.ready]);
  const results: Record<
    StackMode,
    { secret: number[]; foo: number[]; throughputMs: number; reconciles: number }
  > = {} as never;
  const decoded = (o: KubernetesObject | undefined) =>
    Buffer.from((o as { data?: Record<string, string> } | undefined)?.data?.v ?? '', 'base64').toString();
  for (const mode of STACK_MODES) {
    log(`e2e: ${mode}`);
    const ns = `bench-${mode}`;
    await createNs(ns);
    let reconciles = 0;
    const stack: AnyLocalStack = await startLocalStack({
      mode,
      kubeconfigPath: local.kubeconfigPath,
      env: { LEVELSET_SOURCE_NAMESPACE: source, LOG_LEVEL: 'info' },
      onLog: (service, line) => {
        const labels = line[LABELS] as { controller?: string } | undefined;
        if (service === 'reconcile' && labels?.controller === 'foo' && typeof line.outcome === 'string')
          reconciles++;
      },
    });
    try {
      // Changes go to `rotation` objects in turn, so that one object changes again only after the
      // relay's collapse window has passed: each change is an isolated change (bursts are the
      // collapse section's). Secrets: each source copied into every target namespace.
      const secretNames = Array.from({ length: sizes.rotation }, (_, k) => `db-${mode}-${k}`);
      const body = (name: string, v: string) => ({
        metadata: { name, namespace: source, annotations: { [REPLICATE_TO_ANNOTATION]: 'bench-target-.*' } },
        data: { v: Buffer.from(v).toString('base64') },
      });
      for (const name of secretNames)
        await core.createNamespacedSecret({ namespace: source, body: body(name, '0') });
      const copiesAre = (name: string, v: string) => () =>
        targets.every((t) => decoded(secrets.get(t, name)) === v);
      for (const name of secretNames) await secrets.until(copiesAre(name, '0'));
      const secretMs: number[] = [];
      for (let i = 1; i <= sizes.e2eChanges; i++) {
        if (i % 50 === 0) log(`e2e ${mode}: secret change ${i}`);
        const name = secretNames[i % sizes.rotation] as string;
        const t0 = now();
        await core.patchNamespacedSecret(
          { namespace: source, name, body: { data: { v: Buffer.from(String(i)).toString('base64') } } },
          merge,
        );
        const at = await secrets.until(copiesAre(name, String(i)), 30_000).catch(() => undefined);
        if (at === undefined)
          notes.push(`${mode}: Secret change ${i} not converged within 30 s (sample dropped)`);
        else secretMs.push(at - t0);
      }
      // Foo: spec.replicas changed → Deployment updated.
      const fooNames = Array.from({ length: sizes.rotation }, (_, k) => `web-${mode}-${k}`);
      const foo = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos', namespace: ns };
      for (const name of fooNames) await createFoo(ns, name);
      const replicasAre = (name: string, r: number) => () =>
        (deployments.get(ns, name) as { spec?: { replicas?: number } } | undefined)?.spec?.replicas === r;
      for (const name of fooNames) await deployments.until(replicasAre(name, 1));
      const fooMs: number[] = [];
      for (let i = 1; i <= sizes.e2eChanges; i++) {
        const name = fooNames[i % sizes.rotation] as string;
        const r = (Math.floor(i / sizes.rotation) % 4) + 2;
        const t0 = now();
        await custom.patchNamespacedCustomObject({ ...foo, name, body: { spec: { replicas: r } } }, merge);
        const at = await deployments.until(replicasAre(name, r), 30_000).catch(() => undefined);
        if (at === undefined)
          notes.push(`${mode}: Foo change ${i} (replicas ${r}) not converged within 30 s (sample dropped)`);
        else fooMs.push(at - t0);
      }
      // Throughput: N Foos at once → all Ready.
      log(`throughput: ${mode}`);
      const tpNs = `bench-tp-${mode}`;
      await createNs(tpNs);
      const names = Array.from({ length: sizes.foos }, (_, i) => `tp-${i}`);
      const allReady = () => {
        let n = 0;
        for (const o of foos.all()) {
          if (o.metadata?.namespace !== tpNs) continue;
          const c = (
            (o as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions ?? []
          ).find((x) => x.type === 'Ready');
          if (c?.status === 'True') n++;
        }
        return n === names.length;
      };
      const before = reconciles;
      const t0 = now();
      await pool(names, 50, (n) => createFoo(tpNs, n));
      const throughputMs = (await foos.until(allReady, 600_000)) - t0;
      await sleep(1000); // let in-flight reconciles log their outcome
      results[mode] = { secret: secretMs, foo: fooMs, throughputMs, reconciles: reconciles - before };
    } finally {
      await stack.stop();
    }
  }
  secrets.stop();
  deployments.stop();
  foos.stop();
  const s = results.serverless;
  const ip = results['in-process'];
  for (const [kind, label] of [
    ['secret', 'Secret changed → every copy converged'],
    ['foo', 'Foo replicas changed → Deployment updated'],
  ] as const) {
    const a = quantiles(s[kind]);
    const b = quantiles(ip[kind]);
    for (const q of ['p50', 'p95', 'p99'] as const)
      figures.push({
        section: 'e2e',
        name: `${label}, ${q} (n=${a.n})`,
        value: a[q],
        unit: 'ms',
        baseline: { name: 'in-process', value: b[q] },
      });
    chart.push(
      { name: `${kind}: serverless`, values: s[kind] },
      { name: `${kind}: in-process`, values: ip[kind] },
    );
  }
  figures.push(
    {
      section: 'throughput',
      name: `${sizes.foos} Foos created at once → all Ready, time`,
      value: s.throughputMs / 1000,
      unit: 's',
      baseline: { name: 'in-process', value: ip.throughputMs / 1000 },
    },
    {
      section: 'throughput',
      name: `${sizes.foos} Foos → all Ready, reconciles`,
      value: s.reconciles,
      unit: 'reconciles',
      baseline: { name: 'in-process', value: ip.reconciles },
    },
    {
      section: 'throughput',
      name: `${sizes.foos} Foos → all Ready, reconciles per Foo`,
      value: s.reconciles / sizes.foos,
      unit: 'reconciles',
      baseline: { name: 'in-process', value: ip.reconciles / sizes.foos },
    },
  );
}

/** The relay alone: isolated-change latency and bursts, leading + trailing vs trailing only. */
async function collapse(): Promise<void> {
  const out: Record<
    CollapseMode,
    {
      isolated: number[];
      burst: { messages: number; spanMs: number };
      objects: { maxPerObjectPerWindow: number; messages: number; spanMs: number };
    }
  > = {} as never;
  for (const mode of ['leading-trailing', 'trailing'] as const) {
    log(`collapse: ${mode}`);
    const ns = `bench-collapse-${mode}`;
    await createNs(ns);
    const publisher = await publisherOnNewTopic(`bench-collapse-${mode}`);
    const accepted: { name: string; at: number }[] = [];
    const controller: Controller = {
      name: 'bench-collapse',
      primary: configmaps,
      rbac: [],
      watches: [
        {
          resource: configmaps,
          namespace: ns,
          map: (e) => [{ namespace: ns, name: e.object.metadata?.name ?? '' }],
        },
      ],
      reconcile: async () => undefined,
    };
    const relayKc = new PooledKubeConfig(); // as the relay process loads it (functions/kube.ts)
    relayKc.loadFromFile(local.kubeconfigPath);
    const relay = await startRelay({
      kubeConfig: relayKc,
      controllers: [controller],
      collapseMs: sizes.collapseMs,
      collapseMode: mode,
      logger: quiet,
      port: 0,
      host: '127.0.0.1',
      publisher: {
        publish: async (msg: KeyMessage) => {
          const id = await publisher.publish(msg);
          accepted.push({ name: msg.name, at: now() });
          return id;
        },
        flush: () => publisher.flush(),
      },
    });
    await relay.whenReady();
    const count = (name: string) => accepted.filter((a) => a.name === name).length;
    const waitCount = async (name: string, n: number) => {
      while (count(name) < n) await sleep(1);
      return accepted.filter((a) => a.name === name)[n - 1]?.at as number;
    };
    const settle = () => sleep(sizes.collapseMs * 3);
    const isolated: number[] = [];
    for (let i = 0; i < sizes.isolated; i++) {
      const name = `iso-${i}`;
      const t0 = now();
      await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
      isolated.push((await waitCount(name, 1)) - t0);
    }
    await settle();
    // One object, `burst` updates within ~1 s.
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'hot' } } });
    await waitCount('hot', 1);
    await settle();
    const hotBefore = count('hot');
    const b0 = now();
    const batch = Math.max(1, Math.ceil(sizes.burst / 20));
    for (let i = 0; i < sizes.burst; i += batch) {
      await Promise.all(
        Array.from({ length: Math.min(batch, sizes.burst - i) }, (_, k) =>
          core.patchNamespacedConfigMap(
            { namespace: ns, name: 'hot', body: { data: { n: String(i + k) } } },
            merge,
          ),
        ),
      );
      const due = b0 + ((i + batch) / sizes.burst) * 1000;
      if (due > now()) await sleep(due - now());
    }
    const spanMs = now() - b0;
    await settle();
    const burst = { messages: count('hot') - hotBefore, spanMs };
    // `objects` objects × `objectUpdates` updates each, interleaved.
    const objs = Array.from({ length: sizes.objects }, (_, i) => `obj-${i}`);
    await pool(objs, 20, (name) =>
      core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } }),
    );
    await settle();
    const before = new Map(objs.map((o) => [o, count(o)]));
    const o0 = now();
    for (let u = 0; u < sizes.objectUpdates; u++)
      await pool(objs, 10, (name) =>
        core.patchNamespacedConfigMap({ namespace: ns, name, body: { data: { u: String(u) } } }, merge),
      );
    const oSpan = now() - o0;
    await settle();
    const windows = Math.max(1, Math.ceil(oSpan / sizes.collapseMs));
    const perObject = objs.map((o) => count(o) - (before.get(o) ?? 0));
    out[mode] = {
      isolated,
      burst,
      objects: {
        maxPerObjectPerWindow: Math.max(...perObject) / windows,
        messages: perObject.reduce((a, b) => a + b, 0),
        spanMs: oSpan,
      },
    };
    await relay.stop();
    await publisher.close();
  }
  const lt = out['leading-trailing'];
  const tr = out.trailing;
  const iso = quantiles(lt.isolated);
  const isoBase = quantiles(tr.isolated);
  figures.push(
    {
      section: 'collapse',
      name: `isolated change → publish accepted, p50 (n=${iso.n}, window ${sizes.collapseMs} ms)`,
      value: iso.p50,
      unit: 'ms',
      baseline: { name: 'trailing only', value: isoBase.p50 },
      target: { text: '≤ 25 ms', met: iso.p50 <= 25 },
    },
    {
      section: 'collapse',
      name: 'isolated change → publish accepted, p95',
      value: iso.p95,
      unit: 'ms',
      baseline: { name: 'trailing only', value: isoBase.p95 },
    },
  );
  const bound = 1 + Math.ceil(1000 / sizes.collapseMs);
  figures.push({
    section: 'collapse',
    name: `${sizes.burst} updates to one object within ${Math.round(lt.burst.spanMs)} ms → messages`,
    value: lt.burst.messages,
    unit: 'msgs',
    baseline: { name: 'trailing only', value: tr.burst.messages },
    target: {
      text: `≤ 1 + ⌈${Math.round(lt.burst.spanMs)} ms / window⌉ = ${1 + Math.ceil(lt.burst.spanMs / sizes.collapseMs)} (${bound} for 1 s)`,
      met: lt.burst.messages <= 1 + Math.ceil(lt.burst.spanMs / sizes.collapseMs),
    },
  });
  figures.push({
    section: 'collapse',
    name: `${sizes.objects} objects × ${sizes.objectUpdates} updates (${Math.round(lt.objects.spanMs)} ms) → most messages per object per window`,
    value: lt.objects.maxPerObjectPerWindow,
    unit: 'msgs',
    baseline: { name: 'trailing only', value: tr.objects.maxPerObjectPerWindow },
    target: { text: '≤ 2', met: lt.objects.maxPerObjectPerWindow <= 2 },
  });
  figures.push({
    section: 'collapse',
    name: `${sizes.objects} objects × ${sizes.objectUpdates} updates → messages in all`,
    value: lt.objects.messages,
    unit: 'msgs',
    baseline: { name: 'trailing only', value: tr.objects.messages },
  });
  chart.push(
    { name: 'isolated change → publish: leading+trailing', values: lt.isolated },
    { name: 'isolated change → publish: trailing only', values: tr.isolated },
  );
}

/** Events/s through the key pipeline (no I/O), keys/s published to the emulator. */
async function relayThroughput(): Promise<void> {
  log('relay throughput');
  const controller: Controller = {
    name: 'bench-relay',
    primary: configmaps,
    rbac: [],
    watches: [
      {
        resource: pods,
        map: (e) => [
          { namespace: e.object.metadata?.namespace ?? '', name: e.object.metadata?.labels?.app ?? '' },
        ],
      },
    ],
    reconcile: async () => undefined,
  };
  const routes = planInformers([controller])[0]?.routes ?? [];
  let published = 0;
  const pipeline = new KeyPipeline({
    collapseMs: sizes.collapseMs,
    publish: async () => String(++published),
    primaryKeys: () => [],
    logger: quiet,
    metrics: createRelayMetrics(),
  });
  const keys = 10_000;
  const events = Array.from({ length: 1000 }, (_, i) => ({
    type: 'MODIFIED' as const,
    object: { metadata: { namespace: 'ns', name: `p${i}`, labels: { app: `a${i % keys}` } } },
  }));
  const t0 = performance.now();
  for (let i = 0; i < sizes.pipelineEvents; i++) {
    const e = events[i % events.length] as (typeof events)[number];
    e.object.metadata.labels.app = `a${i % keys}`;
    pipeline.handle(routes, e);
  }
  const eventsPerS = sizes.pipelineEvents / ((performance.now() - t0) / 1000);
  pipeline.discard();
  const publisher = await publisherOnNewTopic('bench-relay-publish');
  const p0 = performance.now();
  await pool(
    Array.from({ length: sizes.publishKeys }, (_, i) => i),
    1000,
    (i) =>
      publisher.publish({
        v: 1,
        controller: 'bench-relay',
        namespace: 'ns',
        name: `k${i}`,
        reason: 'watch',
        enqueuedAt: new Date().toISOString(),
      }),
  );
  const keysPerS = sizes.publishKeys / ((performance.now() - p0) / 1000);
  await publisher.close();
  figures.push(
    {
      section: 'relay',
      name: `events/s ingested (map + collapse, ${sizes.pipelineEvents} events over ${keys} keys, one thread)`,
      value: eventsPerS,
      unit: 'events/s',
    },
    {
      section: 'relay',
      name: `keys/s published to the Pub/Sub emulator (${sizes.publishKeys} distinct keys, ordering keys on)`,
      value: keysPerS,
      unit: 'keys/s',
    },
  );
}

/** Requests per no-op reconcile (counted at the client). */
async function apiCost(): Promise<void> {
  log('api cost');
  const counting = new CountingKubeConfig();
  counting.loadFromFile(local.kubeconfigPath);
  const byName = new Map(registry.map((c) => [c.name, c]));
  const run = async (name: string, key: { namespace: string; name: string }) => {
    const controller = byName.get(name) as Controller;
    const ctx = {
      cluster: 'default',
      kubeConfig: counting as KubeConfig,
      log: quiet,
      events: createEventRecorder(counting, name, quiet),
    };
    await controller.reconcile(key, ctx).catch(() => undefined); // converge
    await controller.reconcile(key, ctx).catch(() => undefined);
    counting.requests.length = 0;
    await controller.reconcile(key, ctx);
    return counting.requests.length;
  };
  // The replicator at growing namespace counts. Its source namespace comes from the environment.
  const replicator = byName.get('secret-replicator');
  if (replicator) {
    process.env.LEVELSET_SOURCE_NAMESPACE = 'bench-source';
    // Made by the e2e section, unless it was left out (--only).
    await createNs('bench-source').catch((err: unknown) => {
      if ((err as { code?: number }).code !== 409) throw err;
    });
    let made = 0;
    const perNs: number[] = [];
    for (const n of sizes.namespaces) {
      await pool(
        Array.from({ length: n - made }, (_, i) => `bench-cost-${made + i}`),
        20,
        (ns) => createNs(ns),
      );
      made = n;
      await core.createNamespacedSecret({
        namespace: 'bench-source',
        body: {
          metadata: { name: `cost-${n}`, annotations: { [REPLICATE_TO_ANNOTATION]: 'bench-cost-.*' } },
          data: { v: 'eA==' },
        },
      });
      perNs.push(await run('secret-replicator', { namespace: 'bench-source', name: `cost-${n}` }));
    }
    sizes.namespaces.forEach((n, i) => {
      figures.push({
        section: 'api-cost',
        name: `secret-replicator, no-op reconcile, ${n} namespaces`,
        value: perNs[i] as number,
        unit: 'requests',
        baseline: { name: `${sizes.namespaces[0]} namespaces`, value: perNs[0] as number },
        target: { text: 'constant', met: perNs[i] === perNs[0] },
      });
    });
  }
  // The custom-resource controllers: one converged object each, its spec from the tutorials.
  await createNs('bench-cost-crs');
  const specs: Record<string, Record<string, unknown>> = {
    foo: { deploymentName: 'cost', replicas: 1 },
    customcluster: { message: 'hi', count: 2 },
    icecream: { deploymentName: 'cost-icecream', replicas: 1 },
  };
  for (const [name, spec] of Object.entries(specs)) {
    const primary = byName.get(name)?.primary;
    if (!primary) continue;
    await custom.createNamespacedCustomObject({
      group: primary.group,
      version: primary.version,
      plural: primary.plural,
      namespace: 'bench-cost-crs',
      body: {
        apiVersion: `${primary.group}/${primary.version}`,
        kind: primary.kind,
        metadata: { name: 'cost' },
        spec,
      },
    });
    figures.push({
      section: 'api-cost',
      name: `${name}, no-op reconcile`,
      value: await run(name, { namespace: 'bench-cost-crs', name: 'cost' }),
      unit: 'requests',
    });
  }
}

/** One controller's reconcile as the cost section measured it in its function process (bench/child.ts `reconcile`). */
interface MeasuredReconcile {
  converged: ReconcileCost;
  changing: ReconcileCost;
  outcomes: Record<string, number>;
  /** The first failed outcome's log line, if any. */
  firstFailure?: string;
  rss: number;
  peakRss: number;
}

/**
 * Cost per million reconciles (bench/cost.ts), for each shipped controller: its reconcile run as the
 * `reconcile` function runs it (`reconcileKey`), in a function process of its own (bench/child.ts
 * `reconcile`: what functions/index.ts loads, Terraform's heap limit), CPU time from that process's
 * `process.cpuUsage()`, wall time, memory from its own RSS, converged and changing; priced at Cloud
 * Run's request-based prices on Terraform's defaults (1 vCPU, 512 MiB, concurrency 8), beside an
 * always-on in-process controller pod (`relay/in-process-main.ts`, its idle CPU and RSS read from
 * /proc) priced as a GKE Autopilot Pod, and each controller's break-even rate.
 */
async function reconcileCost(): Promise<void> {
  log('cost per million reconciles');
  for (const crd of ['configmap-bundle', 'topic'])
    await exec('kubectl', [
      '--kubeconfig',
      local.kubeconfigPath,
      'apply',
      '-f',
      join(repoRoot, 'functions', 'controllers', crd, 'crd.yaml'),
    ]);
  const ns = 'bench-cost-model';
  await createNs(ns);
  const sourceNs = 'bench-cost-source';
  await createNs(sourceNs);
  for (let i = 0; i < sizes.targets; i++) await createNs(`bench-cost-copy-${i}`);
  const byName = new Map(registry.map((c) => [c.name, c]));
  const header = (name: string) => {
    const p = (byName.get(name) as Controller).primary;
    return { apiVersion: p.group ? `${p.group}/${p.version}` : p.version, kind: p.kind };
  };
  /** Each shipped controller: its object (created here), and two specs the changing reconciles alternate. */
  const subjects: {
    controller: string;
    namespace: string;
    body: Record<string, unknown>;
    patches: Record<string, unknown>[];
  }[] = [
    {
      controller: 'secret-replicator',
      namespace: sourceNs,
      body: {
        metadata: { annotations: { [REPLICATE_TO_ANNOTATION]: 'bench-cost-copy-.*' } },
        data: { v: 'MA==' },
      },
      patches: [{ data: { v: 'MQ==' } }, { data: { v: 'Mg==' } }],
    },
    {
      controller: 'foo',
      namespace: ns,
      body: { spec: { deploymentName: 'cost-foo', replicas: 1 } },
      patches: [{ spec: { replicas: 2 } }, { spec: { replicas: 3 } }],
    },
    {
      controller: 'customcluster',
      namespace: ns,
      body: { spec: { message: 'hi', count: 2 } },
      patches: [{ spec: { count: 3 } }, { spec: { count: 2 } }],
    },
    {
      controller: 'icecream',
      namespace: ns,
      body: { spec: { deploymentName: 'cost-icecream', replicas: 1 } },
      patches: [{ spec: { replicas: 2 } }, { spec: { replicas: 3 } }],
    },
    {
      controller: 'configmap-bundle',
      namespace: ns,
      body: { spec: { sources: [{ namespace: ns, name: 'cost-source-a' }] } },
      patches: [
        {
          spec: {
            sources: [
              { namespace: ns, name: 'cost-source-a' },
              { namespace: ns, name: 'cost-source-b' },
            ],
          },
        },
        { spec: { sources: [{ namespace: ns, name: 'cost-source-a' }] } },
      ],
    },
    {
      controller: 'topic',
      namespace: ns,
      // Labels would be the cheapest change, but the emulator cannot update a topic's labels.
      body: { spec: { subscriptions: [{ id: 'bench-cost-sub', ackDeadlineSeconds: 20 }] } },
      patches: [
        { spec: { subscriptions: [{ id: 'bench-cost-sub', ackDeadlineSeconds: 30 }] } },
        { spec: { subscriptions: [{ id: 'bench-cost-sub', ackDeadlineSeconds: 20 }] } },
      ],
    },
  ];
  for (const [name, v] of [
    ['cost-source-a', 'a'],
    ['cost-source-b', 'b'],
  ] as const)
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name }, data: { [name]: v } },
    });
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const count = tiny ? 20 : 200;
  const measured = new Map<string, MeasuredReconcile>();
  for (const s of subjects) {
    if (!byName.has(s.controller)) continue;
    const head = { ...header(s.controller), metadata: { name: 'cost', namespace: s.namespace } };
    const primary = (byName.get(s.controller) as Controller).primary;
    if (primary.group)
      await waitForServed(() => custom.listNamespacedCustomObject({ ...primary, namespace: s.namespace }));
    await objects.create({
      ...head,
      ...s.body,
      metadata: { ...head.metadata, ...(s.body.metadata as object | undefined) },
    } as KubernetesObject);
    log(`cost: ${s.controller}`);
    const { stdout } = await exec(
      process.execPath,
      [
        ...FUNCTION_NODE_OPTIONS,
        join(repoRoot, 'bench', 'child.ts'),
        'reconcile',
        '--kubeconfig',
        local.kubeconfigPath,
        '--controller',
        s.controller,
        '--namespace',
        s.namespace,
        '--name',
        'cost',
        '--count',
        String(count),
        '--object',
        JSON.stringify(head),
        '--patches',
        JSON.stringify(s.patches),
      ],
      {
        maxBuffer: 1 << 20,
        env: {
          ...process.env,
          KUBECONFIG: local.kubeconfigPath,
          LEVELSET_TRACING: 'off',
          LEVELSET_SOURCE_NAMESPACE: sourceNs,
          PUBSUB_EMULATOR_HOST: emulator.host,
          GOOGLE_CLOUD_PROJECT: emulator.projectId,
        },
      },
    );
    const m = JSON.parse(stdout.trim().split('\n').at(-1) as string) as MeasuredReconcile;
    const failed = Object.keys(m.outcomes).filter((o) => o !== 'success' && o !== 'requeue');
    if (failed.length)
      notes.push(
        `cost: ${s.controller}'s reconciles answered ${JSON.stringify(m.outcomes)} (not all success; first: ${m.firstFailure?.slice(0, 400)})`,
      );
    measured.set(s.controller, m);
  }

  // The always-on alternative: the in-process mode, idle once its informers are synced.
  const port = await freePort();
  const pod = spawn(process.execPath, [join(repoRoot, 'relay', 'in-process-main.ts')], {
    env: {
      ...process.env,
      KUBECONFIG: local.kubeconfigPath,
      RELAY_PORT: String(port),
      LOG_LEVEL: 'warn',
      LEVELSET_SOURCE_NAMESPACE: sourceNs,
      PUBSUB_EMULATOR_HOST: emulator.host,
      GOOGLE_CLOUD_PROJECT: emulator.projectId,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let podCores = 0;
  let podRssMib = 0;
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline) throw new Error('the in-process mode did not get ready in 60 s');
      await sleep(250);
    }
    // Ready means its informers have synced; their initial LIST still queues every existing key,
    // and working through them is start-up, not idling. Idle = every workqueue empty and no key
    // added for a second (client-go's metric names, relay/workqueue.ts).
    const queueState = async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return { depth: sumSeries(text, 'workqueue_depth'), adds: sumSeries(text, 'workqueue_adds_total') };
    };
    for (let last = await queueState(); ; ) {
      await sleep(1000);
      const state = await queueState();
      if (state.depth === 0 && state.adds === last.adds) break;
      if (Date.now() > deadline + 120_000)
        throw new Error(`the in-process mode did not go idle: ${JSON.stringify(state)}`);
      last = state;
    }
    // /proc/<pid>/stat fields 14 and 15: utime, stime in clock ticks (100 per second on Linux).
    const ticks = () => {
      const fields = readFileSync(`/proc/${pod.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      return Number(fields[11]) + Number(fields[12]);
    };
    const idleMs = tiny ? 3000 : 10_000;
    const t0 = ticks();
    await sleep(idleMs);
    podCores = (ticks() - t0) / 100 / (idleMs / 1000);
    podRssMib = procStatusKib(pod.pid as number, 'VmRSS') / 1024;
  } finally {
    const exited = new Promise((r) => pod.once('exit', r));
    pod.kill('SIGTERM');
    await exited;
  }

  const st = TERRAFORM_DEFAULTS;
  const podPerHour = autopilotPodPerHour(podCores, podRssMib / 1024);
  const money = (x: number) => Math.round(x * 100) / 100;
  const ms = (x: number) => Math.round(x * 1e5) / 100;
  const shape = `${st.vcpu} vCPU, ${st.memoryGib * 1024} MiB, concurrency ${st.concurrency}`;
  for (const [controller, m] of measured) {
    const billedConv = billedSeconds(m.converged, st);
    const billedChg = billedSeconds(m.changing, st);
    const row: CostRow = {
      controller,
      cpuMs: { converged: ms(m.converged.cpuSeconds), changing: ms(m.changing.cpuSeconds) },
      wallMs: { converged: ms(m.converged.wallSeconds), changing: ms(m.changing.wallSeconds) },
      billedMs: { busy: ms(billedConv.busy), isolated: ms(billedConv.isolated) },
      perMillion: {
        convergedBusy: money(cloudRunPerMillion(billedConv.busy, st)),
        convergedIsolated: money(cloudRunPerMillion(billedConv.isolated, st)),
        changingBusy: money(cloudRunPerMillion(billedChg.busy, st)),
        changingIsolated: money(cloudRunPerMillion(billedChg.isolated, st)),
      },
      breakEvenPerHour: {
        isolated: Math.round(breakEvenPerHour(cloudRunPerMillion(billedConv.isolated, st), podPerHour)),
        busy: Math.round(breakEvenPerHour(cloudRunPerMillion(billedConv.busy, st), podPerHour)),
      },
      rssMib: Math.round(m.rss / 2 ** 20),
      peakRssMib: Math.round(m.peakRss / 2 ** 20),
    };
    costRows.push(row);
    figures.push(
      {
        section: 'cost',
        name: `${controller}: CPU time per reconcile (function process, process.cpuUsage), converged`,
        value: row.cpuMs.converged,
        unit: 'ms',
        baseline: { name: 'changing (the object changed before each)', value: row.cpuMs.changing },
      },
      {
        section: 'cost',
        name: `${controller}: wall time per reconcile, converged`,
        value: row.wallMs.converged,
        unit: 'ms',
        baseline: { name: 'changing', value: row.wallMs.changing },
      },
      {
        section: 'cost',
        name: `${controller}: billed time per converged reconcile, busy instance (${shape})`,
        value: row.billedMs.busy,
        unit: 'ms',
        baseline: { name: 'isolated (billed alone, rounded up to 100 ms)', value: row.billedMs.isolated },
      },
      {
        section: 'cost',
        name: `${controller}: Cloud Run $ per million reconciles, converged, busy instance`,
        value: row.perMillion.convergedBusy,
        unit: '$',
        baseline: { name: 'isolated', value: row.perMillion.convergedIsolated },
      },
      {
        section: 'cost',
        name: `${controller}: Cloud Run $ per million reconciles, changing, busy instance`,
        value: row.perMillion.changingBusy,
        unit: '$',
        baseline: { name: 'isolated', value: row.perMillion.changingIsolated },
      },
      {
        section: 'cost',
        name: `${controller}: break-even rate, converged, isolated (below it serverless costs less than the pod)`,
        value: row.breakEvenPerHour.isolated,
        unit: 'reconciles/hour',
        baseline: { name: 'busy instance', value: row.breakEvenPerHour.busy },
      },
      {
        section: 'cost',
        name: `${controller}: function process peak RSS (its own maxRSS)`,
        value: row.peakRssMib,
        unit: 'MiB',
        baseline: { name: 'the configured memory Cloud Run bills', value: st.memoryGib * 1024 },
      },
    );
  }
  figures.push({
    section: 'cost',
    name: `always-on in-process pod on GKE Autopilot (idle ${Math.round(podCores * 1000)} mCPU, RSS ${Math.round(podRssMib)} MiB; billed at least ${PRICES.autopilot.minVcpu} vCPU, ${PRICES.autopilot.minGib} GiB)`,
    value: Math.round(podPerHour * 730 * 100) / 100,
    unit: '$/month',
  });
  notes.push(
    `cost: prices of ${PRICES.asOf} (${PRICES.source}); bench/cost.ts, docs/operations.md "What it costs".`,
  );
}

/** A field of /proc/<pid>/status in KiB (e.g. `VmRSS`, `VmHWM`: the peak RSS); 0 when unreadable. */
function procStatusKib(pid: number, field: string): number {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return Number(m?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Informer RSS (metadata-only vs full object) at two sizes, then resync of every key. */
async function memoryAndResync(): Promise<void> {
  const ns = 'bench-objects';
  await createNs(ns);
  let made = 0;
  const fill = async (n: number) => {
    log(`creating ConfigMaps up to ${n}`);
    const names = Array.from({ length: n - made }, (_, i) => `cm-${made + i}`);
    await pool(names, 16, (name) =>
      core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name, labels: { app: 'bench' } }, data: { v: 'x'.repeat(256) } },
      }),
    );
    made = n;
  };
  const child = async (argv: string[], env: Record<string, string> = {}, nodeArgs: string[] = []) => {
    const { stdout } = await exec(
      process.execPath,
      ['--expose-gc', ...nodeArgs, join(repoRoot, 'bench', 'child.ts'), ...argv],
      { env: { ...process.env, ...env }, maxBuffer: 1 << 20 },
    );
    return JSON.parse(stdout.trim().split('\n').at(-1) as string);
  };
  // The informer children run as the relay is deployed: bundled with the relay's esbuild
  // configuration (scripts/package-relay.ts, relay/Dockerfile), beside relay/main.ts so that they
  // load the relay's own chunks, started as the image starts it (its environment, RELAY_ENV), with
  // Terraform's V8 flags.
  // The full-object baseline is bundled alike in a build of its own (bench/informer-child.ts: in
  // the relay's build, client-node's whole API it imports would land in the relay's chunks).
  const relayBundle = mkdtempSync(join(tmpdir(), 'levelset-bench-relay-'));
  await packageRelay({
    out: relayBundle,
    extraEntryPoints: { 'bench-informer': 'bench/metadata-informer-child.ts' },
    inProcess: false,
  });
  await bundle({
    root: repoRoot,
    entryPoints: { 'bench-full-informer': 'bench/full-informer-child.ts' },
    outdir: join(relayBundle, 'full'),
    external: RELAY_EXTERNAL,
  });
  symlinkSync(join(repoRoot, 'node_modules'), join(relayBundle, 'node_modules'), 'dir');
  const informerChild = async (script: string, argv: string[]) => {
    const { stdout } = await exec(process.execPath, ['--expose-gc', ...RELAY_NODE_OPTIONS, script, ...argv], {
      env: { ...process.env, ...RELAY_ENV },
      maxBuffer: 1 << 20,
    });
    return JSON.parse(stdout.trim().split('\n').at(-1) as string);
  };
  const resync: { keys: number; durationMs: number; peakRss: number; error?: string }[] = [];
  try {
    for (const n of [sizes.rssSmall, sizes.rssLarge]) {
      await fill(n);
      log(`informer RSS at ${n}`);
      // Both informers run with the relay's deployed V8 flags (heap limit, young generation;
      // terraform/kubernetes.tf), so that the RSS is the one the relay's memory limit meets.
      const informerArgs = ['--kubeconfig', local.kubeconfigPath, '--namespace', ns, '--expect', `${n}`];
      const meta = await informerChild(join(relayBundle, 'bench-informer.mjs'), informerArgs);
      const full = await informerChild(join(relayBundle, 'full', 'bench-full-informer.mjs'), informerArgs);
      const MiB = 2 ** 20;
      const flags = RELAY_NODE_OPTIONS.join(' ');
      figures.push({
        section: 'relay',
        name: `RSS with ${n} watched ConfigMaps, metadata-only informer (process; ${flags}, as deployed)`,
        value: meta.rss / MiB,
        unit: 'MiB',
        baseline: { name: 'full-object informer', value: full.rss / MiB },
        // Issue 21's targets at 100k: the process within 150 MiB, its growth within 1/5 of the full-object informer's.
        ...(n === FULL_RSS_SIZES[1] ? { target: { text: '≤ 150 MiB', met: meta.rss / MiB <= 150 } } : {}),
      });
      if (n === sizes.rssSmall) {
        // Before the relay was bundled: the same child from the TypeScript sources (type stripping
        // stands in for tsc's JavaScript, which the image ran; both load every module file).
        const sources = await informerChild(
          join(repoRoot, 'bench', 'metadata-informer-child.ts'),
          informerArgs,
        );
        figures.push(
          {
            section: 'relay',
            name: `idle relay process RSS, bundled (its modules loaded, publisher created, before its informers start; ${flags})`,
            value: meta.baseline / MiB,
            unit: 'MiB',
            baseline: { name: 'the same from the TypeScript sources', value: sources.baseline / MiB },
          },
          {
            section: 'relay',
            name: `RSS with ${n} watched ConfigMaps, metadata-only informer (process), bundled`,
            value: meta.rss / MiB,
            unit: 'MiB',
            baseline: { name: 'the same from the TypeScript sources', value: sources.rss / MiB },
          },
        );
      }
      // The caches' own growth means something only when it dwarfs the noise of a process's RSS
      // (allocator and GC timing, a few MiB): thousands of objects, not a tiny run's hundreds.
      if (n >= RSS_GROWTH_MIN_OBJECTS)
        figures.push(
          {
            section: 'relay',
            name: `RSS with ${n} watched ConfigMaps, metadata-only informer (growth over the idle process)`,
            value: (meta.rss - meta.baseline) / MiB,
            unit: 'MiB',
            baseline: { name: 'full-object informer', value: (full.rss - full.baseline) / MiB },
            ...(n === FULL_RSS_SIZES[1]
              ? {
                  target: {
                    text: 'ratio ≤ 0.2',
                    met: meta.rss - meta.baseline <= 0.2 * (full.rss - full.baseline),
                  },
                }
              : {}),
          },
          {
            section: 'relay',
            name: `bytes per watched ConfigMap at ${n}, metadata-only informer (RSS growth / objects)`,
            value: (meta.rss - meta.baseline) / n,
            unit: 'bytes',
            baseline: { name: 'full-object informer', value: (full.rss - full.baseline) / n },
          },
          {
            section: 'relay',
            name: `bytes per watched ConfigMap at ${n}, metadata-only informer (V8 heap used after GC / objects)`,
            value: (meta.heapUsed - meta.baselineHeapUsed) / n,
            unit: 'bytes',
            baseline: { name: 'full-object informer', value: (full.heapUsed - full.baselineHeapUsed) / n },
          },
        );
      else if (n === sizes.rssSmall)
        notes.push(
          `informer RSS growth over the idle process is reported from ${RSS_GROWTH_MIN_OBJECTS} watched objects up (the full run: ${FULL_RSS_SIZES.join(' and ')}); with ${sizes.rssSmall} and ${sizes.rssLarge} the caches are smaller than the noise of the process's RSS`,
        );
      const topic = `bench-resync-${n}`;
      await pubsub.createTopic(topic);
      log(`resync of ${n} keys`);
      // The heap limit Terraform gives the resync function on a 512 MiB instance (functions.tf).
      const r = await child(
        ['resync', '--kubeconfig', local.kubeconfigPath, '--topic', topic],
        { PUBSUB_EMULATOR_HOST: emulator.host, GOOGLE_CLOUD_PROJECT: emulator.projectId },
        [...FUNCTION_NODE_OPTIONS],
      );
      resync.push({ keys: r.published, durationMs: r.durationMs, peakRss: r.peakRss, error: r.error });
      if (r.error) notes.push(`resync of ${n} keys reported an error: ${r.error}`);
    }
  } finally {
    rmSync(relayBundle, { recursive: true, force: true });
  }
  const [small, large] = resync as [(typeof resync)[0], (typeof resync)[0]];
  figures.push(
    {
      section: 'resync',
      name: `enumerate and publish ${large.keys} keys, time`,
      value: large.durationMs / 1000,
      unit: 's',
      baseline: { name: `${small.keys} keys`, value: small.durationMs / 1000 },
      // Issue 21's target, at the full run's 100k keys.
      ...(large.keys >= FULL_RSS_SIZES[1]
        ? { target: { text: '≤ 15 s', met: large.durationMs <= 15_000 } }
        : {}),
    },
    {
      section: 'resync',
      name: `enumerate and publish ${large.keys} keys, keys/s`,
      value: large.keys / (large.durationMs / 1000),
      unit: 'keys/s',
      baseline: { name: `${small.keys} keys`, value: small.keys / (small.durationMs / 1000) },
    },
    {
      section: 'resync',
      name: `enumerate and publish ${large.keys} keys, peak RSS (V8 flags as deployed: ${FUNCTION_NODE_OPTIONS.join(' ')})`,
      value: large.peakRss / 2 ** 20,
      unit: 'MiB',
      baseline: { name: `${small.keys} keys`, value: small.peakRss / 2 ** 20 },
      // Issue 21's target (half the default 512 MiB instance).
      target: { text: '≤ 256 MiB', met: large.peakRss <= 256 * 2 ** 20 },
    },
  );
}

/**
 * Spawn → first 204 of the reconcile function, as deployed: the bundle `npm run package:functions`
 * stages (with node_modules beside it, as the buildpack's `npm ci` puts it) under the
 * functions-framework CLI with Terraform's NODE_OPTIONS. Baseline: an empty functions-framework
 * function (answers 204 at once) started the same way; also the TypeScript sources as `npm start`
 * runs them, against the same baseline. The three are interleaved, so load on the machine hits all.
 */
async function coldStart(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'levelset-bench-cold-'));
  try {
    const bundle = join(dir, 'bundle');
    await packageFunctions({ out: bundle });
    symlinkSync(join(repoRoot, 'node_modules'), join(bundle, 'node_modules'), 'dir');
    // The buildpack's `gcp-build` after `npm ci`: fills the compile cache the functions start with.
    await exec(process.execPath, [join(bundle, WARM_COMPILE_CACHE)], { cwd: bundle });
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    writeFileSync(join(empty, 'package.json'), '{"name":"empty","main":"index.js"}\n');
    writeFileSync(join(empty, 'index.js'), 'exports.reconcile = (req, res) => res.status(204).end();\n');
    // terraform/functions.tf's NODE_OPTIONS at the default 512Mi.
    const deployed = [...FUNCTION_NODE_OPTIONS, '--enable-source-maps'].join(' ');
    // terraform/functions.tf's NODE_COMPILE_CACHE for the bundle.
    const compileCache = {
      NODE_COMPILE_CACHE: join(bundle, COMPILE_CACHE),
      NODE_COMPILE_CACHE_PORTABLE: '1',
    };
    const variants = {
      bundle: { source: bundle, nodeOptions: deployed, env: compileCache },
      empty: { source: empty, nodeOptions: deployed, env: {} },
      sources: { source: repoRoot, nodeOptions: FUNCTION_NODE_OPTIONS.join(' '), env: {} },
    };
    const samples: Record<keyof typeof variants, number[]> = { bundle: [], empty: [], sources: [] };
    for (let i = 0; i < sizes.coldStarts; i++) {
      log(`cold start ${i + 1}`);
      for (const [name, v] of Object.entries(variants) as [
        keyof typeof variants,
        (typeof variants)['bundle'],
      ][])
        samples[name].push(await spawnToFirst204(v.source, v.nodeOptions, v.env));
    }
    const b = quantiles(samples.bundle);
    const e = quantiles(samples.empty);
    const t = quantiles(samples.sources);
    figures.push(
      {
        section: 'cold-start',
        name: `reconcile function (deployed bundle): spawn → first 204, median of ${b.n}`,
        value: b.p50,
        unit: 'ms',
        baseline: { name: 'empty functions-framework function', value: e.p50 },
        target: { text: '≤ 600 ms and ≤ 2×', met: b.p50 <= 600 && b.p50 <= 2 * e.p50 },
      },
      {
        section: 'cold-start',
        name: `reconcile function (TypeScript sources, as npm start runs them): spawn → first 204, median of ${t.n}`,
        value: t.p50,
        unit: 'ms',
        baseline: { name: 'empty functions-framework function', value: e.p50 },
      },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Foo replicas changed → Deployment updated while a resync's backlog is pending, through the
 * serverless pipeline: with no resync (baseline); with `priorityBacklog` resync keys pending on the
 * resync's own topic (as now); and with the same backlog on the live keys topic (as before). The
 * backlog is keys of Foos that do not exist (each reconcile one GET), published by the resync
 * (`resyncAll`), with the resync's publisher on its own topic.
 */
async function resyncPriority(): Promise<void> {
  const ns = 'bench-priority';
  await createNs(ns);
  const stack = await startLocalStack({ mode: 'serverless', kubeconfigPath: local.kubeconfigPath, env: {} });
  const deployments = watchObjects(kc, '/apis/apps/v1/deployments');
  await deployments.ready;
  const foo = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos', namespace: ns };
  try {
    const names = Array.from({ length: sizes.rotation }, (_, k) => `p-${k}`);
    for (const name of names) await createFoo(ns, name);
    const replicasAre = (name: string, r: number) => () =>
      (deployments.get(ns, name) as { spec?: { replicas?: number } } | undefined)?.spec?.replicas === r;
    for (const name of names) await deployments.until(replicasAre(name, 1));
    let change = 0;
    const TIMEOUT_MS = 60_000;
    const changes = async (): Promise<number[]> => {
      const ms: number[] = [];
      for (let i = 0; i < sizes.priorityChanges; i++) {
        change++;
        const name = names[change % names.length] as string;
        // A value the Foo does not have yet: it changes every time its name comes round again.
        const r = (Math.floor(change / names.length) % 4) + 2;
        const t0 = now();
        await custom.patchNamespacedCustomObject({ ...foo, name, body: { spec: { replicas: r } } }, merge);
        const at = await deployments.until(replicasAre(name, r), TIMEOUT_MS).catch(() => undefined);
        ms.push(at === undefined ? TIMEOUT_MS : at - t0);
      }
      return ms;
    };
    // The backlog is published by the resync itself (resyncAll), its keys listed by a `foo`
    // controller whose listKeys names Foos that do not exist: on the resync's topic with the
    // resync's publisher (RESYNC_PUBLISHING: no ordering key, batched), on the live topic with the
    // live keys' (an ordering key per key), as the resync published before it had a topic of its own.
    const fooController = registry.find((c) => c.name === 'foo') as Controller;
    const backlog = async (topicName: string, tag: string, options: { ordering?: boolean }) => {
      const publisher = createKeyPublisher({
        projectId: stack.emulator.projectId,
        topic: topicName.split('/').pop() as string,
        emulatorHost: stack.emulator.host,
        logger: quiet,
        ...options,
      });
      try {
        const report = await resyncAll(
          [
            {
              ...fooController,
              listKeys: async function* () {
                for (let i = 0; i < sizes.priorityBacklog; i++)
                  yield { namespace: ns, name: `absent-${tag}-${i}` };
              },
            },
          ],
          kc,
          publisher,
          quiet,
        );
        if (report.published !== sizes.priorityBacklog)
          throw new Error(
            `backlog: ${report.published} of ${sizes.priorityBacklog} keys published: ${JSON.stringify(report.controllers)}`,
          );
      } finally {
        await publisher.close();
      }
    };
    log('resync priority: no resync');
    const quiet0 = await changes();
    log(`resync priority: ${sizes.priorityBacklog} keys on the resync topic`);
    const ackedBefore = stack.resyncPushProxy.stats().acknowledged;
    await backlog(stack.resyncTopology.topic, 'own', RESYNC_PUBLISHING);
    const own = await changes();
    const ownDrained = stack.resyncPushProxy.stats().acknowledged - ackedBefore;
    log(`resync priority: ${sizes.priorityBacklog} keys on the live topic (as before)`);
    await backlog(stack.topology.topic, 'shared', { ordering: true });
    const shared = await changes();
    const base = quantiles(quiet0);
    const a = quantiles(own);
    const b = quantiles(shared);
    figures.push(
      {
        section: 'resync-priority',
        name: `Foo replicas changed while ${sizes.priorityBacklog} resync keys are pending (own topic) → Deployment updated, p50 (n=${a.n})`,
        value: a.p50,
        unit: 'ms',
        baseline: { name: 'no resync running', value: base.p50 },
        target: { text: '≤ 2×', met: a.p50 <= 2 * base.p50 },
      },
      {
        section: 'resync-priority',
        name: `the same with the backlog on the live keys topic (before: one subscription), p50 (n=${b.n})`,
        value: b.p50,
        unit: 'ms',
        baseline: { name: 'no resync running', value: base.p50 },
      },
    );
    notes.push(
      `resync priority: ${ownDrained} of ${sizes.priorityBacklog} resync keys were reconciled while the ${a.n} live changes on the own-topic run converged; a live change not converged within ${TIMEOUT_MS / 1000} s counts as ${TIMEOUT_MS / 1000} s.`,
    );
  } finally {
    deployments.stop();
    await stack.stop();
  }
}

/** Starts functions-framework on `source` and POSTs a key message until it answers 204; ms. */
async function spawnToFirst204(
  source: string,
  nodeOptions: string,
  env: Record<string, string> = {},
): Promise<number> {
  const port = await freePort();
  const t0 = now();
  const child = spawn(
    process.execPath,
    [functionsCli, '--target=reconcile', `--port=${port}`, `--source=${source}`],
    {
      env: {
        ...process.env,
        ...env,
        NODE_OPTIONS: nodeOptions,
        KUBECONFIG: local.kubeconfigPath,
        LOG_LEVEL: 'warn',
        LEVELSET_SOURCE_NAMESPACE: 'bench-source',
      },
      stdio: 'ignore',
    },
  );
  try {
    const body = JSON.stringify({
      message: {
        data: Buffer.from(
          JSON.stringify({
            v: 1,
            controller: 'secret-replicator',
            namespace: 'bench-source',
            name: 'missing',
            reason: 'manual',
            enqueuedAt: new Date().toISOString(),
          }),
        ).toString('base64'),
        messageId: '1',
      },
    });
    for (;;) {
      const res = await fetch(`http://127.0.0.1:${port}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      }).catch(() => undefined);
      await res?.body?.cancel();
      if (res?.status === 204) break;
      if (now() - t0 > 60_000) throw new Error(`${source}: no 204 within 60 s`);
      await sleep(5);
    }
    return now() - t0;
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

/**
 * The Topic controller (functions/controllers/topic): the requests of a no-op reconcile, to
 * Kubernetes (counted by the KubeConfig) and to Pub/Sub (counted on the wire by a proxy in front of
 * the emulator), beside a Topic without subscription and a Foo; then, through the serverless
 * pipeline, the time from a Topic's delete to the object gone (finalize: subscription and topic
 * deleted, finalizer removed), beside a Foo's (no finalizer) in the same stack.
 */
async function topicCosts(): Promise<void> {
  log('topic');
  const topicController = registry.find((c) => c.name === 'topic') as Controller;
  const foo = registry.find((c) => c.name === 'foo') as Controller;
  const topics = { group: 'pubsub.levelset.dev', version: 'v1alpha1', plural: 'topics' };
  await exec('kubectl', [
    '--kubeconfig',
    local.kubeconfigPath,
    'apply',
    '-f',
    join(repoRoot, 'functions', 'controllers', 'topic', 'crd.yaml'),
  ]);
  const createTopicObject = (namespace: string, name: string, spec: object) =>
    custom.createNamespacedCustomObject({
      ...topics,
      namespace,
      body: { apiVersion: 'pubsub.levelset.dev/v1alpha1', kind: 'Topic', metadata: { name }, spec },
    });
  const counter = await startGrpcProxy(emulator.host);
  // The controller's Pub/Sub client is made at its first use in this process: through the counter.
  const emulatorHost = process.env.PUBSUB_EMULATOR_HOST;
  process.env.PUBSUB_EMULATOR_HOST = counter.host;
  try {
    const ns = 'bench-cost-topic';
    await createNs(ns);
    await waitForServed(() => custom.listNamespacedCustomObject({ ...topics, namespace: ns }));
    const counting = new CountingKubeConfig();
    counting.loadFromFile(local.kubeconfigPath);
    const noOp = async (controller: Controller, name: string) => {
      const ctx = {
        cluster: 'default',
        kubeConfig: counting as KubeConfig,
        log: quiet,
        events: createEventRecorder(counting, controller.name, quiet),
      };
      await controller.reconcile({ namespace: ns, name }, ctx); // finalizer, create
      await controller.reconcile({ namespace: ns, name }, ctx); // status settles
      counting.requests.length = 0;
      counter.counts.clear();
      await controller.reconcile({ namespace: ns, name }, ctx);
      return { kubernetes: counting.requests.length, pubsub: counter.total() };
    };
    await createTopicObject(ns, 'bare', {});
    await createTopicObject(ns, 'with-sub', {
      subscriptions: [{ id: 'bench-with-sub', ackDeadlineSeconds: 20 }],
    });
    await createFoo(ns, 'cost');
    const bare = await noOp(topicController, 'bare');
    const withSub = await noOp(topicController, 'with-sub');
    const fooCost = await noOp(foo, 'cost');
    figures.push(
      {
        section: 'topic',
        name: 'Topic, no-op reconcile: requests to Kubernetes',
        value: withSub.kubernetes,
        unit: 'requests',
        baseline: { name: 'Foo, no-op reconcile', value: fooCost.kubernetes },
      },
      {
        section: 'topic',
        name: 'Topic with 1 subscription, no-op reconcile: requests to Pub/Sub',
        value: withSub.pubsub,
        unit: 'requests',
        baseline: { name: 'Topic without subscription', value: bare.pubsub },
      },
    );
  } finally {
    await counter.close();
    if (emulatorHost === undefined) delete process.env.PUBSUB_EMULATOR_HOST;
    else process.env.PUBSUB_EMULATOR_HOST = emulatorHost;
  }

  // Delete → gone through the serverless pipeline (the stack's own emulator).
  const ns = 'bench-topic-delete';
  await createNs(ns);
  const stack = await startLocalStack({ mode: 'serverless', kubeconfigPath: local.kubeconfigPath, env: {} });
  const topicWatch = watchObjects(kc, '/apis/pubsub.levelset.dev/v1alpha1/topics');
  const fooWatch = watchObjects(kc, '/apis/samplecontroller.k8s.io/v1alpha1/foos');
  await Promise.all([topicWatch.ready, fooWatch.ready]);
  try {
    const topicGone: number[] = [];
    const fooGone: number[] = [];
    for (let i = 0; i < sizes.topics; i++) {
      const name = `t-${i}`;
      await createTopicObject(ns, name, { subscriptions: [{ id: `bench-delete-${i}` }] });
      await topicWatch.until(() => {
        const o = topicWatch.get(ns, name) as {
          status?: { conditions?: { type: string; status: string }[] };
        };
        return Boolean(o?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
      });
      const started = now();
      await custom.deleteNamespacedCustomObject({ ...topics, namespace: ns, name });
      topicGone.push((await topicWatch.until(() => !topicWatch.get(ns, name))) - started);

      await createFoo(ns, `f-${i}`);
      await fooWatch.until(() => Boolean(fooWatch.get(ns, `f-${i}`)));
      const fooStarted = now();
      await custom.deleteNamespacedCustomObject({
        group: 'samplecontroller.k8s.io',
        version: 'v1alpha1',
        plural: 'foos',
        namespace: ns,
        name: `f-${i}`,
      });
      fooGone.push((await fooWatch.until(() => !fooWatch.get(ns, `f-${i}`))) - fooStarted);
    }
    const t = quantiles(topicGone);
    const f = quantiles(fooGone);
    figures.push({
      section: 'topic',
      name: `Topic delete → object gone (finalize through the serverless pipeline), p50 of ${t.n}`,
      value: Math.round(t.p50),
      unit: 'ms',
      baseline: { name: 'Foo delete → gone (no finalizer), p50', value: Math.round(f.p50) },
    });
    figures.push({
      section: 'topic',
      name: `Topic delete → object gone, p95 of ${t.n}`,
      value: Math.round(t.p95),
      unit: 'ms',
      baseline: { name: 'Foo delete → gone (no finalizer), p95', value: Math.round(f.p95) },
    });
  } finally {
    topicWatch.stop();
    fooWatch.stop();
    await stack.stop();
  }
}

/** Waits until `list` answers (a CRD just applied is served). */
/**
 * The fleet's saving (issue 24): the same workload (N Foos created at once in each of two clusters →
 * all Ready) served by one deployment of the functions for both clusters vs one deployment per
 * cluster; the function processes' total peak RSS and the reconciles/s of each.
 */
async function fleet(): Promise<void> {
  log('fleet');
  // Two API servers of their own, alike and empty: the bench's own holds what the earlier sections
  // left (100 000 ConfigMaps after a full run's resync), which every relay would list first.
  const servers = [await startApiServerProcess(), await startApiServerProcess()];
  const kcs = servers.map((server) => {
    const k = new PooledKubeConfig();
    k.loadFromFile(server.kubeconfigPath);
    return k;
  });
  const clusters: LocalCluster[] = servers.map((server, i) => ({
    id: `fleet-${'ab'[i]}`,
    kubeconfigPath: server.kubeconfigPath,
  }));
  const foo = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos' };
  const started: { stop(): unknown }[] = [];
  try {
    for (const [i, server] of servers.entries()) {
      await exec('kubectl', [
        '--kubeconfig',
        server.kubeconfigPath,
        'apply',
        '-f',
        join(repoRoot, 'functions', 'controllers', 'foo', 'crd.yaml'),
      ]);
      await waitForServed(() =>
        (kcs[i] as KubeConfig).makeApiClient(CustomObjectsApi).listClusterCustomObject(foo),
      );
    }
    for (const k of kcs) started.push(await startSimulatedNode(k, quiet));
    const watches = kcs.map((k) => watchObjects(k, `/apis/${foo.group}/${foo.version}/${foo.plural}`));
    started.push(...watches);
    await Promise.all(watches.map((w) => w.ready));
    const readyIn = (w: ReturnType<typeof watchObjects>, ns: string) => {
      let n = 0;
      for (const o of w.all()) {
        if (o.metadata?.namespace !== ns) continue;
        const c = (
          (o as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions ?? []
        ).find((x) => x.type === 'Ready');
        if (c?.status === 'True') n++;
      }
      return n;
    };
    const names = Array.from({ length: sizes.fleetFoos }, (_, i) => `fleet-${i}`);
    /** One configuration: `deployments` stacks side by side, each serving its clusters. */
    const run = async (label: string, deployments: LocalCluster[][]) => {
      log(`fleet: ${label}`);
      const ns = `bench-fleet-${label}`;
      for (const k of kcs)
        await k.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
      let reconciles = 0;
      const stacks: LocalStack[] = [];
      try {
        for (const d of deployments)
          stacks.push(
            await startLocalStack({
              kubeconfigPath: (d[0] as LocalCluster).kubeconfigPath,
              clusters: d,
              env: { LOG_LEVEL: 'info' },
              onLog: (service, line) => {
                const labels = line[LABELS] as { controller?: string } | undefined;
                if (
                  service === 'reconcile' &&
                  labels?.controller === 'foo' &&
                  typeof line.outcome === 'string'
                )
                  reconciles++;
              },
            }),
          );
        const t0 = now();
        await Promise.all(
          kcs.map((k) => pool(names, 25, (name) => createFoo(ns, name, k.makeApiClient(CustomObjectsApi)))),
        );
        await Promise.all(watches.map((w) => w.until(() => readyIn(w, ns) === names.length, 600_000)));
        const seconds = (now() - t0) / 1000;
        await sleep(1000); // let in-flight reconciles log their outcome
        const sumMib = (pids: number[], field: string) =>
          pids.reduce((sum, pid) => sum + procStatusKib(pid, field), 0) / 1024;
        const reconcilePids = stacks.map((st) => st.reconcile.pid);
        const functionPids = stacks.flatMap((st) => [st.reconcile.pid, st.resync.pid]);
        return {
          seconds,
          reconciles,
          perSecond: reconciles / seconds,
          functionsPeakMib: sumMib(functionPids, 'VmHWM'),
          reconcilePeakMib: sumMib(reconcilePids, 'VmHWM'),
          reconcileRssMib: sumMib(reconcilePids, 'VmRSS'),
        };
      } finally {
        for (const st of stacks) await st.stop();
      }
    };
    const apart = await run(
      'apart',
      clusters.map((c) => [c]),
    );
    const together = await run('together', [clusters]);
    const base = (value: number) => ({ name: 'one deployment per cluster (2 × 1)', value });
    const round = (x: number) => Math.round(x * 10) / 10;
    const work = `${sizes.fleetFoos} Foos per cluster created → all Ready`;
    figures.push(
      {
        section: 'fleet',
        name: `function processes (reconcile + resync), total peak RSS, one deployment serving 2 clusters; ${work}`,
        value: Math.round(together.functionsPeakMib),
        unit: 'MiB',
        baseline: base(Math.round(apart.functionsPeakMib)),
      },
      {
        section: 'fleet',
        name: 'reconcile function processes, total peak RSS',
        value: Math.round(together.reconcilePeakMib),
        unit: 'MiB',
        baseline: base(Math.round(apart.reconcilePeakMib)),
      },
      {
        section: 'fleet',
        name: 'reconcile function processes, total RSS after the workload',
        value: Math.round(together.reconcileRssMib),
        unit: 'MiB',
        baseline: base(Math.round(apart.reconcileRssMib)),
      },
      {
        section: 'fleet',
        name: 'Foo reconciles per second (both clusters)',
        value: round(together.perSecond),
        unit: 'reconciles/s',
        baseline: base(round(apart.perSecond)),
      },
      {
        section: 'fleet',
        name: 'time until every Foo of both clusters is Ready',
        value: round(together.seconds),
        unit: 's',
        baseline: base(round(apart.seconds)),
      },
      {
        section: 'fleet',
        name: 'Foo reconciles run (both clusters)',
        value: together.reconciles,
        unit: 'reconciles',
        baseline: base(apart.reconciles),
      },
    );
    fleetSummary = { foosPerCluster: sizes.fleetFoos, oneForBoth: together, onePerCluster: apart };
  } finally {
    for (const s of started.reverse()) await s.stop();
    for (const server of servers) await server.stop();
  }
}

async function waitForServed(list: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (
      await list().then(
        () => true,
        () => false,
      )
    )
      return;
    await sleep(100);
  }
  throw new Error('the CRD was not served in time');
}

/**
 * What tracing costs: a converged Foo's delivery (`reconcile` span, its GET and LIST; the function's
 * code path without HTTP) and the relay's event ingestion (an `enqueue` span per published key),
 * each with `LEVELSET_TRACING=off` (the API's no-ops: the baseline; itself beside the reconcile
 * without its `reconcile` span) and then on (the SDK, every span
 * recorded and exported to an OTLP/JSON file: ratio 1, the worst case), in one process, off first.
 */
async function tracingCost(): Promise<void> {
  log('tracing cost');
  await createNs('bench-tracing').catch((err: unknown) => {
    if ((err as { code?: number }).code !== 409) throw err;
  });
  await createFoo('bench-tracing', 'traced');
  const byName = new Map(registry.map((c) => [c.name, c]));
  const key = { namespace: 'bench-tracing', name: 'traced' };
  const deliver = () =>
    inDeliverySpan(ROOT_CONTEXT, { [ATTR.controller]: 'foo', [ATTR.key]: 'bench-tracing/traced' }, () =>
      reconcileKey(byName, 'foo', key, { kubeConfig: () => kc, log: quiet, retriedBy: 'bench' }),
    );
  const bare = () =>
    reconcileKey(byName, 'foo', key, { kubeConfig: () => kc, log: quiet, retriedBy: 'bench' });
  /** The median ms of one delivery (robust to the load of a shared machine, unlike a mean). */
  const msPerReconcile = async (run = deliver) => {
    const each: number[] = [];
    for (let i = 0; i < sizes.tracedReconciles; i++) {
      const t0 = performance.now();
      await run();
      each.push(performance.now() - t0);
    }
    return quantiles(each).p50;
  };
  const foo = byName.get('foo') as Controller;
  const routes = planInformers([foo]).flatMap((p) => p.routes.filter((r) => r.primary));
  const eventsPerS = async () => {
    const pipeline = new KeyPipeline({
      collapseMs: 250,
      publish: async () => 'm',
      primaryKeys: () => [],
      logger: quiet,
    });
    const n = sizes.pipelineEvents / 10;
    const t0 = performance.now();
    for (let i = 0; i < n; i++)
      pipeline.handle(routes, {
        type: 'ADDED',
        object: {
          apiVersion: 'samplecontroller.k8s.io/v1alpha1',
          kind: 'Foo',
          metadata: { namespace: 'ns', name: `f${i % 1000}`, resourceVersion: String(i), generation: 1 },
        },
      });
    await pipeline.flush();
    pipeline.discard();
    return n / ((performance.now() - t0) / 1000);
  };
  await deliver(); // converge, warm up
  await msPerReconcile();
  const withoutSpan = await msPerReconcile(bare);
  const off = { reconcile: await msPerReconcile(), events: await eventsPerS() };
  const dir = mkdtempSync(join(tmpdir(), 'levelset-bench-traces-'));
  const tracing = await startTracing('bench', {
    exporter: 'file',
    file: join(dir, 'bench.jsonl'),
    sampleRatio: 1,
  });
  await deliver();
  const on = { reconcile: await msPerReconcile(), events: await eventsPerS() };
  await tracing.shutdown();
  rmSync(dir, { recursive: true, force: true });
  figures.push(
    {
      section: 'tracing',
      name: `converged foo delivery, tracing off (the API's no-op spans), median of ${sizes.tracedReconciles}`,
      value: off.reconcile,
      unit: 'ms',
      baseline: { name: 'the same reconcile without its reconcile span', value: withoutSpan },
    },
    {
      section: 'tracing',
      name: `converged foo delivery, tracing on (every span exported to a file), median of ${sizes.tracedReconciles}`,
      value: on.reconcile,
      unit: 'ms',
      baseline: { name: 'tracing off', value: off.reconcile },
    },
    {
      section: 'tracing',
      name: `relay events/s ingested (${sizes.pipelineEvents / 10} Foo events), tracing on`,
      value: on.events,
      unit: 'events/s',
      baseline: { name: 'tracing off', value: off.events },
    },
  );
}

/**
 * Where the serverless time and reconciles go, from the traces of a local stack (every span
 * exported to files, what `levelset trace` reads): for isolated Secret changes, the serverless
 * end-to-end time split into API write → relay saw it → Pub/Sub accepted the key → the function
 * received the push → the reconcile's reads → its writes → the bench's watch saw every copy; for
 * Foos created at once, each Foo reconcile's trigger (the watch event of its `enqueue` span, and
 * whether it was published on a leading or a trailing edge of the collapse window).
 */
async function breakdown(): Promise<void> {
  // An API server of its own, empty: a relay started on the bench's own would first list (and
  // reconcile) the thousands of objects the earlier sections left there.
  const own = await startApiServerProcess();
  const stateDir = mkdtempSync(join(tmpdir(), 'levelset-bench-breakdown-'));
  try {
    await breakdownOn(own.kubeconfigPath, stateDir);
  } finally {
    await own.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** The breakdown section on the API server of `kubeconfigPath`, the stack's files in `stateDir`. */
async function breakdownOn(kubeconfigPath: string, stateDir: string): Promise<void> {
  const kc = new PooledKubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  await exec('kubectl', [
    '--kubeconfig',
    kubeconfigPath,
    'apply',
    '-f',
    join(repoRoot, 'functions', 'controllers', 'foo', 'crd.yaml'),
  ]);
  const simulated = await startSimulatedNode(kc, quiet);
  const source = 'bench-source';
  const targets = Array.from({ length: sizes.targets }, (_, i) => `bench-target-${i}`);
  const ns = 'bench-breakdown';
  for (const name of [source, ...targets, ns]) await core.createNamespace({ body: { metadata: { name } } });
  const secrets = watchObjects(kc, '/api/v1/secrets');
  const foos = watchObjects(kc, `/apis/samplecontroller.k8s.io/v1alpha1/namespaces/${ns}/foos`);
  await Promise.all([secrets.ready, foos.ready]);
  const decoded = (o: KubernetesObject | undefined) =>
    Buffer.from((o as { data?: Record<string, string> } | undefined)?.data?.v ?? '', 'base64').toString();
  const changes: { rv: string; t0: number; at: number }[] = [];
  const stack = await startLocalStack({
    mode: 'serverless',
    kubeconfigPath,
    env: { LEVELSET_SOURCE_NAMESPACE: source, LOG_LEVEL: 'warn' },
    stateDir,
  });
  const fooCount = tiny ? 5 : 200;
  try {
    const names = Array.from({ length: sizes.rotation }, (_, k) => `traced-${k}`);
    for (const name of names)
      await core.createNamespacedSecret({
        namespace: source,
        body: {
          metadata: {
            name,
            namespace: source,
            annotations: { [REPLICATE_TO_ANNOTATION]: 'bench-target-.*' },
          },
          data: { v: Buffer.from('0').toString('base64') },
        },
      });
    const copiesAre = (name: string, v: string) => () =>
      targets.every((t) => decoded(secrets.get(t, name)) === v);
    for (const name of names) await secrets.until(copiesAre(name, '0'));
    const n = tiny ? 4 : 100;
    for (let i = 1; i <= n; i++) {
      const name = names[i % names.length] as string;
      const t0 = now();
      const patched = await core.patchNamespacedSecret(
        { namespace: source, name, body: { data: { v: Buffer.from(String(i)).toString('base64') } } },
        merge,
      );
      const at = await secrets.until(copiesAre(name, String(i)), 30_000).catch(() => undefined);
      if (at !== undefined) changes.push({ rv: patched.metadata?.resourceVersion ?? '', t0, at });
    }
    const fooNames = Array.from({ length: fooCount }, (_, i) => `bd-${i}`);
    await pool(fooNames, 50, (name) => createFoo(ns, name, custom));
    await foos.until(() => {
      let ready = 0;
      for (const o of foos.all())
        if (
          (o as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions?.some(
            (c) => c.type === 'Ready' && c.status === 'True',
          )
        )
          ready++;
      return ready === fooCount;
    }, 600_000);
    await sleep(1000); // the last reconciles end their spans
  } finally {
    await stack.stop();
    await simulated.stop();
    secrets.stop();
    foos.stop();
  }
  const spans = readSpans(join(stateDir, 'traces'));
  const byTrace = new Map<string, TracedSpan[]>();
  for (const s of spans) {
    const list = byTrace.get(s.traceId) ?? [];
    list.push(s);
    byTrace.set(s.traceId, list);
  }
  const end = (s: TracedSpan) => s.startMs + s.durationMs;
  const isWrite = (s: TracedSpan) =>
    ['PUT', 'POST', 'PATCH', 'DELETE'].includes(String(s.attributes['http.request.method'] ?? ''));

  // Secret: each change's trace, from the enqueue of the patched resourceVersion.
  const segments: Record<string, number[]> = {
    'API write → relay saw the watch event': [],
    'relay saw → Pub/Sub accepted the key (publish)': [],
    'published → the function received the push (emulator push loop, local push proxy, functions-framework)':
      [],
    'reconcile: reads (start → first write sent)': [],
    'reconcile: writes (first write sent → last write sent)': [],
    "last write sent → the bench's watch saw every copy (API server, watch)": [],
    'reconcile span, whole (reads, writes, Event, 204)': [],
  };
  const totals: number[] = [];
  for (const c of changes) {
    const enqueue = spans.find(
      (s) =>
        s.name === SPAN.enqueue &&
        s.attributes[ATTR.controller] === 'secret-replicator' &&
        s.attributes[ATTR.resourceVersion] === c.rv,
    );
    if (!enqueue) continue;
    const trace = byTrace.get(enqueue.traceId) ?? [];
    const publish = trace.find((s) => s.name.endsWith(' create') && s.service === enqueue.service);
    const reconcile = trace.find((s) => s.name === SPAN.reconcile);
    if (!publish || !reconcile) continue;
    const writes = trace.filter(
      (s) =>
        isWrite(s) &&
        s.startMs >= reconcile.startMs &&
        s.startMs <= end(reconcile) &&
        !String(s.attributes['url.path'] ?? '').endsWith('/events'),
    );
    if (!writes.length) continue;
    const firstWrite = Math.min(...writes.map((s) => s.startMs));
    const lastWrite = Math.max(...writes.map((s) => s.startMs));
    const v = [
      enqueue.startMs - c.t0,
      end(publish) - enqueue.startMs,
      reconcile.startMs - end(publish),
      firstWrite - reconcile.startMs,
      lastWrite - firstWrite,
      c.at - lastWrite,
      reconcile.durationMs,
    ];
    Object.values(segments).forEach((list, i) => void list.push(v[i] as number));
    totals.push(c.at - c.t0);
  }
  const total = quantiles(totals).p50;
  // A change that collapsed into a waiting publish (its object changed again inside the window, as
  // at tiny sizes) has no enqueue span of its own: left out.
  if (totals.length < changes.length)
    notes.push(
      `breakdown: ${changes.length - totals.length} of ${changes.length} Secret changes had no trace of their own (collapsed into a waiting publish) and are left out`,
    );
  for (const [name, values] of Object.entries(segments))
    if (values.length > 0)
      figures.push({
        section: 'breakdown',
        name: `Secret change, serverless: ${name}, median (n=${values.length})`,
        value: quantiles(values).p50,
        unit: 'ms',
        baseline: { name: 'the traced end-to-end median', value: total },
      });

  // The local push proxy's own hop (ours, local only: Cloud Run is pushed to directly), measured
  // alone: a push to the proxy in front of a server that answers 204 at once, vs to that server.
  const answer = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => answer.listen(0, '127.0.0.1', resolve));
  const address = answer.address();
  const direct = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
  const proxy = await startPushProxy({
    target: direct,
    emulatorHost: emulator.host,
    projectId: emulator.projectId,
    deadLetterTopic: `projects/${emulator.projectId}/topics/bench-breakdown-dead-letters`,
    subscription: `projects/${emulator.projectId}/subscriptions/bench-breakdown`,
  });
  const push = async (url: string, i: number) => {
    const t0 = performance.now();
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        message: { data: Buffer.from('{}').toString('base64'), messageId: String(i), attributes: {} },
        subscription: 'bench-breakdown',
      }),
    });
    await res.arrayBuffer();
    return performance.now() - t0;
  };
  const hops = { proxy: [] as number[], direct: [] as number[] };
  const pushes = tiny ? 20 : 500;
  for (let i = 0; i < pushes; i++) {
    hops.proxy.push(await push(proxy.url, i));
    hops.direct.push(await push(direct, i));
  }
  await proxy.stop();
  await new Promise((resolve) => answer.close(resolve));
  figures.push({
    section: 'breakdown',
    name: `a push through the local push proxy (emulator → proxy → function), median of ${pushes}`,
    value: quantiles(hops.proxy).p50,
    unit: 'ms',
    baseline: { name: 'the same push straight to the server', value: quantiles(hops.direct).p50 },
  });

  // The emulator's own push delivery, measured alone against an endpoint that answers after
  // `answerMs` (a reconcile's time): how many pushes it has in flight at once while a backlog waits,
  // and how long an isolated message waits between publish and push. (Its push loop, read from the
  // emulator's classes: two loops per push subscription, each pulling one message and pushing it
  // synchronously, sleeping 100 ms when nothing is pending.)
  const answerMs = 20;
  let inFlight = 0;
  let maxInFlight = 0;
  const pushedAt = new Map<string, number>();
  const slow = createServer((req, res) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString();
    });
    req.on('end', () => {
      const id = Buffer.from(JSON.parse(body).message.data, 'base64').toString();
      pushedAt.set(id, performance.now());
      setTimeout(() => {
        inFlight--;
        res.writeHead(204).end();
      }, answerMs);
    });
  });
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
  const slowAddress = slow.address();
  const pushTopic = `bench-emulator-push-${Date.now()}`;
  const [topic] = await pubsub.createTopic(pushTopic);
  const [subscription] = await topic.createSubscription(pushTopic, {
    pushConfig: {
      pushEndpoint: `http://127.0.0.1:${typeof slowAddress === 'object' && slowAddress ? slowAddress.port : 0}/`,
    },
  });
  const unbatched = pubsub.topic(pushTopic, { batching: { maxMessages: 1 } });
  try {
    const backlog = tiny ? 10 : 100;
    const b0 = performance.now();
    await Promise.all(
      Array.from({ length: backlog }, (_, i) => unbatched.publishMessage({ data: Buffer.from(`b${i}`) })),
    );
    await waitFor(() => pushedAt.size >= backlog, { timeoutMs: 120_000, message: 'the backlog pushed' });
    const backlogPerSecond = backlog / ((Math.max(...pushedAt.values()) - b0) / 1000);
    const waits: number[] = [];
    for (let i = 0; i < (tiny ? 5 : 30); i++) {
      await sleep(Math.random() * 200); // isolated: at any phase of the push loops
      const id = `i${i}`;
      const t0 = performance.now();
      await unbatched.publishMessage({ data: Buffer.from(id) });
      await waitFor(() => pushedAt.has(id), {
        timeoutMs: 60_000,
        intervalMs: 5,
        message: 'an isolated message pushed',
      });
      waits.push((pushedAt.get(id) as number) - t0);
    }
    figures.push(
      {
        section: 'breakdown',
        name: `Pub/Sub emulator push subscription: pushes in flight at once while ${backlog} messages wait (endpoint answering in ${answerMs} ms)`,
        value: maxInFlight,
        unit: 'pushes',
        baseline: {
          name: "the function's request slots (one Cloud Run instance's concurrency)",
          value: FUNCTION_CONCURRENCY,
        },
      },
      {
        section: 'breakdown',
        name: `Pub/Sub emulator push subscription: backlog pushed per second (endpoint answering in ${answerMs} ms)`,
        value: backlogPerSecond,
        unit: 'msgs/s',
        baseline: {
          name: `${FUNCTION_CONCURRENCY} slots busy for ${answerMs} ms each`,
          value: (FUNCTION_CONCURRENCY * 1000) / answerMs,
        },
      },
      {
        section: 'breakdown',
        name: `Pub/Sub emulator push subscription: isolated message, publish accepted → pushed, median (n=${waits.length})`,
        value: quantiles(waits).p50,
        unit: 'ms',
        baseline: {
          name: 'a push straight to the server (the HTTP hop alone)',
          value: quantiles(hops.direct).p50,
        },
      },
    );
  } finally {
    await subscription.delete().catch(() => {});
    await topic.delete().catch(() => {});
    await new Promise((resolve) => slow.close(resolve));
  }

  // Foo: each reconcile's trigger.
  const triggers = new Map<string, number>();
  let reconciles = 0;
  for (const r of spans) {
    if (r.name !== SPAN.reconcile || r.attributes[ATTR.controller] !== 'foo') continue;
    if (!String(r.attributes[ATTR.key] ?? '').startsWith(`${ns}/`)) continue;
    reconciles++;
    const trace = byTrace.get(r.traceId) ?? [];
    const enqueue = trace.find((s) => s.name === SPAN.enqueue);
    const publish = trace.find((s) => s.name.endsWith(' create') && s.service === enqueue?.service);
    let label = `no enqueue span (${r.attributes[ATTR.reason] ?? 'unknown reason'})`;
    if (enqueue) {
      const a = enqueue.attributes;
      // The relay's own word (levelset.collapse.edge); without it, a key that waited was trailing.
      const waited = publish && publish.startMs - enqueue.startMs > sizes.collapseMs / 2;
      const edge = `${a[ATTR.edge] ?? (waited ? 'trailing' : 'leading')} edge`;
      const collapsed = Number(a[ATTR.collapsed] ?? 0);
      label =
        a[ATTR.cause] === 'watch'
          ? `${a[ATTR.eventType]} ${a[ATTR.resource]}, ${edge}${collapsed ? ' (+ collapsed events)' : ''}`
          : `${a[ATTR.cause]}`;
    }
    triggers.set(label, (triggers.get(label) ?? 0) + 1);
  }
  for (const [label, count] of [...triggers].sort((a, b) => b[1] - a[1]))
    figures.push({
      section: 'breakdown',
      name: `Foo reconciles triggered by ${label}, per Foo (${fooCount} Foos created at once)`,
      value: count / fooCount,
      unit: 'reconciles',
      baseline: { name: 'every Foo reconcile, per Foo', value: reconciles / fooCount },
    });
}
