/**
 * References that hold: a primary that other objects reference is not deleted from under them.
 * CRDs have no foreign keys, so a `Topic` deleted while a `Subscription` names it goes at once and
 * Pub/Sub detaches the subscription (`_deleted-topic_`). A controller declares who references its
 * primaries (`referencedBy`), and then, as Crossplane's `Usage` does with a finalizer:
 * - the kit puts the controller's finalizer on every primary;
 * - a primary being deleted while a referrer exists (one being deleted counts: it may still hold
 *   something outside the cluster that needs the primary) waits: `Ready=False/StillReferenced`
 *   naming the referrers, a Warning Event `DeletionBlocked`, no `finalize`;
 * - the wait is a requeue ({@link recheckAfterMs}), so the delete completes by itself once the last
 *   referrer is gone;
 * - a reconcile that set back what the primary holds outside the cluster (`driftCorrected`: a topic
 *   recreated after it was deleted out of band) returns its referrers (`Result.referrers`), which
 *   the runtime reconciles next: what they hold may have gone with it (Pub/Sub detached the
 *   subscriptions of the deleted topic), and no watch event says so.
 *
 *   referencedBy: [{ resource: subscriptions, references: (sub) => [`${sub.metadata?.namespace}/${sub.spec?.topicRef?.name}`] }],
 *
 * A reference is the referenced primary's `namespace/name` (`name` when cluster-scoped), as a spec
 * index's values are (index-spec.ts `namespacedName`); referrers are looked for in the primary's
 * namespace (cluster-wide for a cluster-scoped primary).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { EventRecorder, Referrer, ResourceType, Result } from '../../core/contract/controller.ts';
import { isNotFound } from '../../core/k8s/errors.ts';
import type { ResourceClient } from './client.ts';
import { namespacedName } from './index-spec.ts';
import { regardingOf } from './resources.ts';
import { observedOf, READY, type StatusWriter } from './steps.ts';
import type { PrimaryObject } from './types.ts';

/** Who references a controller's primaries. */
export interface ReferencedBy {
  /** The referrers' resource (another controller's primary, usually: import its `api.ts`). */
  resource: ResourceType;
  /**
   * The primaries a referrer references, as `namespace/name` (`name` when cluster-scoped). Gets the
   * object as the API server has it (the spec is not parsed: answer `[]` for what it cannot read).
   */
  references(referrer: KubernetesObject): readonly string[];
}

/** The condition reason, and the Event reason, of a delete that waits for its referrers. */
export const STILL_REFERENCED = 'StillReferenced';
export const DELETION_BLOCKED = 'DeletionBlocked';

const referencesOf = (by: ReferencedBy, object: KubernetesObject): readonly string[] => {
  try {
    return by.references(object);
  } catch {
    return [];
  }
};

/**
 * The objects that reference `primary`: 1 LIST per declared resource, in the primary's namespace
 * (all namespaces for a cluster-scoped primary). A resource the API server does not serve (404: its
 * CRD is not installed) has no referrers.
 * @throws what the LIST throws besides 404 (403 when the controller lacks `list` on a referrer's resource).
 */
export async function referringObjects(
  client: ResourceClient,
  referencedBy: readonly ReferencedBy[],
  primary: KubernetesObject,
): Promise<Referrer[]> {
  const target = namespacedName(primary);
  const lists = await Promise.all(
    referencedBy.map(async (by) =>
      (
        await client.list(by.resource, primary.metadata?.namespace).catch((err: unknown) => {
          // 404 on a LIST: the resource is not served (its CRD not installed), so nothing references.
          if (isNotFound(err)) return [];
          throw err;
        })
      )
        .filter((o) => referencesOf(by, o).includes(target))
        .map((o) => ({
          resource: { group: by.resource.group, kind: by.resource.kind },
          namespace: o.metadata?.namespace ?? '',
          name: o.metadata?.name ?? '',
        })),
    ),
  );
  return lists.flat();
}

/**
 * The referrers of `primary` ({@link referringObjects}), as `Kind namespace/name`, sorted.
 * @throws what {@link referringObjects} throws
 */
export async function referrersOf(
  client: ResourceClient,
  referencedBy: readonly ReferencedBy[],
  primary: KubernetesObject,
): Promise<string[]> {
  return (await referringObjects(client, referencedBy, primary))
    .map((r) => `${r.resource.kind} ${r.namespace ? `${r.namespace}/` : ''}${r.name}`)
    .sort();
}

/**
 * When a delete that waits for referrers looks again (ms): a tenth of how long it has waited
 * (since `deletionTimestamp`), between 1 s and 5 min, so a referrer removed soon after is seen
 * soon and a delete held for days costs one LIST per referrer resource every 5 minutes. A requeue,
 * not a watch: the relay's watches see a referrer's metadata alone, not the references in its spec.
 */
export function recheckAfterMs(primary: KubernetesObject, now: number = Date.now()): number {
  const since = Date.parse(String(primary.metadata?.deletionTimestamp ?? ''));
  const waited = Number.isNaN(since) ? 0 : Math.max(0, now - since);
  return Math.min(300_000, Math.max(1_000, Math.round(waited / 10)));
}

/**
 * Step 1a′ (a primary being deleted, `referencedBy` declared): holds the delete while referrers
 * exist. 1 LIST per referrer resource; when held, a status PATCH (only when the condition changed)
 * and a Warning Event.
 * @returns the requeue of a held delete, or `undefined` when nothing references the primary
 */
export async function holdWhileReferenced(args: {
  client: ResourceClient;
  referencedBy: readonly ReferencedBy[];
  object: PrimaryObject;
  status: StatusWriter;
  events: EventRecorder;
}): Promise<Result | undefined> {
  const { object } = args;
  const referrers = await referrersOf(args.client, args.referencedBy, object as KubernetesObject);
  if (referrers.length === 0) return undefined;
  const message = `deletion waits until nothing references it: ${referrers.join(', ')}`;
  await args.status.write({}, [
    { type: READY, status: 'False', reason: STILL_REFERENCED, message, ...observedOf(object) },
  ]);
  await args.events.record(regardingOf(object), 'Warning', DELETION_BLOCKED, message);
  return { requeueAfterMs: recheckAfterMs(object as KubernetesObject) };
}
