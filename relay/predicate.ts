/**
 * Which watch events enqueue a key: the events of a controller's PRIMARY resource, and those of a
 * secondary watch that declares what it reads of an object's status (`Watch.readsStatus`). The
 * predicates themselves are the contract's (core/contract/watch-predicates.ts, shared with the
 * kit's test helper `keysFor`); here, what the relay's informer recorded of each object's status.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { WatchEvent } from '../core/contract/controller.ts';
import { statusEventPassesWith } from '../core/contract/watch-predicates.ts';

export { primaryEventPasses, SIGNIFICANT_METADATA } from '../core/contract/watch-predicates.ts';

/** The JSON of what the watches of an informer read of a cached object's status (`Watch.readsStatus`). */
const statusReads = new WeakMap<KubernetesObject, string>();

/** Records what the watches read of `object`'s status (the informer does, from the whole object). */
export function recordStatusRead(object: KubernetesObject, read: string): void {
  statusReads.set(object, read);
}

/** What the watches read of `object`'s status, as recorded; `undefined` when none was. */
export function statusReadOf(object: KubernetesObject): string | undefined {
  return statusReads.get(object);
}

/**
 * The status predicate (core/contract/watch-predicates.ts `statusEventPassesWith`) on the
 * status reads the informer recorded ({@link recordStatusRead}): without a recorded read on either
 * side (the informer did not see the whole object) the event passes.
 * @returns `true` to enqueue, `false` to drop.
 */
export function statusEventPasses(event: WatchEvent): boolean {
  return statusEventPassesWith(event, statusReadOf);
}
