/**
 * `levelset resync`: enumerate every key and publish it now, with progress and a summary per
 * controller. Implementation: cli/impl/resync.ts.
 */
import type { CommandModule } from 'yargs';
import type { ResyncArgs } from '../impl/resync.ts';
import { targetOptions } from './options.ts';

export const resyncCommand: CommandModule<object, ResyncArgs> = {
  command: 'resync',
  describe: 'enumerate every key (LIST) and publish it now, with progress and a summary per controller',
  builder: (y) =>
    targetOptions(y)
      .option('controller', { type: 'string', describe: 'only this controller' })
      .option('dry-run', {
        type: 'boolean',
        default: false,
        describe: 'enumerate and count, publish nothing',
      }),
  handler: async (argv) => (await import('../impl/resync.ts')).runResync(argv),
};
