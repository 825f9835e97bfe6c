/**
 * The steps every kit reconcile runs, in order (docs/writing-a-controller.md; the way a
 * controller-runtime reconciler is written by hand), each its own function so that it can be read
 * and tested alone; `defineController` (define.ts) runs them for each key:
 *
 * 0. {@link resolveScope}: which of the primary's children this key names.
 * 1. {@link getPrimary}: GET the primary; gone → done (`notFound`). Being deleted with `finalize`
 *    declared → {@link finalizePrimary} instead of the steps below; without → the steps below, but
 *    no child is written. Otherwise, with `finalize` declared, {@link ensureFinalizer} first.
 * 2. {@link validatePrimary}: parse its spec and check that its children can be labelled.
 * 3. Observe the children: each child set its own way (child-sets.ts).
 * 4. {@link reconcileInput}: what the controller's own reconcile is given; it returns the {@link Desired} state.
 * 5. Converge the children to it (child-sets.ts), also when the primary is gone.
 * 6. {@link desiredConditions}, {@link nextStatus}, {@link StatusWriter}: write the status when it changed.
 * 7. {@link recordSynced}: a Normal `Synced` Event when something changed.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { z } from 'zod';
import type {
  ClusterDirectory,
  EventRecorder,
  PolicyRule,
  ReconcileContext,
  ResourceType,
  Result,
} from '../../core/contract/controller.ts';
import { type Key, keyString } from '../../core/contract/key.ts';
import {
  type ConditionInput,
  parseConditions,
  setCondition,
  statusChanged,
} from '../../core/k8s/conditions.ts';
import { namespacedCustomObjectSchema } from '../../core/k8s/custom-resource.ts';
import { isNotFound, TerminalError } from '../../core/k8s/errors.ts';
import { isControlledBy } from '../../core/k8s/owner.ts';
import type { Logger } from '../../core/log.ts';
import { specRuleViolations, violationText } from './cel.ts';
import { strategyOf } from './child-sets.ts';
import { invalidLabelValues } from './children.ts';
import { type ResourceClient, resourceClient } from './client.ts';
import { addFinalizer, finalizerName, hasFinalizer, removeFinalizer } from './finalizers.ts';
import { readsFor } from './reads.ts';
import { regardingOf } from './resources.ts';
import type {
  ChildListing,
  ClustersInput,
  Desired,
  FinalizeInput,
  FinalizeResult,
  OwnedType,
  PrimaryObject,
  ReconcileInput,
  Scope,
} from './types.ts';

/** The condition every kit controller maintains (Kubernetes API conventions; cluster-api's rules). */
export const READY = 'Ready';
/** Reason of `Ready=False` and of the Warning Event when the spec fails its schema. */
export const INVALID_SPEC = 'InvalidSpec';
/** Reason of the TerminalError when the stored primary lacks the metadata every object has. */
export const INVALID_OBJECT = 'InvalidObject';

const sameResource = (a: ResourceType, b: ResourceType) => a.group === b.group && a.plural === b.plural;

/**
 * Step 0: which of its primary's children the reconcile of `requested` converges, resolved once.
 * A key in the namespace of a primary pinned to `pinnedNamespace` (or any key when none is pinned)
 * names that primary and every child of it; a key in another namespace names the children in that
 * namespace alone of the pinned namespace's primary of its name, and no other cluster. Other
 * clusters are those of `ctx.clusters` but the reconcile's own, none in a plan (`dryRun`).
 * @returns the scope, and `former`: the scope of the children the key named as a primary itself
 *   (every namespace and cluster), to prune first when the key is outside the pinned namespace
 *   (the primary's namespace changed)
 */
