/**
 * The benchmark's child processes, so that their memory is measured alone (bench/run.ts spawns them
 * with --expose-gc). Prints one JSON line on stdout.
 *
 *   node --expose-gc bench/child.ts informer --informer metadata|full --kubeconfig F --namespace NS --expect N
 *   node bench/child.ts resync --kubeconfig F --namespace NS --topic T   (PUBSUB_EMULATOR_HOST set)
 */
import { parseArgs } from 'node:util';
import { CoreV1Api, type KubernetesObject, makeInformer } from '@kubernetes/client-node';
import type { Controller } from '../functions/contract/controller.ts';
import { configmaps } from '../functions/kit/resources.ts';
import { createLogger } from '../functions/log.ts';
import { PooledKubeConfig } from '../functions/pooled-kubeconfig.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    informer: { type: 'string' },
    kubeconfig: { type: 'string' },
    namespace: { type: 'string' },
    expect: { type: 'string' },
    topic: { type: 'string' },
  },
});
const kc = new PooledKubeConfig(); // as every Levelset process loads it (functions/kube.ts)
kc.loadFromFile(values.kubeconfig as string);
const ns = values.namespace as string;
const logger = createLogger('bench', { write: () => {} });
const gc = (globalThis as { gc?: () => void }).gc;
const rssAfterGc = () => {
  gc?.();
  gc?.();
  return process.memoryUsage().rss;
};

if (positionals[0] === 'informer') {
  const expect = Number(values.expect);
  const baseline = rssAfterGc();
  const started = performance.now();
  if (values.informer === 'metadata') {
    const { MetadataInformer } = await import('../relay/informer.ts');
    const informer = new MetadataInformer({
      kubeConfig: kc,
      resource: configmaps,
      namespace: ns,
      logger,
      onEvent: () => {},
    });
    informer.start();
    await informer.whenSynced();
    while (informer.list().length < expect) await new Promise((r) => setTimeout(r, 20));
    const rss = rssAfterGc();
    console.log(
      JSON.stringify({ objects: informer.list().length, rss, baseline, syncMs: performance.now() - started }),
    );
    await informer.stop();
  } else {
    const core = kc.makeApiClient(CoreV1Api);
    const informer = makeInformer<KubernetesObject>(kc, `/api/v1/namespaces/${ns}/configmaps`, () =>
      core.listNamespacedConfigMap({ namespace: ns }),
    );
    await informer.start();
    while (informer.list().length < expect) await new Promise((r) => setTimeout(r, 20));
    const rss = rssAfterGc();
    console.log(
      JSON.stringify({ objects: informer.list().length, rss, baseline, syncMs: performance.now() - started }),
    );
    await informer.stop();
  }
  process.exit(0);
}

if (positionals[0] === 'resync') {
  // Imported here: the informer runs must not pay for the Pub/Sub client in their memory.
  const { createKeyPublisher } = await import('../functions/publish.ts');
  const { resyncAll } = await import('../functions/resync.ts');
  const controller: Controller = {
    name: 'bench-resync',
    primary: configmaps,
    watches: [],
    rbac: [],
    reconcile: async () => undefined,
  };
  const publisher = createKeyPublisher({ projectId: 'local-project', topic: values.topic as string, logger });
  const started = performance.now();
  const report = await resyncAll([controller], kc, publisher, logger);
  const durationMs = performance.now() - started;
  await publisher.close();
  // maxRSS is in KiB (getrusage).
  console.log(
    JSON.stringify({
      published: report.published,
      durationMs,
      peakRss: process.resourceUsage().maxRSS * 1024,
      error: report.controllers['bench-resync']?.error,
    }),
  );
  process.exit(0);
}
throw new Error(`unknown child command ${positionals[0]}`);
