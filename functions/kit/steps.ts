/**
 * The steps every kit reconcile runs, in order (docs/writing-a-controller.md; the way a
 * controller-runtime reconciler is written by hand), each its own function so that it can be read
 * and tested alone; `defineController` (define.ts) runs them for each key:
 *
 * 1. {@link getPrimary}: GET the primary; gone → done (`notFound`). Being deleted with `finalize`
 *    declared → {@link finalizePrimary} instead of the steps below; without → the steps below, but
 *    no child is written. Otherwise, with `finalize` declared, {@link ensureFinalizer} first.
 * 2. {@link validatePrimary}: parse its spec and check that its children can be labelled.
 * 3. Observe the children: each kind of child set its own way (child-sets.ts).
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
  ExternalChange,
  PolicyRule,
  ResourceType,
  Result,
} from '../../core/contract/controller.ts';
import { DEFAULT_CLUSTER, type Key, keyString } from '../../core/contract/key.ts';
import {
  type ConditionInput,
  parseConditions,
  setCondition,
  statusChanged,
} from '../../core/k8s/conditions.ts';
import { namespacedCustomObjectSchema } from '../../core/k8s/custom-resource.ts';
import { isNotFound, TerminalError } from '../../core/k8s/errors.ts';
import { isControlledBy } from '../../core/k8s/owner.ts';
import { apiVersionOf } from '../../core/k8s/rest.ts';
import type { Logger } from '../../core/log.ts';
import { childLabels, invalidLabelValues, type OwnedType } from './children.ts';
import { type ResourceClient, resourceClient } from './client.ts';
import { addFinalizer, finalizerName, hasFinalizer, removeFinalizer } from './finalizers.ts';
import { type Reads, readsFor } from './reads.ts';

/** The condition every kit controller maintains (Kubernetes API conventions; cluster-api's rules). */
export const READY = 'Ready';
/** Reason of `Ready=False` and of the Warning Event when the spec fails its schema. */
export const INVALID_SPEC = 'InvalidSpec';
/** Reason of the TerminalError when the stored primary lacks the metadata every object has. */
export const INVALID_OBJECT = 'InvalidObject';

/**
 * The primary object as a reconcile sees it: metadata validated, `spec` as stored, `status` as stored.
 * `metadata.namespace` is `""` for a cluster-scoped primary (as its key's).
 */
export type PrimaryObject = z.infer<typeof namespacedCustomObjectSchema>;

/** The `Ready` condition a reconcile reports; `observedGeneration` is added by the kit. */
export interface ReadyInput {
  status: boolean;
  /** UpperCamelCase, e.g. `DeploymentAvailable`. */
  reason: string;
  message: string;
}

/** What a reconcile returns: the desired state. Every member is optional. */
export interface Desired {
  /**
   * Every child the primary should have now, of the owned types (apiVersion, kind, metadata.name,
   * spec…). The kit sets namespace, labels and the controller reference, creates the missing, applies
   * the changed, and prunes the owned children not listed. Omitted: children are left alone.
   */
  children?: KubernetesObject[];
  /** Status fields besides `conditions` and `observedGeneration` (merge-patched when changed). */
  status?: Record<string, unknown>;
  /** The `Ready` condition; default `True`/`Reconciled`. */
  ready?: ReadyInput;
  /** Other conditions, set idempotently like `Ready`. */
  conditions?: Omit<ConditionInput, 'observedGeneration'>[];
  /** Ask for the key to come back after this many ms. */
  requeueAfterMs?: number;
  /**
   * The reconcile set back a change made outside Kubernetes (`Result.driftCorrected`: counted as
   * drift with its source). Set by the kit's external resources (functions/kit/external.ts).
   */
  driftCorrected?: boolean;
  /**
   * Children in other namespaces only: namespaces whose children are left as they are, neither
   * written nor pruned (e.g. namespaces being deleted, which take their objects with them).
   */
  retainNamespaces?: readonly string[];
  /**
   * Children in other clusters (types owned `inOtherNamespaces` whose tracking declares a
   * `clusterAnnotation`), by cluster id (one of `ReconcileInput.clusters.others`): every child the
   * primary should have in that cluster, each with its namespace, and that cluster's namespaces to
   * leave alone. A cluster of the registry absent here is left as it is (e.g. unreachable now);
   * `{children: []}` prunes every child of the primary there. Ignored for a key naming one
   * namespace (`onlyNamespace`), and where the runtime gives no clusters (a plan, the in-process
   * mode). When the primary is gone or being deleted, the kit prunes its children in every other
   * cluster whatever this says.
   */
  otherClusters?: Readonly<Record<string, OtherClusterChildren>>;
}

