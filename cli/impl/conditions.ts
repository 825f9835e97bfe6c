/**
 * `levelset conditions`: every object of the registered controllers that maintain a `Ready`
 * condition (`Controller.readyCondition`: the kit's controllers) whose `Ready` is not `True` — with
 * its reason, message, observedGeneration lag and age — so that "why is my object not Ready?" is
 * one command, and a rollout can be gated on it (exit 1 when any). The idea of the controller
 * development notes' check-conditions: a `Ready=True` computed from an older generation is not
 * ready either, so it is listed too (lag > 0).
 *
 * Reads: one paginated LIST per controller (its primary), in one namespace, all namespaces
 * (`--all-namespaces`), or cluster-wide for a cluster-scoped primary. A primary not served (its CRD
 * not installed) is skipped and said so.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Controller } from '../../core/contract/controller.ts';
import { keyString } from '../../core/contract/key.ts';
import { findCondition, parseConditions } from '../../core/k8s/conditions.ts';
import { isNotFound } from '../../core/k8s/errors.ts';
import { listPaged } from '../../core/k8s/list.ts';
import { loadRegistry } from '../../core/project.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { formatDuration, say, table } from '../output.ts';
import { clusterError, clusterKubeConfig } from '../target.ts';
import { requireController } from './reconcile.ts';

export interface ConditionsArgs {
  controller?: string;
  namespace?: string;
  'all-namespaces': boolean;
  output: string;
}

/** One object whose `Ready` is not `True` (or is `True` for an older generation). */
export interface NotReady {
  controller: string;
  /** `namespace/name`, or `name` for a cluster-scoped primary. */
  key: string;
  /** `False`, `Unknown`, `True` (computed from an older generation), or `absent` (never reconciled). */
  ready: 'True' | 'False' | 'Unknown' | 'absent';
  reason: string;
  message: string;
  /** `metadata.generation` minus the condition's `observedGeneration`; `undefined` when either is missing. */
  generationLag?: number;
  /** Since the condition's `lastTransitionTime` (ms), or since the object's creation when it has none. */
  ageMs: number;
}

/**
 * What `object`'s `Ready` condition says, or `undefined` when it is `True` for the current generation.
 * @param now ms since the epoch
 */
export function notReadyOf(controller: string, object: KubernetesObject, now: number): NotReady | undefined {
  const metadata = object.metadata ?? {};
  const key = keyString({ namespace: metadata.namespace ?? '', name: metadata.name ?? '' });
  const status = (object as { status?: { conditions?: unknown } }).status;
  const ready = findCondition(parseConditions(status?.conditions), 'Ready');
  const generation = metadata.generation;
  const lag =
    generation !== undefined && ready?.observedGeneration !== undefined
      ? generation - ready.observedGeneration
      : undefined;
  if (ready?.status === 'True' && !lag) return undefined;
  const since = Date.parse(ready?.lastTransitionTime ?? String(metadata.creationTimestamp ?? ''));
  return {
    controller,
    key,
    ready: ready?.status ?? 'absent',
    reason: ready?.reason ?? (ready ? '' : 'NotReconciled'),
    message: ready?.message ?? (ready ? '' : 'no Ready condition yet: no reconcile has written its status'),
    ...(lag !== undefined ? { generationLag: lag } : {}),
    ageMs: Number.isNaN(since) ? 0 : Math.max(0, now - since),
  };
}

/** The namespace of the kubeconfig's current context, as kubectl defaults to it; `default` without one. */
function contextNamespace(kubeConfig: KubeConfig): string {
  const context = kubeConfig.getContextObject(kubeConfig.getCurrentContext());
  return context?.namespace || 'default';
}

/**
 * The objects of `controller` whose `Ready` is not `True`, in `namespace` (all when `undefined`).
 * @returns `skipped` when its primary is not served (404: CRD not installed)
 */
export async function notReadyObjects(
  kubeConfig: KubeConfig,
  controller: Controller,
  namespace: string | undefined,
  now = Date.now(),
): Promise<{ notReady: NotReady[]; checked: number; skipped?: string }> {
  const notReady: NotReady[] = [];
  let checked = 0;
  try {
    for await (const object of listPaged(kubeConfig, controller.primary, {
      namespace: controller.primary.namespaced ? namespace : undefined,
    })) {
      checked++;
      const item = notReadyOf(controller.name, object, now);
      if (item) notReady.push(item);
    }
  } catch (err) {
    if (isNotFound(err)) return { notReady, checked, skipped: `${controller.primary.plural} not served` };
    throw err;
  }
  return { notReady, checked };
}

/** Runs `levelset conditions`; exit code 1 when an object is not Ready (0 when none). */
export async function runConditions(
  argv: ConditionsArgs,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  if (argv.namespace && argv['all-namespaces'])
    throw new CliError('--namespace and --all-namespaces exclude each other', EXIT_USAGE);
  const { controllers } = await loadRegistry();
  const selected = argv.controller
    ? [requireController(argv.controller, controllers)]
    : controllers.filter((c) => c.readyCondition);
  const unconditioned = selected.find((c) => !c.readyCondition);
  if (unconditioned)
    throw new CliError(
      `${unconditioned.name} maintains no Ready condition on its ${unconditioned.primary.kind}s: nothing to check`,
      EXIT_USAGE,
    );
  const kubeConfig = clusterKubeConfig(env);
  const namespace = argv['all-namespaces'] ? undefined : (argv.namespace ?? contextNamespace(kubeConfig));
  const results = await Promise.all(
    selected.map((c) =>
      notReadyObjects(kubeConfig, c, namespace).catch((err) => clusterError(kubeConfig, err)),
    ),
  );
  const notReady = results.flatMap((r) => r.notReady);
  const checked = results.reduce((n, r) => n + r.checked, 0);
  const skipped = results.flatMap((r, i) => (r.skipped ? [`${selected[i]?.name}: ${r.skipped}`] : []));
  if (notReady.length > 0) process.exitCode = 1;
  if (argv.output === 'json') {
    say(JSON.stringify({ namespace: namespace ?? null, checked, notReady, skipped }, null, 2));
    return;
  }
  const where = namespace === undefined ? 'in all namespaces' : `in namespace ${namespace}`;
  for (const s of skipped) say(`skipped ${s}`);
  if (notReady.length === 0) {
    say(`all ${checked} objects Ready ${where} (${selected.map((c) => c.name).join(', ')})`);
    return;
  }
  say(
    table(
      ['controller', 'key', 'Ready', 'reason', 'message', 'generation lag', 'age'],
      notReady.map((n) => [
        n.controller,
        n.key,
        n.ready,
        n.reason || '-',
        n.message || '-',
        n.generationLag ?? '-',
        formatDuration(n.ageMs),
      ]),
    ),
  );
  say(`${notReady.length} of ${checked} objects not Ready ${where}`);
}
