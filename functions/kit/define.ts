/**
 * `defineController`: the one way to declare a controller. It takes the primary type and its zod
 * spec, the children it owns, the secondary resources it watches and a reconcile that returns the
 * desired children and status; it returns the {@link Controller} the registry lists, with its
 * watches (map functions included) and its RBAC derived from what it declares.
 *
 * Every reconcile then runs the same steps, the way controller-runtime reconcilers are written by
 * hand: GET the primary (gone → done: garbage collection removes its children); while it is being
 * deleted, call `finalize` (when declared) until done and remove the controller's finalizer
 * (finalizers.ts); validate its spec (invalid → `Ready=False/InvalidSpec` + Warning Event, no retry);
 * LIST each owned type by label (one request per type); call the reconcile; create/apply/prune the
 * children (none while the object is being deleted; the finalizer is added first when `finalize` is
 * declared); write the status through the `status` subresource when it changed, with `Ready` and
 * `observedGeneration` (Kubernetes API conventions: conditions); record a `Synced` Event when
 * something changed. A converged object costs 1 GET + 1 LIST per owned type, plus the reconcile's
 * own reads, and no write.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { z } from 'zod';
import type {
  Controller,
  Key,
  PolicyRule,
  ReconcileContext,
  ResourceType,
  Result,
  Verb,
} from '../controllers/types.ts';
import type { Logger } from '../log.ts';
import { keyString } from '../message.ts';
import { type ConditionInput, parseConditions, setCondition, statusChanged } from '../runtime/conditions.ts';
import { namespacedCustomObjectSchema } from '../runtime/custom-resource.ts';
import { isNotFound, TerminalError } from '../runtime/errors.ts';
import { EVENT_RECORDER_RULE, type EventRecorder } from '../runtime/events.ts';
import { isControlledBy } from '../runtime/owner.ts';
import {
  childLabels,
  invalidLabelValues,
  type OwnedType,
  type Owner,
  reconcileChildren,
  selectorOf,
} from './children.ts';
import { resourceClient } from './client.ts';
import { addFinalizer, finalizerName, hasFinalizer, removeFinalizer } from './finalizers.ts';
import { type MapFunction, mapThroughControllers, mapToSelf } from './map.ts';

/** The condition every kit controller maintains (Kubernetes API conventions; cluster-api's rules). */
export const READY = 'Ready';
/** Reason of `Ready=False` and of the Warning Event when the spec fails its schema. */
export const INVALID_SPEC = 'InvalidSpec';

/**
 * The primary object as a reconcile sees it: metadata validated, `spec` as stored, `status` as stored.
 * `metadata.namespace` is `""` for a cluster-scoped primary (as its key's).
 */
export type PrimaryObject = z.infer<typeof namespacedCustomObjectSchema>;

/** A secondary watch: a resource whose events map to primary keys (default: through controller references). */
export interface SecondaryWatch {
  resource: ResourceType;
  /** Default {@link mapThroughControllers} to the primary. */
  map?: MapFunction;
  labelSelector?: string;
  namespace?: string;
}

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
}

/** What a reconcile receives. */
export interface ReconcileInput<Spec> {
  key: Key;
  /** The primary, as just read from the API server. */
  object: PrimaryObject;
  /** Its spec, parsed by the controller's schema. */
  spec: Spec;
  /**
   * `true` when the object is being deleted (`deletionTimestamp` set: another party's finalizer holds
   * it) and the controller declares no `finalize`: the kit then writes no children (garbage
   * collection removes them) but still writes the status the reconcile returns.
   */
  deleting: boolean;
  /** The live children, of each owned type, that this object controls (listed before the reconcile). */
  owned(resource: ResourceType): KubernetesObject[];
  /**
   * LISTs a resource the controller declares (owned or watched) in the object's namespace: one request.
   * @throws {Error} for a resource not declared (its RBAC would be missing)
   */
  list(resource: ResourceType, options?: { labelSelector?: string }): Promise<KubernetesObject[]>;
  /** Logger labelled with controller and key. */
  log: Logger;
  events: EventRecorder;
  kubeConfig: KubeConfig;
}

