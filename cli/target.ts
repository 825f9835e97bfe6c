/**
 * Where a `levelset` command acts: the local stack a running `levelset dev` describes in its state
 * file (local/state.ts), or Google Cloud (`--project`, else `GOOGLE_CLOUD_PROJECT`) with the
 * cluster in `KUBECONFIG`.
 *
 * Resolution: `--project` → Google Cloud; else a state file whose emulator answers → local; else
 * `GOOGLE_CLOUD_PROJECT` → Google Cloud; else a {@link CliError} saying how to get either.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../core/kube.ts';
import { createKeyPublisher, type KeyPublisher, type KeyPublisherOptions } from '../core/publish.ts';
import { answers } from '../local/service.ts';
import { readStackState, type StackState, stackProcessAlive, stateDirectory } from '../local/state.ts';
import { CliError, firstLine } from './errors.ts';

/** Options every command that talks to Pub/Sub or the cluster accepts. */
export interface TargetOptions {
  /** Google Cloud project; forces Google Cloud even when a local stack runs. */
  project?: string;
  /** Keys topic id on Google Cloud (Terraform's `topic_name`); default `LEVELSET_TOPIC`, then `levelset-keys`. */
  topic?: string;
}

export interface Target {
  kind: 'local' | 'cloud';
  projectId: string;
  /** `host:port` of the local stack's Pub/Sub emulator; `undefined` on Google Cloud. */
  emulatorHost?: string;
  /** Full resource names. */
  topic: string;
  subscription: string;
  deadLetterSubscription: string;
  /** The local stack's state (URLs, log files); `undefined` on Google Cloud. */
  stack?: StackState;
  /** Kubeconfig file of the cluster: the local stack's, else `KUBECONFIG` (default `~/.kube/config`). */
  kubeconfigPath?: string;
  /** A short description for output: `local stack (emulator 127.0.0.1:8085)` or `project my-project`. */
  describe: string;
}

/** Resource id of a full name (`projects/p/topics/levelset-keys` → `levelset-keys`). */
export function resourceId(fullName: string): string {
  return fullName.slice(fullName.lastIndexOf('/') + 1);
}

/**
 * Resolves the target of a command.
 * @throws {CliError} when neither a running local stack nor a project is found.
 */
