/**
 * `levelset trace <controller> <key>` (the shape of `plan` and `reconcile`): the last reconciles of a key as a waterfall, from the local stack's
 * traces (`levelset dev` writes them; core/tracing.ts) or, with `--project` (or
 * `GOOGLE_CLOUD_PROJECT` and no local stack), from Cloud Trace. Implementation: cli/impl/trace.ts.
 */
import type { CommandModule } from 'yargs';
import type { TraceArgs } from '../impl/trace.ts';
import { controllerKeyPositionals } from './options.ts';

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * `90m`, `24h`, `7d` in ms.
 * @throws {Error} when `text` is not a positive number followed by `m`, `h` or `d`
 */
export function parseSince(text: string): number {
  const m = /^(\d+(?:\.\d+)?)([mhd])$/.exec(text.trim());
  const ms = m ? Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS] : 0;
  if (!(ms > 0)) throw new Error(`--since "${text}": a duration such as 90m, 24h or 7d`);
  return ms;
}

export const traceCommand: CommandModule<object, TraceArgs> = {
  command: 'trace <controller> <key>',
  describe:
    "a key's last reconciles as a waterfall: event seen, published, delivered (attempt N), each API call, outcome (local stack, or Cloud Trace with --project)",
  builder: (y) =>
    controllerKeyPositionals(
      y,
      'a registered controller (levelset controllers): the traces of its reconciles of the key',
    )
      .option('last', {
        type: 'number',
        default: 3,
        describe: 'how many traces, newest last (a retried or requeued delivery stays in its trace)',
      })
      .option('json', { type: 'boolean', default: false, describe: 'the traces as JSON, for tools' })
      .option('project', {
        type: 'string',
        describe:
          'read Cloud Trace of this Google Cloud project (needs roles/cloudtrace.user; default: the local stack of `levelset dev`, else GOOGLE_CLOUD_PROJECT, else the local trace files)',
      })
      .option('since', {
        type: 'string',
        default: '24h',
        describe: 'Cloud Trace only: how far back to look (90m, 24h, 7d)',
      })
      .example('$0 trace foo team-a/my-foo', "the key's last 3 traces, local stack")
      .example('$0 trace foo team-a/my-foo --project PROJECT', 'the same from Cloud Trace')
      .check((argv) => {
        if (!Number.isInteger(argv.last) || argv.last < 1)
          throw new Error('--last must be a whole number ≥ 1');
        if (argv.since !== undefined) parseSince(argv.since);
        return true;
      }),
  handler: async (argv) =>
    (await import('../impl/trace.ts')).runTrace({ ...argv, sinceMs: parseSince(argv.since ?? '24h') }),
};