/** What `finalize` receives: the object being deleted, still carrying the controller's finalizer. */
export interface FinalizeInput<Spec> {
  key: Key;
  /** The primary, as just read (`deletionTimestamp` set). */
  object: PrimaryObject;
  /** Its spec parsed by the schema, or `undefined` when the stored spec fails it (finalize anyway: use `status`). */
  spec: Spec | undefined;
  /** As {@link ReconcileInput.list}. */
  list(resource: ResourceType, options?: { labelSelector?: string }): Promise<KubernetesObject[]>;
  log: Logger;
  events: EventRecorder;
  kubeConfig: KubeConfig;
}

/**
 * What `finalize` returns: nothing when done (the kit then removes the finalizer), or
 * `{ requeueAfterMs }` when not done yet (e.g. a long-running cloud operation): the finalizer stays
 * and the key comes back after that many ms.
 */
export type FinalizeResult = { requeueAfterMs: number } | undefined;

/** A controller's declaration. */
export interface ControllerDefinition<Schema extends z.ZodType> {
  /** Unique kebab-case name (the key message's `controller`). */
  name: string;
  /** The primary resource (namespaced). */
  primary: ResourceType;
  /** The zod schema of `spec`; an object failing it is `Ready=False/InvalidSpec`, not retried. */
  spec: Schema;
  /** Child types: watched (mapped through controller references), listed, applied and pruned. */
  owns?: (ResourceType | OwnedType)[];
  /** Secondary resources: watched and listable; events mapped through controller references by default. */
  watches?: (ResourceType | SecondaryWatch)[];
  /** Extra RBAC rules for what the reconcile does besides the above. */
  rbac?: PolicyRule[];
  /** Message of the Normal `Synced` Event recorded when a reconcile wrote something; default `<Kind> synced successfully`; `false`: none. */
  synced?: string | false;
  /** Every key resync publishes; default every primary object. */
  listKeys?: Controller['listKeys'];
  /**
   * Computes the desired state. Reads through `owned`/`list`; writes nothing itself (the kit does).
   * Throw `TerminalError(reason, message)` for what no retry fixes: `Ready=False/<reason>` + Warning Event.
   */
  reconcile(input: ReconcileInput<z.infer<Schema>>): Promise<Desired | undefined> | Desired | undefined;
  /**
   * Releases what the object holds outside the cluster (controller-runtime's finalizer pattern, Kopf's
   * `@kopf.on.delete`). Declaring it makes the kit add the finalizer `levelset.dev/<name>` before the
   * first reconcile runs, and, once `deletionTimestamp` is set, call `finalize` instead of `reconcile`
   * until it returns without a requeue; the kit then removes its finalizer (only its own, with a
   * precondition: {@link removeFinalizer}). A `TerminalError` keeps the finalizer, sets
   * `Ready=False/<reason>` and records a Warning Event; the next resync tries again.
   */
  finalize?(input: FinalizeInput<z.infer<Schema>>): Promise<FinalizeResult> | FinalizeResult;
}

const ownedType = (o: ResourceType | OwnedType): OwnedType => ('resource' in o ? o : { resource: o });
const secondary = (w: ResourceType | SecondaryWatch): SecondaryWatch =>
  'resource' in w ? w : { resource: w };
const sameResource = (a: ResourceType, b: ResourceType) => a.group === b.group && a.plural === b.plural;

/**
 * The RBAC a definition needs, derived so that it cannot forget a rule: `get`/`list` on the primary,
 * `patch` on its `status`; `get`/`list`/`create`/`patch`/`delete` on owned types (apply is `patch`);
 * `list` on watched types; `create`/`patch` on core Events; plus `extra`, merged per group/resource.
 */
