/**
 * `levelset dead-letters list|replay`. Implementation: cli/impl/dead-letters.ts.
 */
import type { CommandModule } from 'yargs';
import type { ListArgs, ReplayArgs } from '../impl/dead-letters.ts';
import { clusterOption, targetOptions } from './options.ts';

const listCommand: CommandModule<object, ListArgs> = {
  command: 'list',
  describe: 'show the dead-lettered keys (pulls without acknowledging: they stay)',
  builder: (y) =>
    clusterOption(targetOptions(y), "only this cluster's keys (the others stay)")
      .option('limit', { type: 'number', default: 100, describe: 'show at most this many' })
      .option('output', { alias: 'o', choices: ['table', 'json'], default: 'table' }),
  handler: async (argv) => (await import('../impl/dead-letters.ts')).runDeadLettersList(argv),
};

const replayCommand: CommandModule<object, ReplayArgs> = {
  command: 'replay',
  describe: 'republish each dead-lettered key to the keys topic, acknowledging it only once published',
  builder: (y) =>
    clusterOption(targetOptions(y), "only this cluster's keys (the others stay)")
      .option('limit', { type: 'number', default: 1000, describe: 'replay at most this many' })
      .option('dry-run', {
        type: 'boolean',
        default: false,
        describe: 'show what would be replayed, change nothing',
      }),
  handler: async (argv) => (await import('../impl/dead-letters.ts')).runDeadLettersReplay(argv),
};

export const deadLettersCommand: CommandModule = {
  command: 'dead-letters',
  describe: 'list or replay the keys Pub/Sub dead-lettered',
  builder: (y) =>
    y.command(listCommand).command(replayCommand).demandCommand(1, 'name a subcommand: list or replay'),
  handler: () => {},
};
