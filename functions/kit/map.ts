/**
 * Watch map functions (controller-runtime's `handler.EnqueueRequestForObject`,
 * `EnqueueRequestForOwner` and `EnqueueRequestsFromMapFunc`): pure functions from a watch event to
 * the primary keys it affects, reading only the event and the relay's caches.
 */
import type { MapContext, ResourceType, WatchEvent } from '../../core/contract/controller.ts';
import type { MappedKey } from '../../core/contract/key.ts';
import { controllerRefOf, groupOf } from '../../core/k8s/owner.ts';

/** A `Watch.map`. */
export type MapFunction = (event: WatchEvent, ctx: MapContext) => MappedKey[];

/** The object's own key (the primary watch: `EnqueueRequestForObject`). */
export const mapToSelf: MapFunction = ({ object }) =>
  object.metadata?.name ? [{ namespace: object.metadata.namespace ?? '', name: object.metadata.name }] : [];

/**
 * Follows controller references up to an object of `primary`'s kind and group, and maps to its key:
 * a Deployment to its Icecream in one hop (`EnqueueRequestForOwner` with `OnlyControllerOwner`), a Pod
 * to its ReplicaSet to its Deployment to its Icecream in three. Each intermediate object is read from
 * the relay's cache ({@link MapContext.get}), so its resource must be watched by the same controller;
 * its UID must match the reference (a re-created namesake is another object). A namespaced owner is in
 * its dependent's namespace (owner references never cross namespaces); a cluster-scoped primary
 * (`namespaced: false`) has the key `{namespace: "", name}`.
 * @param maxHops the longest chain followed (default 4); longer chains map to `[]`
 */
export function mapThroughControllers(
  primary: Pick<ResourceType, 'group' | 'kind'> & { namespaced?: boolean },
  maxHops = 4,
): MapFunction {
  return ({ object }, ctx) => {
    let current = object;
    const namespace = object.metadata?.namespace ?? '';
    for (let hop = 0; hop < maxHops; hop++) {
      const ref = controllerRefOf(current);
      if (!ref) return [];
      const group = groupOf(ref.apiVersion);
      if (ref.kind === primary.kind && group === primary.group)
        return [{ namespace: primary.namespaced === false ? '' : namespace, name: ref.name }];
      const next = ctx.get?.({ group, kind: ref.kind }, { namespace, name: ref.name });
      if (!next || next.metadata?.uid !== ref.uid) return [];
      current = next;
    }
    return [];
  };
}