/** The children a primary should have in one other cluster ({@link Desired.otherClusters}). */
export interface OtherClusterChildren {
  children: readonly KubernetesObject[];
  /** Namespaces of that cluster whose children are neither written nor pruned. */
  retainNamespaces?: readonly string[];
}

/** The other clusters a reconcile may read, for children in other clusters ({@link Desired.otherClusters}). */
export interface ClustersInput {
  /** The reconcile's own cluster id (the key's). */
  self: string;
  /**
   * Every other cluster id of the registry, in configuration order; `[]` where the runtime gives
   * no clusters (single cluster, a plan, the in-process mode) or for a key naming one namespace
   * (`onlyNamespace`).
   */
  others: readonly string[];
  /**
   * The reads of the controller in cluster `id` (one of `others`), checked against its RBAC as
   * the reads of its own cluster are (the functions' identity has the same rules in every cluster).
   * @throws {Error} when `id` is not one of `others`, or its KubeConfig cannot be made
   */
  reads(id: string): Reads;
}

/** What a reconcile receives. */
export interface ReconcileInput<Spec> {
  key: Key;
  /** The primary, as just read from the API server. */
  object: PrimaryObject;
  /** Its spec, parsed by the controller's schema. */
  spec: Spec;
  /**
   * Set when the key names the primary's children in one other namespace (a primary pinned to a
   * namespace, `defineController`'s `namespace`): return the children of that namespace; children
   * in other namespaces are left as they are.
   */
  onlyNamespace?: string;
  /**
   * `true` when the object is being deleted (`deletionTimestamp` set: another party's finalizer holds
   * it) and the controller declares no `finalize`: the kit then writes no children (garbage
   * collection removes them) but still writes the status the reconcile returns.
   */
  deleting: boolean;
  /** The live children, of each owned type, that this object controls (listed before the reconcile). */
  owned(resource: ResourceType): KubernetesObject[];
  /**
   * LISTs a resource in the object's namespace (or `namespace`, or `allNamespaces`): one request.
   * @throws {Error} when the controller's RBAC does not grant `list` on it (functions/kit/reads.ts)
   */
  list: Reads['list'];
  /** GETs an object, in the object's namespace or `namespace`; `undefined` when absent. Needs `get` in the RBAC. */
  get: Reads['get'];
  /** Merge-patches the labels/annotations of an object the controller does not own. Needs `patch` in the RBAC. */
  patchMetadata: Reads['patchMetadata'];
  /** Logger labelled with controller and key. */
  log: Logger;
  events: EventRecorder;
  kubeConfig: KubeConfig;
  /**
   * `true` in a plan (`levelset plan`): every Kubernetes write through `kubeConfig` is a server-side
   * dry-run; write nothing outside the cluster (read, and log what you would do).
   */
  dryRun: boolean;
  /**
   * In a plan (`dryRun`), reports a change the reconcile would make outside the cluster; `levelset
   * plan` lists it as a planned change. A no-op outside a plan. (The kit's external resources call
   * it: functions/kit/external.ts.)
   */
  planExternal(change: ExternalChange): void;
  /** The other clusters of the deployment, for children in other clusters ({@link Desired.otherClusters}). */
  clusters: ClustersInput;
}

/** What `finalize` receives: the object being deleted, still carrying the controller's finalizer. */
export interface FinalizeInput<Spec>
  extends Pick<
    ReconcileInput<Spec>,
    'key' | 'list' | 'get' | 'patchMetadata' | 'log' | 'events' | 'kubeConfig' | 'dryRun' | 'planExternal'
  > {
  /** The primary, as just read (`deletionTimestamp` set). */
  object: PrimaryObject;
  /** Its spec parsed by the schema, or `undefined` when the stored spec fails it (finalize anyway: use `status`). */
  spec: Spec | undefined;
}

