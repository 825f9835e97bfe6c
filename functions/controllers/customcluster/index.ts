/**
 * `customcluster`: the Customcluster tutorial's controller as a stateless reconcile.
 *
 * A Customcluster (`sde.dev/v1alpha1`) asks for `spec.count` pods that print `spec.message`. The
 * reconcile lists the pods it controls (label `controller=<name>` and a controller reference),
 * creates the missing ones, deletes the extra ones and replaces those running another message,
 * then writes `status.count`/`status.message` and a `Ready` condition through the `status`
 * subresource. It never waits for pods (the tutorial's 5-minute poll has no place in a function):
 * pod events map back to the Customcluster's key and bring it back.
 */
import {
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { keyString } from '../../message.ts';
import { FIELD_MANAGER, getCustomObject, writeCustomObjectStatus } from '../../runtime/custom-resource.ts';
import { apiStatusOf, TerminalError } from '../../runtime/errors.ts';
import { EVENT_RECORDER_RULE } from '../../runtime/events.ts';
import { controllerKeysOf } from '../../runtime/owner.ts';
import type { Controller, Key, ReconcileContext, Result } from '../types.ts';
import {
  type Customcluster,
  customclusterResource,
  customclusterSchema,
  customclusterSpecSchema,
  GROUP,
  INVALID_SPEC,
  KIND,
  podResource,
} from './api.ts';
import {
  CONTROLLER_LABEL,
  desiredStatus,
  newPod,
  notReady,
  planPods,
  podSelector,
  readyCondition,
} from './desired.ts';

/**
 * The most pods one reconcile creates or deletes (the ReplicaSet controller's `burstReplicas`,
 * smaller): the pods' own events bring the key back for the rest, and a delivery stays short.
 */
export const MAX_BURST = 100;

/** Label values are at most 63 characters (apimachinery `validation.IsValidLabelValue`). */
const MAX_LABEL_VALUE = 63;

const _mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * Runs `count` calls of `fn` in batches of 1, 2, 4, … (the ReplicaSet controller's
 * `slowStartBatch`): a failing API (quota, admission) costs one request, not `count`.
 * @returns how many succeeded
 * @throws the first error, after the batch it happened in has settled
 */
async function slowStartBatch(count: number, fn: (i: number) => Promise<void>): Promise<number> {
  let done = 0;
  for (let size = 1; done < count; size *= 2) {
    const batch = Math.min(size, count - done);
    const results = await Promise.allSettled(Array.from({ length: batch }, (_, i) => fn(done + i)));
    done += results.filter((r) => r.status === 'fulfilled').length;
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
  return done;
}

async function fail(
  kubeConfig: KubeConfig,
  cc: Customcluster,
  reason: string,
  message: string,
): Promise<never> {
  await writeCustomObjectStatus(
    kubeConfig,
    customclusterResource,
    cc,
    desiredStatus(cc, notReady(cc, reason, message)),
  );
  throw new TerminalError(reason, message, { object: cc as KubernetesObject });
}

/**
 * Converges one Customcluster. API requests: 1 GET + 1 LIST in the steady state; + one create per
 * missing pod, one delete per extra or stale pod (at most {@link MAX_BURST} of each), + 1 status
 * patch when the status changed.
 * @returns `{ requeueAfterMs: 1000 }` when more than {@link MAX_BURST} pods had to be created or deleted.
 * @throws {TerminalError} `InvalidSpec` (spec fails validation, or the name cannot be a label
 *   value); other API errors as thrown by the client (retried).
 */
export async function reconcileCustomcluster(key: Key, ctx: ReconcileContext): Promise<Result> {
  const kubeConfig = ctx.kubeConfig;
  const core = ctx.kubeConfig.makeApiClient(CoreV1Api);

  const raw = await getCustomObject(ctx.kubeConfig, customclusterResource, key);
  if (raw === undefined) {
    // Deleted: garbage collection removes its pods through their owner references.
    ctx.log.debug('customcluster no longer exists');
    return {};
  }
  const parsed = customclusterSchema.safeParse(raw);
  if (!parsed.success) {
    throw new TerminalError(
      'InvalidObject',
      `${keyString(key)}: not a Customcluster: ${parsed.error.message}`,
    );
  }
  const cc = parsed.data;
  if (cc.metadata.deletionTimestamp) return {};

  const spec = customclusterSpecSchema.safeParse(cc.spec ?? {});
  if (!spec.success) {
    const issues = spec.error.issues.map((i) => `spec.${i.path.join('.')}: ${i.message}`).join('; ');
    return fail(kubeConfig, cc, INVALID_SPEC, `${keyString(key)}: invalid spec: ${issues}`);
  }
  if (cc.metadata.name.length > MAX_LABEL_VALUE) {
    return fail(
      kubeConfig,
      cc,
      INVALID_SPEC,
      `${keyString(key)}: the name is longer than ${MAX_LABEL_VALUE} characters and cannot label its pods`,
    );
  }

  const list = await core.listNamespacedPod({
    namespace: cc.metadata.namespace,
    labelSelector: podSelector(cc),
  });
  const plan = planPods(cc, spec.data, list.items);

  const toDelete = plan.delete.slice(0, MAX_BURST);
  const toCreate = Math.min(plan.create, MAX_BURST);
  if (toDelete.length > 0 || toCreate > 0) {
    ctx.log.info({ create: toCreate, delete: toDelete.map((p) => p.metadata?.name) }, 'converging pods');
  }
  // Deletes carry a UID precondition: a pod re-created under the same name is not ours to delete.
  await Promise.all(
    toDelete.map(async (pod: V1Pod) => {
      try {
        await core.deleteNamespacedPod({
          namespace: cc.metadata.namespace,
          name: pod.metadata?.name ?? '',
          body: { preconditions: { uid: pod.metadata?.uid } },
        });
      } catch (err) {
        const status = apiStatusOf(err);
        if (status !== 404 && status !== 409) throw err;
      }
    }),
  );
  await slowStartBatch(toCreate, async () => {
    await core.createNamespacedPod({
      namespace: cc.metadata.namespace,
      body: newPod(cc, spec.data),
      fieldManager: FIELD_MANAGER,
    });
  });

  const status = desiredStatus(cc, readyCondition(cc, spec.data, plan), {
    running: plan.running,
    message: spec.data.message,
  });
  await writeCustomObjectStatus(kubeConfig, customclusterResource, cc, status);
  const capped = plan.delete.length > toDelete.length || plan.create > toCreate;
  return capped ? { requeueAfterMs: 1000 } : {};
}

/** The `customcluster` controller module (registered in `functions/controllers/index.ts`). */
export const customclusterController: Controller = {
  name: 'customcluster',
  primary: customclusterResource,
  watches: [
    {
      resource: customclusterResource,
      map: ({ object }) =>
        object.metadata?.name
          ? [{ namespace: object.metadata.namespace ?? '', name: object.metadata.name }]
          : [],
    },
    {
      // Only labelled pods (the reconcile lists them by the same label), mapped to their
      // controlling Customcluster.
      resource: podResource,
      labelSelector: CONTROLLER_LABEL,
      map: ({ object }) => controllerKeysOf(object, { group: GROUP, kind: KIND }),
    },
  ],
  rbac: [
    { apiGroup: GROUP, resources: ['customclusters'], verbs: ['get', 'list'] },
    { apiGroup: GROUP, resources: ['customclusters/status'], verbs: ['patch'] },
    { apiGroup: '', resources: ['pods'], verbs: ['list', 'create', 'delete'] },
    EVENT_RECORDER_RULE,
  ],
  reconcile: reconcileCustomcluster,
};
