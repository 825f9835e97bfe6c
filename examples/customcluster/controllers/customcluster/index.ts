/**
 * `customcluster`: the Customcluster tutorial's controller, on the kit.
 *
 * A Customcluster (`sde.dev/v1alpha1`) asks for `spec.count` pods that print `spec.message`. Its
 * pods are interchangeable replicas named by `generateName` (not named children a server-side apply
 * can address), so the reconcile creates and deletes them itself: it creates the missing ones,
 * deletes the extra ones and replaces those running another message, and reports
 * `status.count`/`status.message` and `Ready`. The kit does the rest: GET, spec validation, the LIST
 * of the pods it controls (label `controller=<name>` and a controller reference), the status write
 * when it changed. It never waits for pods (the tutorial's 5-minute poll has no place in a
 * function): pod events map back to the Customcluster's key. A converged one costs 2 requests.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { defineController, pods, resourceClient } from 'levelset/kit';
import { customclusterResource, customclusterSpecSchema, customclusterStatusSchema } from './api.ts';
import { CUSTOMCLUSTER_LABEL, newPod, observedStatus, planPods, readyCondition } from './desired.ts';

/**
 * The most pods one reconcile creates or deletes (the ReplicaSet controller's `burstReplicas`,
 * smaller): the pods' own events bring the key back for the rest, and a delivery stays short.
 */
export const MAX_BURST = 100;

/**
 * Runs `count` calls of `fn` in batches of 1, 2, 4, … (the ReplicaSet controller's
 * `slowStartBatch`): a failing API (quota, admission) costs one request, not `count`.
 * @throws the first error, after the batch it happened in has settled
 */
async function slowStartBatch(count: number, fn: () => Promise<void>): Promise<void> {
  for (let done = 0, size = 1; done < count; size *= 2) {
    const results = await Promise.allSettled(Array.from({ length: Math.min(size, count - done) }, fn));
    done += results.filter((r) => r.status === 'fulfilled').length;
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

/** The `customcluster` controller module (registered in `controllers/index.ts`). */
export const customclusterController = defineController({
  name: 'customcluster',
  primary: customclusterResource,
  spec: customclusterSpecSchema,
  status: customclusterStatusSchema,
  // Only labelled pods are watched and listed, by the tutorial's label `controller=<name>`.
  owns: [
    {
      resource: pods,
      labels: (cc) => ({ [CUSTOMCLUSTER_LABEL]: cc.metadata.name }),
      watchSelector: CUSTOMCLUSTER_LABEL,
    },
  ],
  synced: false,
  async reconcile({ object: cc, spec, owned, kubeConfig, log }) {
    const plan = planPods(cc, spec, owned(pods) as V1Pod[]);
    const toDelete = plan.delete.slice(0, MAX_BURST);
    const toCreate = Math.min(plan.create, MAX_BURST);
    if (toDelete.length > 0 || toCreate > 0)
      log.info({ create: toCreate, delete: toDelete.map((p) => p.metadata?.name) }, 'converging pods');
    // Deletes carry a UID precondition: a pod re-created under the same name is not ours to delete.
    const client = resourceClient(kubeConfig);
    await Promise.all(toDelete.map((pod) => client.delete(pods, pod)));
    await slowStartBatch(toCreate, async () => {
      await client.create(pods, newPod(cc, spec));
    });
    const capped = plan.delete.length > toDelete.length || plan.create > toCreate;
    return {
      status: observedStatus(spec, plan),
      ready: readyCondition(spec, plan),
      ...(capped ? { requeueAfterMs: 1000 } : {}),
    };
  },
});
