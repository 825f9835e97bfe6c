/**
 * `levelset trace <key>`: the last reconciles of a key as a waterfall, from the local stack's
 * traces (`levelset dev` writes them; functions/tracing.ts). Implementation: cli/impl/trace.ts.
 */
import type { CommandModule } from 'yargs';
import type { TraceArgs } from '../impl/trace.ts';

export const traceCommand: CommandModule<object, TraceArgs> = {
  command: 'trace <key>',
  describe:
    "a key's last reconciles as a waterfall: event seen, published, delivered (attempt N), each API call, outcome (local stack)",
  builder: (y) =>
    y
      .positional('key', {
        type: 'string',
        demandOption: true,
        describe: 'namespace/name, or name for a cluster-scoped primary',
      })
      .option('controller', { alias: 'c', type: 'string', describe: 'only the traces of this controller' })
      .option('last', {
        type: 'number',
        default: 3,
        describe: 'how many traces, newest last (a retried or requeued delivery stays in its trace)',
      })
      .option('json', { type: 'boolean', default: false, describe: 'the traces as JSON, for tools' })
      .check((argv) => {
        if (!Number.isInteger(argv.last) || argv.last < 1)
          throw new Error('--last must be a whole number ≥ 1');
        return true;
      }),
  handler: async (argv) => (await import('../impl/trace.ts')).runTrace(argv),
};
