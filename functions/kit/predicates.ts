/**
 * Predicates for the watches a controller declares (controller-runtime's `predicate.Funcs`): pure
 * functions of a watch event that drop the events a level-driven reconcile does not need. Each one
 * says why the event it drops never carries what a missed event would (docs/architecture.md,
 * "Design decisions": the predicates of children's watches).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { WatchEvent } from '../../core/contract/controller.ts';
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
