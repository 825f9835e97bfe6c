/**
 * `levelset status`: relay health, backlog, dead letters; `--watch`: the local stack's dashboard.
 * Implementation: cli/impl/status.ts and cli/impl/watch.ts.
 */
import type { CommandModule } from 'yargs';
import type { StatusArgs } from '../impl/status.ts';
import { clusterOption, targetOptions } from './options.ts';

export const statusCommand: CommandModule<object, StatusArgs> = {
  command: 'status',
  describe:
    'relay health, subscription backlog and oldest unacked age, dead-letter count (exit 1 if unhealthy)',
  builder: (y) =>
    clusterOption(
      targetOptions(y),
      "whose relay to check in a multi-cluster local stack (default: the first cluster's)",
    )
      .option('relay-url', {
        type: 'string',
        describe:
          "the relay's health port (default: the local stack's relay; on GKE: kubectl -n levelset-system port-forward deploy/levelset-relay 8080, then http://127.0.0.1:8080)",
      })
      .option('output', { alias: 'o', choices: ['text', 'json'], default: 'text' })
      .option('watch', {
        alias: 'w',
        type: 'boolean',
        describe:
          "the local stack's dashboard, refreshed in place: reconciles/s by outcome, p50/p95 duration, backlog, dead letters, drift, per controller (-o json: one object per refresh)",
      })
      .option('interval', {
        type: 'number',
        default: 2,
        describe: 'seconds between refreshes (--watch)',
      })
      .option('window', {
        type: 'number',
        default: 60,
        describe: 'seconds the rates and durations cover (--watch)',
      })
      .check((a) => {
        if (!(a.interval > 0) || !(a.window > 0))
          throw new Error('--interval and --window must be positive seconds');
        return true;
      }),
  handler: async (argv) => (await import('../impl/status.ts')).runStatus(argv),
};
