/**
 * `levelset finalizers release <controller> <key>`: removes a controller's finalizer from a primary
 * stuck in deletion (its `finalize` keeps failing), on purpose: after a confirmation, with a WARNING
 * log line naming what was released. Implementation: cli/impl/finalizers.ts (loaded on use).
 */
import type { CommandModule } from 'yargs';
import type { ReleaseArgs } from '../impl/finalizers.ts';
import { controllerKeyPositionals } from './options.ts';

const releaseCommand: CommandModule<object, ReleaseArgs> = {
  command: 'release <controller> <key>',
  describe:
    "remove the controller's finalizer from one object (its finalize will not run: what it holds outside the cluster may stay)",
  builder: (y) =>
    controllerKeyPositionals(y, 'a registered controller')
      .option('yes', {
        type: 'boolean',
        default: false,
        describe: 'do not ask for confirmation (required when stdin is not a terminal)',
      })
      .example('$0 finalizers release topic team-a/orders', 'let a Topic whose finalize keeps failing go'),
  handler: async (argv) => (await import('../impl/finalizers.ts')).runRelease(argv),
};

export const finalizersCommand: CommandModule = {
  command: 'finalizers <action>',
  describe: "act on Levelset's finalizers (finalizers release --help)",
  builder: (y) => y.command(releaseCommand).demandCommand(1, 'name an action: release'),
  handler: () => undefined,
};
