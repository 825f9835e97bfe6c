/**
 * The benchmark's informer-RSS child (bench/run.ts, relay memory), run as the relay is deployed:
 * bundled beside relay/main.ts by scripts/package-relay.ts (the relay image's esbuild
 * configuration, so it loads the relay's own chunks) and started with the relay's V8 flags
 * (local/stack.ts RELAY_NODE_OPTIONS), as relay/Dockerfile runs it.
 * Prints one JSON line on stdout: `{ objects, rss, baseline, heapUsed, baselineHeapUsed, syncMs }`
 * (bytes, ms).
 *
 *   node --expose-gc RELAY_NODE_OPTIONS bench-informer.mjs
 *     --informer metadata|full --kubeconfig F --namespace NS --expect N
 *
 * Both variants first load what the relay process loads at start (relay/main.ts: its logger, the
 * kubeconfig, tracing (off), the key publisher, `startRelay`), so that `baseline` is the idle
 * relay's RSS; then `metadata` lists and watches the ConfigMaps with the relay's MetadataInformer,
 * `full` with client-node's `makeInformer` (whole objects, the classic controller's cache), and
 * `rss` and `heapUsed` are taken once the cache holds `--expect` objects, each after two full GCs.
 */
import { parseArgs } from 'node:util';
import { loadKubeConfig } from '../functions/kube.ts';
import { createLogger } from '../functions/log.ts';
import { createKeyPublisher } from '../functions/publish.ts';
import { startTracing } from '../functions/tracing.ts';
import { startRelay } from '../relay/relay.ts';

const { values } = parseArgs({
  options: {
    informer: { type: 'string' },
    kubeconfig: { type: 'string' },
    namespace: { type: 'string' },
    expect: { type: 'string' },
  },
});
const gc = (globalThis as { gc?: () => void }).gc;
const rssAfterGc = () => {
  gc?.();
  gc?.();
  return process.memoryUsage().rss;
};
/** V8 heap in use after a full GC, bytes (the caches' own size, without the process's other memory). */
const heapUsedAfterGc = () => {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
};

// The relay process at start (relay/main.ts), short of starting its informers: the same modules
// loaded, the same clients constructed (the publisher connects at its first publish only).
const logger = createLogger('relay', { write: () => {} });
const tracing = await startTracing('relay', { exporter: 'off' });
const kc = loadKubeConfig(values.kubeconfig);
const publisher = createKeyPublisher({ projectId: 'bench', topic: 'bench-informer', logger });
// Kept reachable so that the bundle keeps the relay's code, as relay.mjs loads it.
(globalThis as { levelsetStartRelay?: unknown }).levelsetStartRelay = startRelay;

const ns = values.namespace as string;
const expect = Number(values.expect);
const baselineHeapUsed = heapUsedAfterGc();
const baseline = rssAfterGc();
const started = performance.now();
let size: () => number;
let stop: () => Promise<void>;
if (values.informer === 'metadata') {
  const [{ MetadataInformer }, { configmaps }] = await Promise.all([
    import('../relay/informer.ts'),
    import('../functions/kit/resources.ts'),
  ]);
  const informer = new MetadataInformer({
    kubeConfig: kc,
    resource: configmaps,
    namespace: ns,
    logger,
    onEvent: () => {},
  });
  informer.start();
  await informer.whenSynced();
  size = () => informer.size;
  stop = () => informer.stop();
} else {
  const { CoreV1Api, makeInformer } = await import('@kubernetes/client-node');
  const core = kc.makeApiClient(CoreV1Api);
  const informer = makeInformer(kc, `/api/v1/namespaces/${ns}/configmaps`, () =>
    core.listNamespacedConfigMap({ namespace: ns }),
  );
  await informer.start();
  size = () => informer.list().length;
  stop = () => informer.stop();
}
while (size() < expect) await new Promise((r) => setTimeout(r, 20));
const heapUsed = heapUsedAfterGc();
const rss = rssAfterGc();
console.log(
  JSON.stringify({
    objects: size(),
    rss,
    baseline,
    heapUsed,
    baselineHeapUsed,
    syncMs: performance.now() - started,
  }),
);
await stop();
await publisher.close();
await tracing.shutdown();
process.exit(0);