/**
 * What `finalize` returns: nothing when done (the kit then removes the finalizer), or
 * `{ requeueAfterMs }` when not done yet (e.g. a long-running cloud operation): the finalizer stays
 * and the key comes back after that many ms.
 */
export type FinalizeResult = { requeueAfterMs: number } | undefined;

/** The children of one owned type, as listed by its labels before the reconcile. */
export interface ChildListing {
  type: OwnedType;
  listed: KubernetesObject[];
}

const sameResource = (a: ResourceType, b: ResourceType) => a.group === b.group && a.plural === b.plural;

/**
 * Step 1: GET the primary `key` of `primary` (1 request).
 * @returns the object (also when being deleted: `metadata.deletionTimestamp` set), or `undefined`
 *   when it is gone (404: garbage collection removes its children)
 * @throws {TerminalError} `InvalidObject` when the stored object lacks the metadata every object has;
 *   API errors as thrown (retried)
 */
export async function getPrimary(
  client: ResourceClient,
  primary: ResourceType,
  key: Key,
): Promise<PrimaryObject | undefined> {
  let raw: KubernetesObject;
  try {
    raw = await client.get(primary, key.namespace, key.name);
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
): Promise<void> {
  const finalizer = finalizerName(controller);
  if (hasFinalizer(object as KubernetesObject, finalizer)) return;
  await addFinalizer(kubeConfig, primary, object as KubernetesObject, finalizer);
  log.info({ finalizer }, 'finalizer added');
}

/**
 * Step 2: the primary's spec parsed by `schema`, and a check that the labels its children are listed
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
  const badLabels = children.owns.flatMap((type) =>
    invalidLabelValues(
      type.inOtherNamespaces
        ? type.inOtherNamespaces.labels(key)
        : childLabels(children.controller, type, object),
    ),
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
export function reconcileInput<Spec>(args: {
  controller: string;
  key: Key;
  object: PrimaryObject;
  spec: Spec;
  deleting: boolean;
  onlyNamespace?: string;
  listings: readonly ChildListing[];
  rbac: readonly PolicyRule[];
  client: ResourceClient;
  log: Logger;
  events: EventRecorder;
  kubeConfig: KubeConfig;
  dryRun?: boolean;
  planExternal?: (change: ExternalChange) => void;
  /** The reconcile's cluster and its registry (`ReconcileContext`); `clusters` absent: no other cluster. */
  cluster?: string;
  clusters?: ClusterDirectory;
}): ReconcileInput<Spec> {
  const { controller, key, object, listings, rbac, client } = args;
  return {
    key,
    object,
    spec: args.spec,
    deleting: args.deleting,
    ...(args.onlyNamespace !== undefined ? { onlyNamespace: args.onlyNamespace } : {}),
    owned: (resource) =>
      (listings.find((l) => sameResource(l.type.resource, resource))?.listed ?? []).filter((o) =>
        isControlledBy(o, object),
      ),
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
      self: args.cluster ?? DEFAULT_CLUSTER,
      // A key naming one namespace converges that namespace of its own cluster alone.
      directory: args.onlyNamespace === undefined && !args.dryRun ? args.clusters : undefined,
    }),
  };
}

/**
 * The {@link ClustersInput} of a reconcile in cluster `self`: the other clusters of `directory`
 * (none without one), each read through a client of its own KubeConfig, checked against `rbac`.
 */
export function clustersInput(args: {
  controller: string;
  rbac: readonly PolicyRule[];
  namespace: string;
  self: string;
  directory: ClusterDirectory | undefined;
}): ClustersInput {
  const { directory, self } = args;
  const others = directory ? directory.ids.filter((id) => id !== self) : [];
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

/** Whether `object` is of `resource` (its apiVersion and kind). */
export function isOfType(object: KubernetesObject, resource: ResourceType): boolean {
  return object.apiVersion === apiVersionOf(resource) && object.kind === resource.kind;
}

/** An Event's `regarding`: apiVersion, kind and metadata, never the object's data or spec. */
export function regardingOf(object: PrimaryObject | KubernetesObject): KubernetesObject {
  return { apiVersion: object.apiVersion, kind: object.kind, metadata: object.metadata } as KubernetesObject;
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
