/**
 * `levelset resync`: enumerate every key and publish it now, with progress and a summary per
 * controller. Implementation: cli/impl/resync.ts.
 */
import type { CommandModule } from 'yargs';
import type { ResyncArgs } from '../impl/resync.ts';
import { clusterOption, targetOptions } from './options.ts';

export const resyncCommand: CommandModule<object, ResyncArgs> = {
  command: 'resync',
  describe: 'enumerate every key (LIST) and publish it now, with progress and a summary per controller',
  builder: (y) =>
    clusterOption(
      targetOptions(y),
      "only this cluster's keys (default: every cluster of the local stack; on Google Cloud the cluster of KUBECONFIG, as default)",
    )
      .option('controller', { type: 'string', describe: 'only this controller' })
      .option('dry-run', {
        type: 'boolean',
        default: false,
        describe: 'enumerate and count, publish nothing',
      }),
  handler: async (argv) => (await import('../impl/resync.ts')).runResync(argv),
};
