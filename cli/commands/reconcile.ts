/**
 * `levelset reconcile <controller> <namespace/name>`: publishes one key now (`reason: "manual"`);
 * `--wait` follows it to its outcome in the local stack's reconcile log. Implementation: cli/impl/reconcile.ts
 * (loaded on use, so that `--help` and completion stay fast).
 */
import type { CommandModule } from 'yargs';
import type { ReconcileArgs } from '../impl/reconcile.ts';
import { clusterOption, controllerKeyPositionals, targetOptions } from './options.ts';

export const reconcileCommand: CommandModule<object, ReconcileArgs> = {
  command: 'reconcile <controller> <key>',
  describe: 'publish one key now (reason: manual); --wait follows it to its outcome (local stack)',
  builder: (y) =>
    controllerKeyPositionals(
      clusterOption(
        targetOptions(y),
        'the cluster the key is in (default: default, the single cluster of a one-cluster deployment)',
      ),
    )
      .option('wait', {
        type: 'boolean',
        default: false,
        describe: "follow the key to its outcome in the reconcile function's log (local stack only)",
      })
      .option('timeout', {
        type: 'number',
        default: 120,
        describe: '--wait gives up after this many seconds',
      })
      .example(
        '$0 reconcile foo demo/example-foo --cluster cluster-2',
        "the Foo of levelset dev --clusters 2's cluster-2",
      )
      .example(
        '$0 reconcile foo demo/example-foo --wait',
        "reconcile the demo's Foo now and print the outcome",
      )
      .epilogue(
        'With --wait: exit 0 when reconciled, 3 when the key names no object (not found: nothing to do), 1 on a terminal failure.',
      ),
  handler: async (argv) => (await import('../impl/reconcile.ts')).runReconcile(argv),
};