export function resolveScope(
  requested: Key,
  pinnedNamespace: string | undefined,
  ctx: Pick<ReconcileContext, 'cluster' | 'clusters' | 'dryRun'>,
): { scope: Scope; former?: Scope } {
  const otherClusters =
    ctx.clusters && !ctx.dryRun ? ctx.clusters.ids.filter((id) => id !== ctx.cluster) : [];
  if (pinnedNamespace === undefined || requested.namespace === pinnedNamespace)
    return { scope: { key: requested, otherClusters } };
  return {
    scope: {
      key: { namespace: pinnedNamespace, name: requested.name },
      namespace: requested.namespace,
      otherClusters: [],
    },
    former: { key: requested, otherClusters },
  };
}

/**
 * Step 1: GET the primary `key` of `primary` (1 request): not older than `resourceVersion` when
 * given (ReconcileContext.primaryResourceVersion), else the latest.
 * @returns the object (also when being deleted: `metadata.deletionTimestamp` set), or `undefined`
 *   when it is gone (404: garbage collection removes its children)
 * @throws {TerminalError} `InvalidObject` when the stored object lacks the metadata every object has;
 *   API errors as thrown (retried)
 */
export async function getPrimary(
  client: ResourceClient,
  primary: ResourceType,
  key: Key,
  resourceVersion?: string,
): Promise<PrimaryObject | undefined> {
  let raw: KubernetesObject;
  try {
    raw = await client.get(
      primary,
      key.namespace,
      key.name,
      resourceVersion ? { resourceVersion } : undefined,
    );
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  // A cluster-scoped object has no namespace: `""`, as its key (client-go's MetaNamespaceKeyFunc).
  const scoped = primary.namespaced ? raw : { ...raw, metadata: { ...raw.metadata, namespace: '' } };
  const parsed = namespacedCustomObjectSchema.safeParse(scoped);
  if (!parsed.success)
    throw new TerminalError(
      INVALID_OBJECT,
      `${keyString(key)}: not a ${primary.kind}: ${parsed.error.message}`,
    );
  return parsed.data;
}

/**
 * Step 1a (a primary being deleted, `finalize` declared): calls `finalize` while the object carries
 * the controller's finalizer, then removes that finalizer, and only it ({@link removeFinalizer}).
 * @returns `{}` when finalized (or released already: the API server deletes the object), or the
 *   requeue `finalize` asked for (the finalizer stays)
 * @throws {TerminalError} from `finalize` (the caller keeps the finalizer and reports it);
 *   API errors of the patch (409 when the finalizers changed meanwhile: retried from a fresh read)
 */
export async function finalizePrimary<Spec>(args: {
  controller: string;
  primary: ResourceType;
  input: FinalizeInput<Spec>;
  finalize: (input: FinalizeInput<Spec>) => Promise<FinalizeResult> | FinalizeResult;
  /** `finalize` honours `dryRun` (writes nothing outside the cluster, reports `planExternal`): called in a plan too. */
  finalizePlans?: boolean;
}): Promise<Result> {
  const { controller, primary, input } = args;
  const finalizer = finalizerName(controller);
  const object = input.object as KubernetesObject;
  if (!hasFinalizer(object, finalizer)) return {};
  if (input.dryRun && !args.finalizePlans) {
    // A plan: `finalize` acts outside the cluster, where nothing is dry-run; its end, the removal
    // of the finalizer, is sent as a dry-run.
    input.log.info({ finalizer }, 'dry-run: finalize not called');
  } else {
    const result = await args.finalize(input);
    if (result) return { requeueAfterMs: result.requeueAfterMs };
  }
  await removeFinalizer(input.kubeConfig, primary, object, finalizer);
  input.log.info({ finalizer }, 'finalized; finalizer removed');
  return {};
}

/**
 * Step 1b (`finalize` declared, object not being deleted): adds the controller's finalizer before
 * the reconcile can create anything outside the cluster, so that a delete waits for `finalize`
 * (1 PATCH the first time, no request after).
 * @throws as {@link addFinalizer}
 */
export async function ensureFinalizer(
  kubeConfig: KubeConfig,
  controller: string,
  primary: ResourceType,
  object: PrimaryObject,
  log: Logger,
): Promise<KubernetesObject | undefined> {
  const finalizer = finalizerName(controller);
  if (hasFinalizer(object as KubernetesObject, finalizer)) return undefined;
  const patched = await addFinalizer(kubeConfig, primary, object as KubernetesObject, finalizer);
  log.info({ finalizer }, 'finalizer added');
  return patched;
}

/**
 * Step 2: the primary's spec parsed by `schema` and checked by its CEL rules and list types (cel.ts:
 * those the CRD declares, transition rules skipped), and a check that the labels its children are listed
 * by are valid label values (an object whose name cannot be a label value cannot have children, and a
 * LIST by that selector would answer 400 on every delivery). No request.
 * @returns `{ spec }`, or `{ invalid }`: the message of the `Ready=False/InvalidSpec` condition
 */
export function validatePrimary<Schema extends z.ZodType>(
  object: PrimaryObject,
  schema: Schema,
  children: { controller: string; owns: readonly OwnedType[] },
): { spec: z.infer<Schema> } | { invalid: string } {
  const key = { namespace: object.metadata.namespace, name: object.metadata.name };
  const spec = schema.safeParse(object.spec ?? {});
  if (!spec.success) {
    const issues = spec.error.issues.map((i) => `spec.${i.path.join('.')}: ${i.message}`).join('; ');
    return { invalid: `${keyString(key)}: invalid spec: ${issues}` };
  }
  // The CRD's CEL rules and list types, as the API server checks them on a write: an object stored
  // before a rule existed (or through a server that does not check it) is refused here.
  const violations = specRuleViolations(schema, object.spec ?? {});
  if (violations.length > 0)
    return { invalid: `${keyString(key)}: invalid spec: ${violations.map(violationText).join('; ')}` };
  const badLabels = children.owns.flatMap((type) =>
    invalidLabelValues(strategyOf(type).labels(children.controller, type, object)),
  );
  if (badLabels.length > 0)
    return { invalid: `${keyString(key)}: cannot label its children: ${badLabels.join('; ')}` };
  return { spec: spec.data };
}

/**
 * Step 4: what the controller's reconcile is given: the object, its parsed spec, the children it
 * controls of each owned type, and reads (`list`, `get`, `patchMetadata`) checked against its RBAC
 * (`rbac`, reads.ts).
 */
export function reconcileInput<Spec>(
  args: ReconcileContext & {
    controller: string;
    key: Key;
    object: PrimaryObject;
    spec: Spec;
    deleting: boolean;
    scope: Scope;
    listings: readonly ChildListing[];
    rbac: readonly PolicyRule[];
    client: ResourceClient;
  },
): ReconcileInput<Spec> {
  const { controller, key, object, listings, rbac, client } = args;
  return {
    key,
    object,
    spec: args.spec,
    deleting: args.deleting,
    scope: args.scope,
    owned: <T extends KubernetesObject>(resource: ResourceType<T>) =>
      (listings.find((l) => sameResource(l.type.resource, resource))?.listed ?? []).filter((o) =>
        isControlledBy(o, object),
      ) as T[],
    ...readsFor(controller, rbac, client, key.namespace),
    log: args.log,
    events: args.events,
    kubeConfig: args.kubeConfig,
    dryRun: args.dryRun ?? false,
    planExternal: args.planExternal ?? (() => {}),
    clusters: clustersInput({
      controller,
      rbac,
      namespace: key.namespace,
      self: args.cluster,
      others: args.scope.otherClusters,
      directory: args.clusters,
    }),
  };
}

/**
 * The {@link ClustersInput} of a reconcile in cluster `self`: the clusters `others` (its scope's
 * other clusters), each read through a client of its KubeConfig in `directory`, checked against `rbac`.
 */
export function clustersInput(args: {
  controller: string;
  rbac: readonly PolicyRule[];
  namespace: string;
  self: string;
  others: readonly string[];
  directory: ClusterDirectory | undefined;
}): ClustersInput {
  const { directory, self, others } = args;
  return {
    self,
    others,
    reads(id) {
      const kubeConfig = others.includes(id) ? directory?.kubeConfig(id) : undefined;
      if (!kubeConfig)
        throw new Error(`${args.controller}: "${id}" is not another cluster of this deployment`);
      return readsFor(args.controller, args.rbac, resourceClient(kubeConfig), args.namespace);
    },
  };
}

/** `{observedGeneration}` of `object`, or `{}` when it has no generation. */
export function observedOf(object: PrimaryObject): { observedGeneration?: number } {
  const generation = object.metadata.generation;
  return generation !== undefined ? { observedGeneration: generation } : {};
}

/**
 * Step 6a: the conditions a reconcile's result sets: `Ready` (default `True/Reconciled`) and its
 * other conditions, each with the object's `observedGeneration`.
 */
export function desiredConditions(desired: Desired, object: PrimaryObject): ConditionInput[] {
  const observed = observedOf(object);
  const ready = desired.ready ?? { status: true, reason: 'Reconciled', message: '' };
  return [
    {
      type: READY,
      status: ready.status ? 'True' : 'False',
      reason: ready.reason,
      message: ready.message,
      ...observed,
    },
    ...(desired.conditions ?? []).map((c) => ({ ...c, ...observed })),
  ];
}

/**
 * Step 6b: the status to write: `status` with `observedGeneration` and the stored conditions updated
 * by `conditions` (apimachinery's `meta.SetStatusCondition`); `undefined` when it equals the stored one.
 */
export function nextStatus(
  object: PrimaryObject,
  status: Record<string, unknown>,
  conditions: readonly ConditionInput[],
): Record<string, unknown> | undefined {
  let list = parseConditions(object.status?.conditions);
  for (const c of conditions) list = setCondition(list, c);
  const next = { ...status, ...observedOf(object), conditions: list };
  return statusChanged(object.status, next) ? next : undefined;
}

/** Step 6c: writes a primary's status; see {@link statusWriter}. */
export interface StatusWriter {
  /** Merge-patches the status when {@link nextStatus} says it changed (1 request, else none); `true` when written. */
  write(status: Record<string, unknown>, conditions: readonly ConditionInput[]): Promise<boolean>;
  /**
   * Writes `Ready=False/<reason>`, then throws the TerminalError that the runtime answers with a
   * Warning Event on the object.
   * @throws {TerminalError} always
   */
  fail(reason: string, message: string, cause?: unknown): Promise<never>;
}

/** A {@link StatusWriter} of `object` through the `status` subresource; a primary gone meanwhile (404) is not written. */
export function statusWriter(
  client: ResourceClient,
  primary: ResourceType,
  object: PrimaryObject,
): StatusWriter {
  const { namespace, name } = object.metadata;
  const write = async (status: Record<string, unknown>, conditions: readonly ConditionInput[]) => {
    // A type without a status subresource (a Secret) has no status to write: Events report it.
    if (primary.statusSubresource === false) return false;
    const next = nextStatus(object, status, conditions);
    if (!next) return false;
    try {
      await client.patchStatus(primary, namespace, name, next);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  };
  return {
    write,
    async fail(reason, message, cause) {
      await write({}, [{ type: READY, status: 'False', reason, message, ...observedOf(object) }]);
      throw new TerminalError(reason, message, { cause, object: regardingOf(object) });
    },
  };
}

/**
 * Step 7: records the Normal `Synced` Event with `message` on `object` when the reconcile `changed`
 * something (children or status); `message: false` records none.
 */
export async function recordSynced(
  events: EventRecorder,
  object: PrimaryObject,
  message: string | false,
  changed: boolean,
): Promise<void> {
  if (changed && message !== false) await events.record(regardingOf(object), 'Normal', 'Synced', message);
}

/** The {@link Result} of a reconcile's {@link Desired} state. */
export function resultOf(desired: Desired): Result {
  return desired.requeueAfterMs !== undefined ? { requeueAfterMs: desired.requeueAfterMs } : {};
}
