/**
 * Which events of a controller's PRIMARY resource enqueue its key.
 *
 * controller-runtime's `GenerationChangedPredicate` (drop updates whose `metadata.generation` did
 * not change, i.e. status-only writes), or'ed with its `LabelChangedPredicate` and
 * `AnnotationChangedPredicate`, plus deletionTimestamp, finalizers and ownerReferences, which a
 * reconcile also acts on and which do not bump the generation. Without this a controller that
 * writes its own status would re-enqueue itself forever.
 */
import { isDeepStrictEqual } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { WatchEvent } from '../functions/contract/controller.ts';

/** The metadata fields whose change enqueues a key even when the generation is unchanged. */
export const SIGNIFICANT_METADATA = [
  'labels',
  'annotations',
  'deletionTimestamp',
  'finalizers',
  'ownerReferences',
] as const;

/** `undefined`, `null`, `{}` and `[]` all mean "none" in Kubernetes metadata. */
function normalise(value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  if (Array.isArray(value)) return value.length ? value : undefined;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return Object.keys(value).length ? value : undefined;
  return value;
}

function metadataOf(o: KubernetesObject | undefined): Record<string, unknown> {
  return (o?.metadata ?? {}) as Record<string, unknown>;
}

/**
 * Whether a primary's watch event should enqueue its key.
 *
 * Drops exactly the `MODIFIED` events where the object has a generation (`metadata.generation` set:
 * types with a status subresource or CRDs; Secrets, Namespaces have none, so every update counts),
 * the generation equals the previous one in the relay's cache, and none of
 * {@link SIGNIFICANT_METADATA} changed. `ADDED`, `DELETED`, and `MODIFIED` without a cached
 * `oldObject` always pass.
 * @returns `true` to enqueue, `false` to drop.
 */
export function primaryEventPasses(event: WatchEvent): boolean {
  if (event.type !== 'MODIFIED' || !event.oldObject) return true;
  const now = metadataOf(event.object);
  const old = metadataOf(event.oldObject);
  if (now.generation === undefined || now.generation === null) return true;
  if (now.generation !== old.generation) return true;
  return SIGNIFICANT_METADATA.some(
    (field) => !isDeepStrictEqual(normalise(now[field]), normalise(old[field])),
  );
}
