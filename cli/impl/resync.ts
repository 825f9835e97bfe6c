/**
 * `levelset resync`: enumerates every key of every controller (or one) and publishes it
 * (`reason: "resync"`), as the `resync` function does for Cloud Scheduler, with progress on a
 * terminal (cli-progress) and plain lines in a pipe, then a summary per controller.
 */

import type { KubeConfig } from '@kubernetes/client-node';
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import { resyncTopicOf } from '../../core/config.ts';
import { DEFAULT_CLUSTER } from '../../core/contract/key.ts';
import { createLogger } from '../../core/log.ts';
import { loadRegistry } from '../../core/project.ts';
import { RESYNC_PUBLISHING, type ResyncReport, resyncAll } from '../../functions/runtime/resync.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { say, table } from '../output.ts';
import { clusterError, resolveTarget, type Target, targetKubeConfig, targetPublisher } from '../target.ts';
import { requireController } from './reconcile.ts';

export interface ResyncArgs {
  controller?: string;
  /** Only this cluster; default every cluster of the local stack, else `default`. */
  cluster?: string;
  'dry-run': boolean;
  project?: string;
  topic?: string;
}

/** Progress per controller: bars on a terminal, a line per 1 000 keys otherwise. */
function progress(names: string[], dryRun: boolean) {
  const verb = dryRun ? 'found' : 'published';
  if (!process.stderr.isTTY) {
    return {
      update: (name: string, n: number) => {
        if (n % 1000 === 0) process.stderr.write(`resync ${name}: ${n} keys ${verb}\n`);
      },
      stop: () => {},
    };
  }
  const multi = new MultiBar(
    {
      format: ` {name} | {value} keys ${verb} | {duration_formatted}`,
      hideCursor: true,
      clearOnComplete: false,
      stream: process.stderr,
    },
    Presets.shades_classic,
  );
  const width = Math.max(...names.map((n) => n.length));
  const bars = new Map<string, SingleBar>(
    names.map((n) => [n, multi.create(0, 0, { name: n.padEnd(width) })]),
  );
  return {
    update: (name: string, n: number) => bars.get(name)?.update(n),
    stop: () => multi.stop(),
  };
}

/**
 * The clusters to resync and each one's kubeconfig: a multi-cluster local stack's (every one, or
 * `--cluster`'s), else the target's kubeconfig as `--cluster` (default `default`).
 * @throws {CliError} (exit 2) for a cluster the local stack does not serve.
 */
function clustersOf(target: Target, cluster: string | undefined): { id: string; kubeConfig: KubeConfig }[] {
  const served = target.stack?.clusters;
  if (!served) return [{ id: cluster ?? DEFAULT_CLUSTER, kubeConfig: targetKubeConfig(target) }];
  if (cluster !== undefined && !served[cluster])
    throw new CliError(
      `unknown cluster "${cluster}": the local stack serves ${Object.keys(served).join(', ')}`,
      EXIT_USAGE,
    );
  return Object.entries(served)
    .filter(([id]) => cluster === undefined || id === cluster)
    .map(([id, c]) => ({
      id,
      kubeConfig: targetKubeConfig({ ...target, kubeconfigPath: c.kubeconfigPath }),
    }));
}

/** Runs `levelset resync`. @throws {CliError} when the cluster is unreachable or a controller failed. */
export async function runResync(argv: ResyncArgs): Promise<void> {
  const { controllers } = await loadRegistry();
  const selected = argv.controller ? [requireController(argv.controller, controllers)] : [...controllers];
  const target = await resolveTarget(argv);
  const clusters = clustersOf(target, argv.cluster);
  // The resync's own topic, as the resync function publishes (core/config.ts, resyncTopicOf).
  const publisher = targetPublisher({ ...target, topic: resyncTopicOf(target.topic) }, RESYNC_PUBLISHING);
  const logger = createLogger('cli');
  logger.level = 'silent';
  const label = (cluster: string, name: string) => (clusters.length > 1 ? `${cluster}/${name}` : name);
  const bars = progress(
    clusters.flatMap((c) => selected.map((s) => label(c.id, s.name))),
    argv['dry-run'],
  );
  const report: ResyncReport = { cluster: '', controllers: {}, published: 0, durationMs: 0 };
  const kubeConfig = clusters[0]?.kubeConfig as KubeConfig;
  try {
    for (const c of clusters) {
      const one = await resyncAll(selected, c.kubeConfig, publisher, logger, {
        cluster: c.id,
        dryRun: argv['dry-run'],
        onKey: (name, n) => bars.update(label(c.id, name), n),
      });
      for (const [name, entry] of Object.entries(one.controllers))
        report.controllers[label(c.id, name)] = entry;
      report.published += one.published;
      report.durationMs += one.durationMs;
    }
    report.cluster = clusters.map((c) => c.id).join(',');
  } finally {
    bars.stop();
    await publisher.close().catch(() => {});
  }
  const entries = Object.entries(report.controllers);
  // Every controller failing on a connection error: the cluster is unreachable.
  const errors = entries.map(([, c]) => c.error).filter((e): e is string => e !== undefined);
  if (errors.length === entries.length && errors.length > 0) {
    try {
      clusterError(kubeConfig, new Error(errors[0]));
    } catch (err) {
      if (err instanceof CliError) throw err;
    }
  }
  const verb = argv['dry-run'] ? 'would publish' : 'published';
  say(
    table(
      ['controller', verb, 'note'],
      entries.map(([name, c]) => [name, c.published, c.error ? `failed: ${c.error}` : (c.skipped ?? '')]),
    ),
  );
  say(`${verb} ${report.published} keys to ${target.describe} in ${report.durationMs} ms`);
  if (errors.length)
    throw new CliError(
      `resync failed for ${entries
        .filter(([, c]) => c.error)
        .map(([n]) => n)
        .join(', ')}: ${errors[0]}`,
    );
}
