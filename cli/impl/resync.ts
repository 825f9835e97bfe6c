/**
 * `levelset resync`: enumerates every key of every controller (or one) and publishes it
 * (`reason: "resync"`), as the `resync` function does for Cloud Scheduler, with progress on a
 * terminal (cli-progress) and plain lines in a pipe, then a summary per controller.
 */
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import { resyncTopicOf } from '../../functions/config.ts';
import { controllers } from '../../functions/controllers/index.ts';
import { createLogger } from '../../functions/log.ts';
import { type ResyncReport, resyncAll } from '../../functions/resync.ts';
import { CliError } from '../errors.ts';
import { say, table } from '../output.ts';
import { clusterError, resolveTarget, targetKubeConfig, targetPublisher } from '../target.ts';
import { requireController } from './reconcile.ts';

export interface ResyncArgs {
  controller?: string;
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

/** Runs `levelset resync`. @throws {CliError} when the cluster is unreachable or a controller failed. */
export async function runResync(argv: ResyncArgs): Promise<void> {
  const selected = argv.controller ? [requireController(argv.controller)] : [...controllers];
  const target = await resolveTarget(argv);
  const kubeConfig = targetKubeConfig(target);
  // The resync's own topic, as the resync function publishes (functions/config.ts, resyncTopicOf).
  const publisher = targetPublisher({ ...target, topic: resyncTopicOf(target.topic) });
  const logger = createLogger('cli');
  logger.level = 'silent';
  const bars = progress(
    selected.map((c) => c.name),
    argv['dry-run'],
  );
  let report: ResyncReport;
  try {
    report = await resyncAll(selected, kubeConfig, publisher, logger, {
      dryRun: argv['dry-run'],
      onKey: (name, n) => bars.update(name, n),
    });
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
