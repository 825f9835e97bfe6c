/**
 * Watch map functions (controller-runtime's `handler.EnqueueRequestForObject`,
 * `EnqueueRequestForOwner` and `EnqueueRequestsFromMapFunc`): pure functions from a watch event to
 * the primary keys it affects, reading only the event and the relay's caches.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { MapContext, ResourceType, WatchEvent } from '../../core/contract/controller.ts';
import type { MappedKey } from '../../core/contract/key.ts';
import { isDNS1123Label } from '../../core/contract/names.ts';
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

/**
 * The key an annotation of the event's object names, `<namespace>/<name>` (operator-lib's
 * `EnqueueRequestForAnnotation`): the owner of a child in another namespace, which no owner
 * reference can point at (cross-namespace.ts); with a `clusterAnnotation` on the object (a child
 * in another cluster than its owner's), the key is in that cluster ({@link ownerClusterOf}).
 * `[]` when absent or not a key.
 */
export function mapToOwnerAnnotation(tracking: {
  ownerAnnotation: string;
  clusterAnnotation?: string;
}): MapFunction {
  return ({ object }) => {
    const value = object.metadata?.annotations?.[tracking.ownerAnnotation];
    const slash = value?.indexOf('/') ?? -1;
    if (!value || slash <= 0 || slash === value.length - 1) return [];
    const cluster = ownerClusterOf(object, tracking);
    return [
      { namespace: value.slice(0, slash), name: value.slice(slash + 1), ...(cluster ? { cluster } : {}) },
    ];
  };
}

/**
 * The owner's cluster a child in another cluster names in `tracking.clusterAnnotation`, or
 * `undefined` when the object carries none (a child in its owner's cluster), or one that is not a
 * cluster id (a DNS-1123 label).
 */
export function ownerClusterOf(
  object: KubernetesObject,
  tracking: { clusterAnnotation?: string },
): string | undefined {
  if (tracking.clusterAnnotation === undefined) return undefined;
  const value = object.metadata?.annotations?.[tracking.clusterAnnotation];
  return value !== undefined && isDNS1123Label(value) ? value : undefined;
}
