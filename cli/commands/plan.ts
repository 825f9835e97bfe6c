/**
 * `levelset plan <controller> <key>`: one reconcile with every write sent as a server-side dry-run,
 * and the diff it would make (created, changed fields, pruned). Implementation: cli/impl/plan.ts.
 */
import type { CommandModule } from 'yargs';
import type { PlanArgs } from '../impl/plan.ts';
import { controllerKeyPositionals } from './options.ts';

export const planCommand: CommandModule<object, PlanArgs> = {
  command: 'plan <controller> <key>',
  describe:
    'run one reconcile with every write sent as a server-side dry-run (dryRun=All) and print what it would change; exit 1 when something',
  builder: (y) =>
    controllerKeyPositionals(y)
      .option('output', { alias: 'o', choices: ['text', 'json'], default: 'text' })
      .example('$0 plan foo demo/example-foo', 'what the reconcile of the demo Foo would change now')
      .epilogue(
        'Cluster: the local stack of levelset dev, else KUBECONFIG. Nothing is written: Kubernetes writes are dry-runs, Events are listed, not recorded, and nothing outside the cluster is written. Exit 0 when nothing would change, 1 when something would (or on failure), 2 on a usage error.',
      ),
  handler: async (argv) => (await import('../impl/plan.ts')).runPlan(argv),
};
