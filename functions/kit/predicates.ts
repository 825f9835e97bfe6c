/**
 * Predicates for the watches a controller declares (controller-runtime's `predicate.Funcs`): pure
 * functions of a watch event that drop the events a level-driven reconcile does not need. Each one
 * says why the event it drops never carries what a missed event would (docs/architecture.md,
 * "Design decisions": the predicates of children's watches).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { WatchEvent } from '../../core/contract/controller.ts';
import { significantMetadataChanged } from '../../core/contract/watch-predicates.ts';
import { FIELD_MANAGER } from '../../core/k8s/custom-resource.ts';

/**
 * Whether every field manager of `object` is Levelset's ({@link FIELD_MANAGER}): what its
 * `metadata.managedFields` says as the relay's event carries them (manager names only). `false`
 * when it has none (nothing says who wrote it).
 */
export function writtenOnlyByLevelset(object: KubernetesObject): boolean {
  const managers = object.metadata?.managedFields ?? [];
  return managers.length > 0 && managers.every((m) => m.manager === FIELD_MANAGER);
}

/**
 * Drops the `ADDED` event of a child whose only field manager is Levelset: the echo of the owner's
 * own create (controller-runtime's `predicate.Funcs{CreateFunc}` returning false for them). The
 * reconcile that created the child already converged the owner with it; what happens to the child
 * afterwards (another writer's change, a status update, its deletion) comes as `MODIFIED` or
 * `DELETED`, which pass. A child another writer created or has written (a second manager) passes,
 * as does one without managedFields. On a relay restart the initial LIST's `ADDED` of such a child
 * is dropped too: the owner's own `ADDED` of that LIST enqueues the owner, and the resync covers the
 * rest. Declare it on an owned type whose reconcile reads nothing of a just-created child that it
 * did not write itself (a Foo reports its Deployment's `availableReplicas`: 0 before and after).
 * @returns `false` to drop, `true` to enqueue.
 */
export function skipOwnCreates(event: WatchEvent): boolean {
  return !(event.type === 'ADDED' && writtenOnlyByLevelset(event.object));
}

/**
 * The time of the last write of `object` by Levelset's manager and by any other, in ms since the
 * epoch, from its `metadata.managedFields` entries' `time` (whole seconds: kube-apiserver sets a
 * manager's entry time at each write of that manager that changes the object, apimachinery's
 * `managedFieldsUpdater`); `undefined` for a side with no timed entry.
 */
function lastWrites(object: KubernetesObject): { levelset?: number; others?: number } {
  const out: { levelset?: number; others?: number } = {};
  for (const entry of object.metadata?.managedFields ?? []) {
    const at = entry.time === undefined ? Number.NaN : new Date(entry.time).getTime();
    if (Number.isNaN(at)) continue;
    const side = entry.manager === FIELD_MANAGER ? 'levelset' : 'others';
    out[side] = Math.max(out[side] ?? at, at);
  }
  return out;
}

/**
 * {@link skipOwnCreates}, and also drops the `MODIFIED` event of a child that is the echo of the
 * owner's own apply or patch: the reconcile that wrote it acted on the owner as it then was, and a
 * later change of the owner comes as the owner's own event. An event is that echo when Levelset's
 * field manager wrote the child last, strictly after every other manager (the entries' `time`, whole
 * seconds: a write of another manager in the same second passes), and nothing else could have
 * changed with it: the generation moved by at most one, the significant metadata
 * (`SIGNIFICANT_METADATA`: labels, annotations, deletion, finalizers, owner references) is as the
 * relay's cache had it, and the child is not being deleted. So another writer's change passes (its
 * manager's time is the latest or the same second), as does a deletion (which sets no entry time),
 * and an event with no timed entry of Levelset's or without a cached `oldObject`. On a watch the
 * relay sees every write as its own event; after a relist the event spans the writes it missed, and
 * one of another writer in an earlier second than Levelset's that changed only a child's status is
 * dropped with the echo (the owner converges at its next event or the resync). Declare it, as
 * `skipOwnCreates`, on an owned type that only this controller writes as Levelset.
 * @returns `false` to drop, `true` to enqueue.
 */
export function skipOwnWrites(event: WatchEvent): boolean {
  if (!skipOwnCreates(event)) return false;
  const { object, oldObject } = event;
  if (event.type !== 'MODIFIED' || !oldObject) return true;
  const now = (object.metadata ?? {}) as Record<string, unknown>;
  const old = (oldObject.metadata ?? {}) as Record<string, unknown>;
  if (now.deletionTimestamp) return true;
  if (typeof now.generation === 'number' && typeof old.generation === 'number') {
    const moved = now.generation - old.generation;
    if (moved !== 0 && moved !== 1) return true;
  }
  if (significantMetadataChanged(object, oldObject)) return true;
  const { levelset, others } = lastWrites(object);
  return levelset === undefined || (others !== undefined && others >= levelset);
}