export function deriveRbac(
  primary: ResourceType,
  owns: readonly OwnedType[],
  watches: readonly SecondaryWatch[],
  extra: readonly PolicyRule[] = [],
): PolicyRule[] {
  const rules = new Map<string, PolicyRule>();
  const grant = (apiGroup: string, resource: string, verbs: readonly Verb[]) => {
    const id = `${apiGroup}/${resource}`;
    const rule = rules.get(id) ?? { apiGroup, resources: [resource], verbs: [] };
    for (const v of verbs) if (!rule.verbs.includes(v)) rule.verbs.push(v);
    rules.set(id, rule);
  };
  grant(primary.group, primary.plural, ['get', 'list']);
  grant(primary.group, `${primary.plural}/status`, ['patch']);
  for (const o of owns)
    grant(o.resource.group, o.resource.plural, ['get', 'list', 'create', 'patch', 'delete']);
  for (const w of watches) grant(w.resource.group, w.resource.plural, ['list']);
  grant(EVENT_RECORDER_RULE.apiGroup, 'events', EVENT_RECORDER_RULE.verbs);
  for (const r of extra) for (const res of r.resources) grant(r.apiGroup, res, r.verbs);
  return [...rules.values()];
}

/**
 * Declares a controller (see the module comment for what each reconcile does).
 * @returns the registry's {@link Controller}, with `owns`, `watches` and `rbac` filled in
 */
