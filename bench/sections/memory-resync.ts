/**
 * Section `memory/resync`: informer RSS (metadata-only vs full object) at two sizes, then a resync of
 * every key at each size. Its informer figures are in the `relay` table, its resync's in `resync`.
 */
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundle } from '../../cli/build/bundle.ts';
import { packageRelay, RELAY_EXTERNAL } from '../../cli/build/package-relay.ts';
import { ALLOCATOR_ENV, repoRoot } from '../../local/service.ts';
import { FUNCTION_NODE_OPTIONS, RELAY_NODE_OPTIONS } from '../../local/stack-services.ts';
import { type ApiServer, type Emulator, FULL_SIZES, type Section, type SectionEnv } from '../environment.ts';
import { comparing, type Figure } from '../report.ts';
import { jsonChild, pool } from '../support.ts';

/** From how many watched objects an informer's RSS growth is reported (below, it is noise). */
const RSS_GROWTH_MIN_OBJECTS = 10_000;
const MiB = 2 ** 20;

/** What an informer child prints (bench/informer-child.ts): bytes. */
interface InformerRss {
  rss: number;
  baseline: number;
  heapUsed: number;
  baselineHeapUsed: number;
}

/** What the resync child prints (bench/child.ts `resync`): keys published, ms, bytes. */
interface ResyncRun {
  published: number;
  durationMs: number;
  peakRss: number;
  error?: string;
}

export const memoryAndResync: Section = {
  name: 'memory/resync',
  async run(env) {
    const api = await env.apiServer();
    const bus = await env.emulator();
    const ns = 'bench-objects';
    await api.createNs(ns);
    const relayBundle = await bundleInformerChildren();
    const figures: Figure[] = [];
    const notes: string[] = [];
    const resync: ResyncRun[] = [];
    try {
      let made = 0;
      for (const n of [env.sizes.rssSmall, env.sizes.rssLarge]) {
        env.log(`creating ConfigMaps up to ${n}`);
        await pool(
          Array.from({ length: n - made }, (_, i) => `cm-${made + i}`),
          16,
          (name) =>
            api.core.createNamespacedConfigMap({
              namespace: ns,
              body: { metadata: { name, labels: { app: 'bench' } }, data: { v: 'x'.repeat(256) } },
            }),
        );
        made = n;
        env.log(`informer RSS at ${n}`);
        figures.push(...(await informerFigures(env, api, relayBundle, ns, n, notes)));
        env.log(`resync of ${n} keys`);
        const r = await resyncChild(api, bus, `bench-resync-${n}`);
        resync.push(r);
        if (r.error) notes.push(`resync of ${n} keys reported an error: ${r.error}`);
      }
    } finally {
      rmSync(relayBundle, { recursive: true, force: true });
    }
    figures.push(...resyncFigures(resync[0] as ResyncRun, resync[1] as ResyncRun));
    return { figures, notes };
  },
};

/**
 * The informer children, run as the relay is deployed: bundled with the relay's esbuild
 * configuration (cli/build/package-relay.ts, relay/Dockerfile), beside relay/main.ts so that they load
 * the relay's own chunks. The full-object baseline is bundled alike in a build of its own
 * (bench/informer-child.ts: in the relay's build, client-node's whole API it imports would land in
 * the relay's chunks). Returns the bundle's directory.
 */
async function bundleInformerChildren(): Promise<string> {
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
  return relayBundle;
}

/** An informer child started as the relay's image starts the relay (ALLOCATOR_ENV, the deployed V8 flags). */
function informerChild(script: string, argv: string[]): Promise<InformerRss> {
  return jsonChild(['--expose-gc', ...RELAY_NODE_OPTIONS, script, ...argv], ALLOCATOR_ENV);
}

