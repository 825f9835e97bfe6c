/**
 * What the benchmark's informer-RSS children share (bench/metadata-informer-child.ts, and
 * bench/full-informer-child.ts the baseline; bench/sections/memory-resync.ts bundles and runs them
 * as the relay is deployed). Each prints one JSON line on stdout:
 * `{ objects, rss, baseline, heapUsed, baselineHeapUsed, syncMs }` (bytes, ms).
 *
 *   node --expose-gc RELAY_NODE_OPTIONS bench-informer.mjs|bench-full-informer.mjs
 *     --kubeconfig F --namespace NS --expect N
 */
import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../core/kube.ts';
import { createLogger, type Logger } from '../core/log.ts';
import { createKeyPublisher } from '../core/publish.ts';
import { startTracing } from '../core/tracing.ts';
import { startRelay } from '../relay/relay.ts';

/** An informer a child measures: how many objects its cache holds, and how to stop it. */
export interface MeasuredInformer {
  size(): number;
  stop(): Promise<void>;
}

/**
 * Runs the child: the relay's start (short of its informers), then `start`'s informer on
 * `--namespace` until it holds `--expect` objects; prints the JSON line and exits 0.
 */
export async function measureInformer(
  start: (kubeConfig: KubeConfig, namespace: string, logger: Logger) => Promise<MeasuredInformer>,
): Promise<void> {
  const { values } = parseArgs({
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      expect: { type: 'string' },
    },
  });
  const gc = (globalThis as { gc?: () => void }).gc;
  /** The RSS, and the V8 heap in use (the caches' own size), after two full GCs; bytes. */
  const memoryAfterGc = () => {
    gc?.();
    gc?.();
    return process.memoryUsage();
  };

  // The relay process at start (relay/main.ts), short of starting its informers: the same modules
  // loaded, the same clients constructed (the publisher connects at its first publish only).
  const logger = createLogger('relay', { write: () => {} });
  const tracing = await startTracing('relay', { exporter: 'off' });
  const kc = loadKubeConfig(values.kubeconfig);
  const publisher = createKeyPublisher({ projectId: 'bench', topic: 'bench-informer', logger });
  // Kept reachable so that the bundle keeps the relay's code, as relay.mjs loads it.
  (globalThis as { levelsetStartRelay?: unknown }).levelsetStartRelay = startRelay;

  const expect = Number(values.expect);
  const { heapUsed: baselineHeapUsed, rss: baseline } = memoryAfterGc();
  const started = performance.now();
  const informer = await start(kc, values.namespace as string, logger);
  while (informer.size() < expect) await new Promise((r) => setTimeout(r, 20));
  const { heapUsed, rss } = memoryAfterGc();
  console.log(
    JSON.stringify({
      objects: informer.size(),
      rss,
      baseline,
      heapUsed,
      baselineHeapUsed,
      syncMs: performance.now() - started,
    }),
  );
  await informer.stop();
  await publisher.close();
  await tracing.shutdown();
  process.exit(0);
}
