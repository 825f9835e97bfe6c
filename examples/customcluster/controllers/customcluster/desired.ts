/**
 * What a Customcluster wants, as pure functions: its pod template (as the tutorial), the plan
 * that converges the pods it controls (how many to create, which to delete), and its status.
 * No I/O here, so it is unit-tested without a cluster.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { isControlledBy, newControllerRef, type ReadyInput } from 'levelset/kit';
import { API_VERSION, type Customcluster, type CustomclusterSpec, KIND } from './api.ts';

/** The container the tutorial runs, and the variable that carries the message. */
export const CONTAINER = 'nginx';
export const IMAGE = 'nginx:latest';
export const MESSAGE_ENV = 'MESSAGE';

/**
 * The tutorial's label on a Customcluster's pods, whose value is the Customcluster's name:
 * `controller=<name>` (not the kit's `levelset.dev/controller`, which names a Levelset controller).
 */
export const CUSTOMCLUSTER_LABEL = 'controller';

/**
 * A new pod for `cc` (the tutorial's pod): `generateName` `<name>-`, label `controller: <name>`, a
 * controller reference to `cc`, container `nginx` running `/bin/sh -c 'echo $MESSAGE; sleep 100'`
 * with `MESSAGE` = `spec.message`.
 */
export function newPod(cc: Customcluster, spec: CustomclusterSpec): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${cc.metadata.name}-`,
      namespace: cc.metadata.namespace,
      labels: { [CUSTOMCLUSTER_LABEL]: cc.metadata.name },
      ownerReferences: [newControllerRef(cc, { apiVersion: API_VERSION, kind: KIND })],
    },
    spec: {
      containers: [
        {
          name: CONTAINER,
          image: IMAGE,
          command: ['/bin/sh', '-c', `echo $${MESSAGE_ENV}; sleep 100`],
          env: [{ name: MESSAGE_ENV, value: spec.message }],
        },
      ],
    },
  };
}

/** The `MESSAGE` a pod runs (container `nginx`'s env), or `undefined`. */
export function messageOf(pod: V1Pod): string | undefined {
  const container = pod.spec?.containers.find((c) => c.name === CONTAINER);
  return container?.env?.find((e) => e.name === MESSAGE_ENV)?.value;
}

/**
 * True when a pod counts as live: not terminating (`deletionTimestamp` unset) and not finished
 * (phase neither `Failed` nor `Succeeded`) — the ReplicaSet controller's `IsPodActive`.
 */
export function isLive(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return !pod.metadata?.deletionTimestamp && phase !== 'Failed' && phase !== 'Succeeded';
}

function isRunning(pod: V1Pod): boolean {
  return pod.status?.phase === 'Running';
}

function createdAt(pod: V1Pod): number {
  const t = pod.metadata?.creationTimestamp;
  return t ? new Date(t).getTime() : 0;
}

/**
 * The order in which extra pods are deleted, first to go first: not yet running before running,
 * then newest before oldest, then by name (a simplification of the ReplicaSet controller's
 * `ActivePodsWithRanks`: the least useful pod goes first).
 */
export function deletionOrder(a: V1Pod, b: V1Pod): number {
  const running = Number(isRunning(a)) - Number(isRunning(b));
  if (running !== 0) return running;
  const age = createdAt(b) - createdAt(a);
  if (age !== 0) return age;
  return (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
}

/** What one reconcile does to a Customcluster's pods. */
export interface PodPlan {
  /** How many new pods to create. */
  create: number;
  /** Pods to delete: live pods with a stale message, then extras beyond `spec.count`. */
  delete: V1Pod[];
  /** Live pods with the current message that stay. */
  keep: V1Pod[];
  /** Of `keep`, those in phase `Running`: `status.count`. */
  running: number;
}

/**
 * Plans the convergence of the pods `cc` controls (pods not controlled by `cc` are ignored,
 * whatever their labels): live pods whose `MESSAGE` differs from `spec.message` are replaced; of
 * the others, extras beyond `spec.count` are deleted ({@link deletionOrder}) and missing ones
 * created. Terminating and finished pods are neither counted nor touched.
 */
export function planPods(cc: Customcluster, spec: CustomclusterSpec, pods: readonly V1Pod[]): PodPlan {
  const live = pods.filter((p) => isControlledBy(p, cc) && isLive(p));
  const stale = live.filter((p) => messageOf(p) !== spec.message);
  const current = live.filter((p) => messageOf(p) === spec.message);
  const extra = current.length - spec.count;
  const byDeletionOrder = [...current].sort(deletionOrder);
  const extras = extra > 0 ? byDeletionOrder.slice(0, extra) : [];
  const keep = extra > 0 ? byDeletionOrder.slice(extra) : current;
  return {
    create: Math.max(0, -extra),
    delete: [...stale, ...extras],
    keep,
    running: keep.filter(isRunning).length,
  };
}

/**
 * `Ready`: `True`/`PodsRunning` when `spec.count` pods run `spec.message` and nothing is to be
 * created or deleted, else `False`/`Progressing` with the counts (the kit adds observedGeneration).
 */
export function readyCondition(spec: CustomclusterSpec, plan: PodPlan): ReadyInput {
  const converged = plan.running === spec.count && plan.create === 0 && plan.delete.length === 0;
  const message = `${plan.running} of ${spec.count} pods running`;
  return converged
    ? { status: true, reason: 'PodsRunning', message }
    : {
        status: false,
        reason: 'Progressing',
        message: `${message}; creating ${plan.create}, deleting ${plan.delete.length}`,
      };
}

/** The status fields: `count` = running pods, `message` = what they run (`""` while none runs). */
export function observedStatus(spec: CustomclusterSpec, plan: PodPlan): { count: number; message: string } {
  return { count: plan.running, message: plan.running > 0 ? spec.message : '' };
}