/** The informer RSS figures at `n` watched ConfigMaps. */
async function informerFigures(
  env: SectionEnv,
  api: ApiServer,
  relayBundle: string,
  ns: string,
  n: number,
  notes: string[],
): Promise<Figure[]> {
  // Both informers run with the relay's deployed V8 flags (heap limit, young generation;
  // terraform/kubernetes.tf), so that the RSS is the one the relay's memory limit meets.
  const informerArgs = ['--kubeconfig', api.kubeconfigPath, '--namespace', ns, '--expect', `${n}`];
  const meta = await informerChild(join(relayBundle, 'bench-informer.mjs'), informerArgs);
  const full = await informerChild(join(relayBundle, 'full', 'bench-full-informer.mjs'), informerArgs);
  const flags = RELAY_NODE_OPTIONS.join(' ');
  const vsFull = comparing('relay', meta, full, 'full-object informer');
  const informer = `${n} watched ConfigMaps, metadata-only informer`;
  const figures = [
    vsFull(
      `RSS with ${informer} (process; ${flags}, as deployed)`,
      'MiB',
      (r) => r.rss / MiB,
      // Issue 21's targets at 100k: the process within 150 MiB, its growth within 1/5 of the full-object informer's.
      n === FULL_SIZES.rssLarge ? { text: '≤ 150 MiB', met: meta.rss / MiB <= 150 } : undefined,
    ),
  ];
  if (n === env.sizes.rssSmall) {
    // Before the relay was bundled: the same child from the TypeScript sources (type stripping
    // stands in for tsc's JavaScript, which the image ran; both load every module file).
    const sources = await informerChild(join(repoRoot, 'bench', 'metadata-informer-child.ts'), informerArgs);
    const vsSources = comparing('relay', meta, sources, 'the same from the TypeScript sources');
    figures.push(
      vsSources(
        `idle relay process RSS, bundled (its modules loaded, publisher created, before its informers start; ${flags})`,
        'MiB',
        (r) => r.baseline / MiB,
      ),
      vsSources(`RSS with ${informer} (process), bundled`, 'MiB', (r) => r.rss / MiB),
    );
  }
  // The caches' own growth means something only when it dwarfs the noise of a process's RSS
  // (allocator and GC timing, a few MiB): thousands of objects, not a tiny run's hundreds.
  const growth = (r: InformerRss) => r.rss - r.baseline;
  if (n >= RSS_GROWTH_MIN_OBJECTS)
    figures.push(
      vsFull(
        `RSS with ${informer} (growth over the idle process)`,
        'MiB',
        (r) => growth(r) / MiB,
        n === FULL_SIZES.rssLarge
          ? { text: 'ratio ≤ 0.2', met: growth(meta) <= 0.2 * growth(full) }
          : undefined,
      ),
      vsFull(
        `bytes per watched ConfigMap at ${n}, metadata-only informer (RSS growth / objects)`,
        'bytes',
        (r) => growth(r) / n,
      ),
      vsFull(
        `bytes per watched ConfigMap at ${n}, metadata-only informer (V8 heap used after GC / objects)`,
        'bytes',
        (r) => (r.heapUsed - r.baselineHeapUsed) / n,
      ),
    );
  else if (n === env.sizes.rssSmall)
    notes.push(
      `informer RSS growth over the idle process is reported from ${RSS_GROWTH_MIN_OBJECTS} watched objects up (the full run: ${FULL_SIZES.rssSmall} and ${FULL_SIZES.rssLarge}); with ${env.sizes.rssSmall} and ${env.sizes.rssLarge} the caches are smaller than the noise of the process's RSS`,
    );
  return figures;
}

/** The resync function's resyncAll in a child, with the heap limit Terraform gives it on a 512 MiB instance (functions.tf). */
async function resyncChild(api: ApiServer, bus: Emulator, topic: string): Promise<ResyncRun> {
  await bus.pubsub.createTopic(topic);
  const child = join(repoRoot, 'bench', 'child.ts');
  const args = ['--expose-gc', ...FUNCTION_NODE_OPTIONS, child, 'resync', '--kubeconfig', api.kubeconfigPath];
  return jsonChild([...args, '--topic', topic], bus.childEnv);
}

function resyncFigures(small: ResyncRun, large: ResyncRun): Figure[] {
  const figure = comparing('resync', large, small, `${small.published} keys`);
  const what = `enumerate and publish ${large.published} keys`;
  return [
    // Issue 21's targets: 100k keys in ≤ 15 s (the full run's), peak ≤ 256 MiB (half the default 512 MiB instance).
    figure(
      `${what}, time`,
      's',
      (r) => r.durationMs / 1000,
      large.published >= FULL_SIZES.rssLarge
        ? { text: '≤ 15 s', met: large.durationMs <= 15_000 }
        : undefined,
    ),
    figure(`${what}, keys/s`, 'keys/s', (r) => r.published / (r.durationMs / 1000)),
    figure(
      `${what}, peak RSS (V8 flags as deployed: ${FUNCTION_NODE_OPTIONS.join(' ')})`,
      'MiB',
      (r) => r.peakRss / MiB,
      { text: '≤ 256 MiB', met: large.peakRss <= 256 * MiB },
    ),
  ];
}
