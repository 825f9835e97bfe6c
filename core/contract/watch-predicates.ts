/**
 * The predicates every watch event passes before a watch's own predicate and map (the `Watch`
 * contract, controller.ts): the primary predicate on the events of a controller's primary resource,
 * and the status predicate on those of a secondary watch that declares `Watch.readsStatus`. Pure
 * functions of the event, here so that the relay (relay/predicate.ts, relay/pipeline.ts) and the
 * kit's test helper (functions/kit/testing.ts `keysFor`) run the same ones.
 *
 * controller-runtime's `GenerationChangedPredicate` (drop updates whose `metadata.generation` did
 * not change, i.e. status-only writes), or'ed with its `LabelChangedPredicate` and
 * `AnnotationChangedPredicate`, plus deletionTimestamp, finalizers and ownerReferences, which a
 * reconcile also acts on and which do not bump the generation. Without this a controller that
 * writes its own status would re-enqueue itself forever.
 */
import { isDeepStrictEqual } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Controller, Watch, WatchEvent } from './controller.ts';

/** The metadata fields whose change enqueues a key even when the generation is unchanged. */
export const SIGNIFICANT_METADATA = [
  'labels',
  'annotations',
  'deletionTimestamp',
  'finalizers',
  'ownerReferences',
] as const;

/**
 * Annotations that kube-controller-manager writes on an object as a record of its rollout, the way
 * it writes status, and that no author sets: the deployment controller's
 * `deployment.kubernetes.io/revision` on a Deployment and its ReplicaSets, and the
 * `revision-history`, `desired-replicas` and `max-replicas` annotations on ReplicaSets (constants
 * of kubernetes `pkg/controller/deployment/util/deployment_util.go`). The status predicate
 * ({@link statusEventPassesWith}) counts them as status: a child's revision numbered after its
 * owner created it reaches the owner only when what the owner reads of its status changed (a
 * watch that reads the revision says so in its `readsStatus`, which gets the whole object).
 */
export const STATUS_ANNOTATIONS: readonly string[] = [
  'deployment.kubernetes.io/revision',
  'deployment.kubernetes.io/revision-history',
  'deployment.kubernetes.io/desired-replicas',
  'deployment.kubernetes.io/max-replicas',
];

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

/** Whether `watch` lists+watches the controller's primary resource (same group and plural). */
export function isPrimaryWatch(controller: Controller, watch: Watch): boolean {
  return (
    watch.resource.group === controller.primary.group && watch.resource.plural === controller.primary.plural
  );
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
  return generationOrMetadataChanged(event, []);
}

/** {@link primaryEventPasses}, with changes of `ignoredAnnotations` alone not counted. */
function generationOrMetadataChanged(event: WatchEvent, ignoredAnnotations: readonly string[]): boolean {
  if (event.type !== 'MODIFIED' || !event.oldObject) return true;
  const now = metadataOf(event.object);
  const old = metadataOf(event.oldObject);
  if (now.generation === undefined || now.generation === null) return true;
  if (now.generation !== old.generation) return true;
  return significantMetadataChanged(event.object, event.oldObject, ignoredAnnotations);
}

/** `annotations` without those named in `ignored` (the same object when it has none of them). */
function annotationsWithout(annotations: unknown, ignored: readonly string[]): unknown {
  if (!annotations || typeof annotations !== 'object') return annotations;
  if (!ignored.some((name) => Object.hasOwn(annotations, name))) return annotations;
  const kept = { ...(annotations as Record<string, unknown>) };
  for (const name of ignored) delete kept[name];
  return kept;
}

/**
 * Whether any of {@link SIGNIFICANT_METADATA} differs between `object` and `oldObject` (none = `{}`
 * = `[]`).
 * @param ignoredAnnotations annotations whose change does not count (the status predicate's
 *   {@link STATUS_ANNOTATIONS}); default none
 */
export function significantMetadataChanged(
  object: KubernetesObject,
  oldObject: KubernetesObject,
  ignoredAnnotations: readonly string[] = [],
): boolean {
  const now = metadataOf(object);
  const old = metadataOf(oldObject);
  return SIGNIFICANT_METADATA.some((field) =>
    field === 'annotations'
      ? !isDeepStrictEqual(
          normalise(annotationsWithout(now[field], ignoredAnnotations)),
          normalise(annotationsWithout(old[field], ignoredAnnotations)),
        )
      : !isDeepStrictEqual(normalise(now[field]), normalise(old[field])),
  );
}

/**
 * Whether an event of a secondary watch that declares `readsStatus` should enqueue its keys
 * (controller-runtime's `GenerationChangedPredicate` or'ed with a predicate on the status fields
 * the reconcile reads): drops exactly the `MODIFIED` events that {@link primaryEventPasses} drops
 * (same generation, no significant metadata change, {@link STATUS_ANNOTATIONS} counted as status)
 * AND whose status read is known, before and after, and unchanged: a Deployment's
 * `observedGeneration` or `readyReplicas` moving, or kube-controller-manager numbering its first
 * revision, when its owner reads `availableReplicas` alone. Without a known read on either side
 * the event passes: nothing is dropped on what was not compared.
 * @param statusReadOf the JSON of what the watches read of an object's status (`Watch.readsStatus`),
 *   `undefined` when unknown (the relay's informer records it from the whole object)
 * @returns `true` to enqueue, `false` to drop.
 */
export function statusEventPassesWith(
  event: WatchEvent,
  statusReadOf: (object: KubernetesObject) => string | undefined,
): boolean {
  if (event.type !== 'MODIFIED' || !event.oldObject) return true;
  const now = statusReadOf(event.object);
  const old = statusReadOf(event.oldObject);
  if (now === undefined || old === undefined || now !== old) return true;
  return generationOrMetadataChanged(event, STATUS_ANNOTATIONS);
}
