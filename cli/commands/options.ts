/**
 * Options shared by the commands that act on a Levelset deployment (cli/target.ts).
 */
import type { Argv } from 'yargs';

/** `--project` and `--topic`. */
export function targetOptions<T>(y: Argv<T>) {
  return y
    .option('project', {
      type: 'string',
      describe:
        'Google Cloud project (default: the local stack of `levelset dev`, else GOOGLE_CLOUD_PROJECT)',
    })
    .option('topic', {
      type: 'string',
      describe:
        "keys topic id on Google Cloud (Terraform's topic_name; default LEVELSET_TOPIC or levelset-keys)",
    });
}