export function defineController<Schema extends z.ZodType>(def: ControllerDefinition<Schema>): Controller {
  const owns = (def.owns ?? []).map(ownedType);
  const watches = (def.watches ?? []).map(secondary);
  const toPrimary = mapThroughControllers(def.primary);
  const declared = [...owns.map((o) => o.resource), ...watches.map((w) => w.resource)];
  const synced = def.synced ?? `${def.primary.kind} synced successfully`;

  async function reconcile(key: Key, ctx: ReconcileContext): Promise<Result> {
    const client = resourceClient(ctx.kubeConfig);
    let raw: KubernetesObject;
    try {
      raw = await client.get(def.primary, key.namespace, key.name);
    } catch (err) {
      if (isNotFound(err)) return {}; // deleted: garbage collection removes its children
      throw err;
    }
    // A cluster-scoped object has no namespace: `""`, as its key (client-go's MetaNamespaceKeyFunc).
    const scoped = def.primary.namespaced ? raw : { ...raw, metadata: { ...raw.metadata, namespace: '' } };
    const parsed = namespacedCustomObjectSchema.safeParse(scoped);
    if (!parsed.success) {
      throw new TerminalError(
        'InvalidObject',
        `${keyString(key)}: not a ${def.primary.kind}: ${parsed.error.message}`,
      );
    }
    const object = parsed.data;
    const deleting = Boolean(object.metadata.deletionTimestamp);
    const finalizer = finalizerName(def.name);
    const owner: Owner = object;
    const generation = object.metadata.generation;
    const observed = generation !== undefined ? { observedGeneration: generation } : {};

    /** Writes `status` (+ conditions) when it differs from the stored one; `true` when written. */
    const writeStatus = async (status: Record<string, unknown>, conditions: ConditionInput[]) => {
      let list = parseConditions(object.status?.conditions);
      for (const c of conditions) list = setCondition(list, c);
      const next = { ...status, ...observed, conditions: list };
      if (!statusChanged(object.status, next)) return false;
      try {
        await client.patchStatus(def.primary, key.namespace, key.name, next);
        return true;
      } catch (err) {
        if (isNotFound(err)) return false;
        throw err;
      }
    };
    /** `Ready=False/<reason>`, then the TerminalError the runtime answers with a Warning Event on the object. */
    const fail = async (reason: string, message: string, cause?: unknown): Promise<never> => {
      await writeStatus({}, [{ type: READY, status: 'False', reason, message, ...observed }]);
      throw new TerminalError(reason, message, { cause, object: object as KubernetesObject });
    };

    const list = (resource: ResourceType, options: { labelSelector?: string } = {}) => {
      if (!declared.some((r) => sameResource(r, resource)))
        throw new Error(`${def.name}: ${resource.plural} is not declared in owns or watches`);
      return client.list(resource, key.namespace, options.labelSelector);
    };

    const spec = def.spec.safeParse(object.spec ?? {});
    if (deleting && def.finalize) {
      if (!hasFinalizer(raw, finalizer)) return {}; // released already: the API server deletes it
      try {
        const { log, events, kubeConfig } = ctx;
        const data = spec.success ? spec.data : undefined;
        const result = await def.finalize({ key, object, spec: data, list, log, events, kubeConfig });
        if (result) return { requeueAfterMs: result.requeueAfterMs };
      } catch (err) {
        if (err instanceof TerminalError && !err.object) return fail(err.reason, err.message, err.cause);
        throw err;
      }
      await removeFinalizer(ctx.kubeConfig, def.primary, raw, finalizer);
      ctx.log.info({ finalizer }, 'finalized; finalizer removed');
      return {};
    }
    if (!spec.success) {
      const issues = spec.error.issues.map((i) => `spec.${i.path.join('.')}: ${i.message}`).join('; ');
      return fail(INVALID_SPEC, `${keyString(key)}: invalid spec: ${issues}`);
    }

    // Children are found by their labels: an object whose name cannot be a label value cannot have
    // children (and a LIST by that selector would answer 400 on every delivery).
    const badLabels = owns.flatMap((type) => invalidLabelValues(childLabels(def.name, type, owner)));
    if (badLabels.length > 0)
      return fail(INVALID_SPEC, `${keyString(key)}: cannot label its children: ${badLabels.join('; ')}`);

    if (def.finalize && !deleting && !hasFinalizer(raw, finalizer)) {
      // Before the reconcile can create anything outside the cluster: a delete must wait for finalize.
      await addFinalizer(ctx.kubeConfig, def.primary, raw, finalizer);
      ctx.log.info({ finalizer }, 'finalizer added');
    }

    try {
      const listed = await Promise.all(
        owns.map(async (type) => ({
          type,
          listed: await client.list(
            type.resource,
            key.namespace,
            selectorOf(childLabels(def.name, type, owner)),
          ),
        })),
      );
      const desired =
        (await def.reconcile({
          key,
          object,
          spec: spec.data,
          deleting,
          owned: (resource) =>
            (listed.find((l) => sameResource(l.type.resource, resource))?.listed ?? []).filter((o) =>
              isControlledBy(o, owner),
            ),
          list,
          log: ctx.log,
          events: ctx.events,
          kubeConfig: ctx.kubeConfig,
        })) ?? {};
      const changes =
        desired.children && !deleting
          ? await reconcileChildren({
              client,
              controller: def.name,
              owner,
              owned: listed,
              desired: desired.children,
            })
          : [];
      if (changes.length > 0) ctx.log.info({ changes }, 'children converged');
      const ready = desired.ready ?? { status: true, reason: 'Reconciled', message: '' };
      const conditions: ConditionInput[] = [
        {
          type: READY,
          status: ready.status ? 'True' : 'False',
          reason: ready.reason,
          message: ready.message,
          ...observed,
        },
        ...(desired.conditions ?? []).map((c) => ({ ...c, ...observed })),
      ];
      const wrote = await writeStatus(desired.status ?? {}, conditions);
      if ((wrote || changes.length > 0) && synced !== false)
        await ctx.events.record(object as KubernetesObject, 'Normal', 'Synced', synced);
      return desired.requeueAfterMs !== undefined ? { requeueAfterMs: desired.requeueAfterMs } : {};
    } catch (err) {
      if (err instanceof TerminalError && !err.object) return fail(err.reason, err.message, err.cause);
      throw err;
    }
  }

  return {
    name: def.name,
    primary: def.primary,
    owns: owns.map((o) => o.resource),
    watches: [
      { resource: def.primary, map: mapToSelf },
      ...owns.map((o) => ({
        resource: o.resource,
        ...(o.watchSelector ? { labelSelector: o.watchSelector } : {}),
        map: toPrimary,
      })),
      ...watches.map((w) => ({
        resource: w.resource,
        ...(w.labelSelector ? { labelSelector: w.labelSelector } : {}),
        ...(w.namespace ? { namespace: w.namespace } : {}),
        map: w.map ?? toPrimary,
      })),
    ],
    rbac: deriveRbac(def.primary, owns, watches, [
      // finalize: the finalizer is added and removed with a patch of the primary
      ...(def.finalize
        ? [{ apiGroup: def.primary.group, resources: [def.primary.plural], verbs: ['patch' as const] }]
        : []),
      ...(def.rbac ?? []),
    ]),
    ...(def.listKeys ? { listKeys: def.listKeys } : {}),
    reconcile,
  };
}
