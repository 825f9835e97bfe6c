/**
 * `levelset controllers`: the registry as a table. Implementation: cli/impl/controllers.ts.
 */
import type { CommandModule } from 'yargs';

export const controllersCommand: CommandModule<object, { output: string }> = {
  command: 'controllers',
  describe: 'list the installed controllers: primary, watches, owned kinds, RBAC rules',
  builder: (y) =>
    y.option('output', {
      alias: 'o',
      choices: ['table', 'json'],
      default: 'table',
      describe: 'table, or json for scripts',
    }),
  handler: async (argv) => (await import('../impl/controllers.ts')).runControllers(argv),
};
