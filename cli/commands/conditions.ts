/**
 * `levelset conditions`: the objects whose `Ready` is not `True`, with reason, message,
 * observedGeneration lag and age; exit 1 when any (a rollout gate). Implementation: cli/impl/conditions.ts.
 */
import type { CommandModule } from 'yargs';
import type { ConditionsArgs } from '../impl/conditions.ts';

export const conditionsCommand: CommandModule<object, ConditionsArgs> = {
  command: 'conditions',
  describe:
    'every object of the registered controllers whose Ready condition is not True (or is for an older generation); exit 1 when any',
  builder: (y) =>
    y
      .option('controller', {
        type: 'string',
        describe: 'only this controller (default: every one with a Ready condition)',
      })
      .option('namespace', {
        alias: 'n',
        type: 'string',
        describe: "this namespace (default: the kubeconfig context's, else default)",
      })
      .option('all-namespaces', {
        alias: 'A',
        type: 'boolean',
        default: false,
        describe: 'every namespace',
      })
      .option('output', { alias: 'o', choices: ['table', 'json'], default: 'table' })
      .example('$0 conditions -A', 'what is not Ready anywhere')
      .example('$0 conditions --controller foo -n team-a && kubectl rollout …', 'gate a rollout on Ready')
      .epilogue(
        'Cluster: the local stack of levelset dev, else KUBECONFIG. Exit 0 when every object is Ready, 1 when one is not (or on failure), 2 on a usage error.',
      ),
  handler: async (argv) => (await import('../impl/conditions.ts')).runConditions(argv),
};
