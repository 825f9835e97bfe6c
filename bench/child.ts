/**
 * The benchmark's child processes, so that their memory is measured alone; each prints one JSON
 * line on stdout. `reconcile` is the cost section's function process: it loads what the deployed
 * `reconcile` function loads and runs `reconcileKey` K times on a converged object, then K times
 * with the object changed before each (outside the measured time). `resync` runs the resync.
 *
 *   node bench/child.ts resync --kubeconfig F --topic T   (PUBSUB_EMULATOR_HOST set)
 *   node --max-old-space-size=256 bench/child.ts reconcile --kubeconfig F --controller C --namespace NS
 *     --name N --count K --object '{"apiVersion","kind","metadata"}' --patches '[{…},{…}]'
 */
import { parseArgs } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Controller } from '../core/contract/controller.ts';
import { createLogger } from '../core/log.ts';
import { PooledKubeConfig } from '../core/pooled-kubeconfig.ts';
import { configmaps } from '../functions/kit/resources.ts';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    kubeconfig: { type: 'string' },
    namespace: { type: 'string' },
    topic: { type: 'string' },
    controller: { type: 'string' },
    name: { type: 'string' },
    count: { type: 'string' },
    object: { type: 'string' },
    patches: { type: 'string' },
  },
});
const kc = new PooledKubeConfig(); // as every Levelset process loads it (core/kube.ts)
kc.loadFromFile(values.kubeconfig as string);
const ns = values.namespace as string;
const logger = createLogger('bench', { write: () => {} });

if (positionals[0] === 'resync') {
  // Imported here: the informer runs must not pay for the Pub/Sub client in their memory.
  const { createKeyPublisher } = await import('../core/publish.ts');
  const { RESYNC_PUBLISHING, resyncAll } = await import('../functions/runtime/resync.ts');
  const controller: Controller = {
    name: 'bench-resync',
    primary: configmaps,
    watches: [],
    rbac: [],
    reconcile: async () => undefined,
  };
  const publisher = createKeyPublisher({
    projectId: 'local-project',
    topic: values.topic as string,
    logger,
    ...RESYNC_PUBLISHING,
  });
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
if (positionals[0] === 'reconcile') {
  // What the deployed function loads (the framework, every controller), so that the RSS is its.
  await import('../functions/runtime/index.ts');
  const { controllers } = await import('../examples/registry.ts');
  const { reconcileKey } = await import('../functions/runtime/reconcile.ts');
  const { KubernetesObjectApi, PatchStrategy } = await import('@kubernetes/client-node');
  const byName = new Map(controllers.map((c) => [c.name, c]));
  // The reconciles log as the function does (serialized, then dropped); the first failure is kept.
  let firstFailure: string | undefined;
  const reconcileLog = createLogger('functions', {
    write: (line: string) => {
      if (!firstFailure && /"outcome":"(terminal|transient|error|malformed)"/.test(line)) firstFailure = line;
    },
  });
  const controller = values.controller as string;
  const key = { namespace: ns, name: values.name as string };
  const count = Number(values.count);
  const outcomes: Record<string, number> = {};
  const run = async () => {
    const { outcome } = await reconcileKey(byName, controller, key, {
      kubeConfig: () => kc,
      log: reconcileLog,
      retriedBy: 'bench',
    });
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  };
  await run();
  await run(); // converged
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const header = JSON.parse(values.object as string) as KubernetesObject;
  const patches = JSON.parse(values.patches as string) as object[];
  const measure = async (change: boolean) => {
    let cpu = 0;
    let wall = 0;
    for (let i = 0; i < count; i++) {
      if (change)
        await objects.patch(
          { ...header, ...(patches[i % patches.length] as object) },
          undefined,
          undefined,
          undefined,
          undefined,
          PatchStrategy.MergePatch,
        );
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await run();
      wall += performance.now() - t0;
      const c = process.cpuUsage(c0);
      cpu += (c.user + c.system) / 1e6;
    }
    return { cpuSeconds: cpu / count, wallSeconds: wall / 1000 / count };
  };
  const converged = await measure(false);
  const changing = await measure(true);
  console.log(
    JSON.stringify({
      converged,
      changing,
      outcomes,
      firstFailure,
      rss: process.memoryUsage().rss,
      peakRss: process.resourceUsage().maxRSS * 1024,
    }),
  );
  process.exit(0);
}
throw new Error(`unknown child command ${positionals[0]}`);