export async function resolveTarget(
  options: TargetOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Target> {
  const cloud = (projectId: string): Target => {
    const topicId = options.topic ?? env.LEVELSET_TOPIC ?? 'levelset-keys';
    const p = `projects/${projectId}`;
    return {
      kind: 'cloud',
      projectId,
      topic: `${p}/topics/${topicId}`,
      subscription: `${p}/subscriptions/${topicId}-reconcile`,
      // terraform/pubsub.tf: the dead-letter pull subscription is named like its topic.
      deadLetterSubscription: `${p}/subscriptions/${topicId}-dead-letter`,
      kubeconfigPath: env.KUBECONFIG || undefined,
      describe: `project ${projectId}`,
    };
  };
  if (options.project) return cloud(options.project);
  const dir = stateDirectory(env);
  let stack: StackState | undefined;
  try {
    stack = readStackState(dir);
  } catch (err) {
    throw new CliError(`${firstLine(err)}: delete it, then start the stack with \`levelset dev\``);
  }
  if (
    stack &&
    stackProcessAlive(stack) &&
    (await answers(`http://${stack.emulatorHost}/`, { timeoutMs: 2000 }))
  ) {
    return {
      kind: 'local',
      projectId: stack.projectId,
      emulatorHost: stack.emulatorHost,
      ...stack.topology,
      stack,
      kubeconfigPath: stack.kubeconfigPath,
      describe: `local stack (Pub/Sub emulator ${stack.emulatorHost})`,
    };
  }
  if (env.GOOGLE_CLOUD_PROJECT) return cloud(env.GOOGLE_CLOUD_PROJECT);
  throw noLocalStack(dir, stack, 'pass --project (or set GOOGLE_CLOUD_PROJECT) for Google Cloud');
}

/**
 * The one message of a command that needs the local stack when none runs (`levelset status`,
 * `conditions`, …): which state file says so, how to start one, and `otherwise` (the command's
 * other target).
 */
function noLocalStack(dir: string, stack: StackState | undefined, otherwise: string): CliError {
  if (stack)
    return new CliError(
      `the local stack is not running (${stackProcessAlive(stack) ? `its Pub/Sub emulator at ${stack.emulatorHost} does not answer` : `its process ${stack.pid} is gone`}): ` +
        `start it with \`levelset dev\`, or ${otherwise}`,
    );
  return new CliError(
    `no local stack running (no ${dir}/stack.json): start one with \`levelset dev\`, or ${otherwise}`,
  );
}

/**
 * The shared key publisher (core/publish.ts) on the target's keys topic; `options` as
 * {@link createKeyPublisher}'s (e.g. the resync's `RESYNC_PUBLISHING`).
 */
export function targetPublisher(
  target: Target,
  options: Pick<KeyPublisherOptions, 'ordering' | 'batching'> = {},
): KeyPublisher {
  return createKeyPublisher({
    projectId: target.projectId,
    topic: resourceId(target.topic),
    emulatorHost: target.emulatorHost,
    ...options,
  });
}

/**
 * The target's cluster.
 * @throws {CliError} when no kubeconfig can be loaded.
 */
export function targetKubeConfig(target: Target): KubeConfig {
  try {
    return loadKubeConfig(target.kubeconfigPath, { ...process.env, K_SERVICE: undefined });
  } catch (err) {
    throw new CliError(`no Kubernetes cluster: ${firstLine(err)} (set KUBECONFIG)`);
  }
}

/**
 * The cluster of a command that needs no Pub/Sub (`conditions`, `plan`, `finalizers release`): the
 * running local stack's, else `KUBECONFIG`'s (default `~/.kube/config`).
 * @throws {CliError} when no kubeconfig can be loaded
 */
export function clusterKubeConfig(env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const dir = stateDirectory(env);
  let stack: StackState | undefined;
  try {
    stack = readStackState(dir);
  } catch {
    // no usable local stack state: KUBECONFIG
  }
  let path = stack && stackProcessAlive(stack) ? stack.kubeconfigPath : undefined;
  // Neither a stack nor a kubeconfig nor a Pod's ServiceAccount: client-node would fall back to
  // http://localhost:8080 and refuse it ("HTTP protocol is not allowed…"); say what is missing.
  const home = join(env.HOME ?? homedir(), '.kube', 'config');
  if (!path && !env.KUBECONFIG && !env.KUBERNETES_SERVICE_HOST && !existsSync(home))
    throw noLocalStack(dir, stack, 'set KUBECONFIG for another cluster');
  path ??= env.KUBECONFIG || undefined;
  try {
    return loadKubeConfig(path, { ...env, K_SERVICE: undefined });
  } catch (err) {
    throw new CliError(`no Kubernetes cluster: ${firstLine(err)} (set KUBECONFIG)`);
  }
}

/**
 * Throws a {@link CliError} naming the API server when `err` is a connection failure (refused,
 * unknown host, timeout), so that "cluster unreachable" is one line; other errors are rethrown.
 */
export function clusterError(kubeConfig: KubeConfig, err: unknown): never {
  const code =
    (err as { code?: string; cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code;
  const text = firstLine(err);
  if (
    (code && ['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ETIMEDOUT', 'ECONNRESET'].includes(code)) ||
    /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|fetch failed|socket hang up/.test(text)
  ) {
    const server = kubeConfig.getCurrentCluster()?.server ?? '(no server)';
    throw new CliError(
      `cannot reach the Kubernetes API at ${server}: check KUBECONFIG and that the cluster is up`,
    );
  }
  throw err;
}
