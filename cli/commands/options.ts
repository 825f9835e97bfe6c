/**
 * Options shared by the commands that act on a Levelset deployment (cli/target.ts).
 */
import type { Argv } from 'yargs';
import { isDNS1123Label } from '../../core/contract/names.ts';

/**
 * `--cluster <id>`: the cluster a command's keys are in (a DNS-1123 label; the key message's
 * `cluster`, core/message.ts). Omitted: see each command.
 */
export function clusterOption<T>(y: Argv<T>, describe: string) {
  return y.option('cluster', {
    type: 'string',
    describe,
    coerce: (id: string | undefined) => {
      if (id !== undefined && !isDNS1123Label(id))
        throw new Error(`--cluster "${id}": a cluster id is a DNS-1123 label (e.g. gke-eu)`);
      return id;
    },
  });
}

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

/**
 * The `<controller> <key>` positionals of `plan`, `reconcile`, `trace` and `finalizers release`;
 * `controller` describes the first (default: a registered controller, as `levelset controllers` lists).
 */
export function controllerKeyPositionals<T>(
  y: Argv<T>,
  controller = 'a registered controller (levelset controllers)',
) {
  return y
    .positional('controller', { type: 'string', demandOption: true, describe: controller })
    .positional('key', {
      type: 'string',
      demandOption: true,
      describe: 'namespace/name, or name for a cluster-scoped primary',
    });
}
