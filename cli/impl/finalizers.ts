/**
 * `levelset finalizers release <controller> <key>`: removes `levelset.dev/<controller>` from one
 * object of the controller's primary type, with the kit's own patch (only that finalizer, with a
 * precondition: functions/kit/finalizers.ts), after a confirmation, and writes one WARNING log line
 * (Cloud Logging JSON on stderr) saying who released what: releasing skips `finalize`, so whatever
 * the object held outside the cluster may be left behind.
 */
import { createInterface } from 'node:readline/promises';
import type { KubernetesObject } from '@kubernetes/client-node';
import { keyString } from '../../core/contract/key.ts';
import { isNotFound } from '../../core/k8s/errors.ts';
import { createLogger, LABELS } from '../../core/log.ts';
import { finalizerName, hasFinalizer, removeFinalizer } from '../../functions/kit/finalizers.ts';
import { resourceClient } from '../../functions/kit/index.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { say } from '../output.ts';
import { clusterError, clusterKubeConfig } from '../target.ts';
import { parseKey, registeredController } from './reconcile.ts';

export interface ReleaseArgs {
  controller: string;
  key: string;
  yes: boolean;
}

/** Asks on the terminal; `true` for y/yes. @throws {CliError} (exit 2) when stdin is not a terminal */
async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) throw new CliError('refusing without --yes: stdin is not a terminal', EXIT_USAGE);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

export async function runRelease(args: ReleaseArgs, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const controller = await registeredController(args.controller);
  const key = parseKey(controller, args.key);
  const finalizer = finalizerName(controller.name);
  const kubeConfig = clusterKubeConfig(env);
  const what = `${controller.primary.kind} ${keyString(key)}`;
  let object: KubernetesObject;
  try {
    object = await resourceClient(kubeConfig).get(controller.primary, key.namespace, key.name);
  } catch (err) {
    if (isNotFound(err)) throw new CliError(`${what} not found`);
    return clusterError(kubeConfig, err);
  }
  if (!hasFinalizer(object, finalizer)) {
    say(`${what} does not carry ${finalizer}: nothing to release`);
    return;
  }
  const deleting = Boolean(object.metadata?.deletionTimestamp);
  const question =
    `release ${finalizer} from ${what}${deleting ? ' (being deleted)' : ' (NOT being deleted: the controller adds it again)'}? ` +
    `${controller.name}'s finalize will not run for it: what it holds outside the cluster may be left behind.`;
  if (!args.yes && !(await confirm(question))) throw new CliError('not released');
  await removeFinalizer(kubeConfig, controller.primary, object, finalizer);
  createLogger('cli', process.stderr).warn(
    {
      [LABELS]: { controller: controller.name, key: keyString(key) },
      finalizer,
      uid: object.metadata?.uid,
      user: env.USER ?? env.LOGNAME,
    },
    'finalizer released by hand: finalize skipped',
  );
  say(`released ${finalizer} from ${what}`);
}
