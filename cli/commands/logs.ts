/**
 * `levelset logs`: the log lines of Levelset's keys, from the local stack or (`--project`) Cloud
 * Logging, filtered by controller, key and outcome; `--follow` keeps printing. Implementation:
 * cli/impl/logs.ts.
 */
import type { CommandModule } from 'yargs';
import type { LogsArgs } from '../impl/logs.ts';
import { targetOptions } from './options.ts';

export const logsCommand: CommandModule<object, LogsArgs> = {
  command: 'logs',
  describe: "the log lines of Levelset's keys (local stack, or Cloud Logging with --project), filtered",
  builder: (y) =>
    targetOptions(y)
      .option('controller', { type: 'string', describe: 'only this controller (labels.controller)' })
      .option('key', { type: 'string', describe: 'only this key, namespace/name (labels.key)' })
      .option('outcome', {
        choices: ['success', 'requeue', 'terminal', 'malformed', 'transient', 'error'],
        describe: "only the deliveries' final lines with this outcome (jsonPayload.outcome)",
      })
      .option('follow', { alias: 'f', type: 'boolean', default: false, describe: 'keep printing new lines' })
      .option('limit', { type: 'number', default: 100, describe: 'print at most this many past lines first' })
      .option('output', { alias: 'o', choices: ['text', 'json'], default: 'text' })
      .example('$0 logs --controller foo --key demo/example-foo', "one key's story")
      .example('$0 logs --outcome error -f --project PROJECT', 'failures on Google Cloud, as they come'),
  handler: async (argv) => (await import('../impl/logs.ts')).runLogs(argv),
};
