/**
 * `defineController`: the one way to declare a controller. It takes the primary type and its zod
 * spec, the children it owns, the secondary resources it watches and a reconcile that returns the
 * desired children and status; it returns the {@link Controller} the registry lists, with its
 * watches (map functions included) and its RBAC derived from what it declares.
 *
 * Every reconcile then runs the same steps, the way controller-runtime reconcilers are written by
 * hand: GET the primary (gone → done: garbage collection removes its children); skip it while it is
 * being deleted; validate its spec (invalid → `Ready=False/InvalidSpec` + Warning Event, no retry);
 * LIST each owned type by label (one request per type); call the reconcile; create/apply/prune the
 * children; write the status through the `status` subresource when it changed, with `Ready` and
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
  WatchEvent,
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
import { compileIndexes, type IndexFunction } from './index-spec.ts';
import { type MapFunction, mapThroughControllers, mapToSelf } from './map.ts';
import { parsePolicyRules } from './rbac.ts';
import { type Reads, readsFor } from './reads.ts';

/** The condition every kit controller maintains (Kubernetes API conventions; cluster-api's rules). */
export const READY = 'Ready';
/** Reason of `Ready=False` and of the Warning Event when the spec fails its schema. */
export const INVALID_SPEC = 'InvalidSpec';

/** The primary object as a reconcile sees it: metadata validated, `spec` as stored, `status` as stored. */
export type PrimaryObject = z.infer<typeof namespacedCustomObjectSchema>;

/** A secondary watch: a resource whose events map to primary keys (default: through controller references). */
export interface SecondaryWatch {
  resource: ResourceType;
  /** Default {@link mapThroughControllers} to the primary. */
  map?: MapFunction;
  labelSelector?: string;
  namespace?: string;
  /** Drops the events it returns `false` for before the map (controller-runtime's `WithPredicates`). */
  predicate?: (event: WatchEvent) => boolean;
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
}

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
  /**
   * Spec indexes over the primary, for watches that map with `mapByIndex` (functions/kit/index-spec.ts):
   * name → the values of an object, e.g. the `namespace/name` of every ConfigMap its spec lists.
   */
  indexes?: Record<string, IndexFunction<z.infer<Schema>>>;
  /**
   * Extra RBAC rules for what the reconcile does besides the above, as Kubernetes spells them
   * (`{apiGroups: [''], resources: ['secrets'], verbs: ['get']}`); a wrong shape throws here.
   */
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
    const rule = rules.get(id) ?? { apiGroups: [apiGroup], resources: [resource], verbs: [] };
    for (const v of verbs) if (!rule.verbs.includes(v)) rule.verbs.push(v);
    rules.set(id, rule);
  };
  grant(primary.group, primary.plural, ['get', 'list']);
  grant(primary.group, `${primary.plural}/status`, ['patch']);
  for (const o of owns)
    grant(o.resource.group, o.resource.plural, ['get', 'list', 'create', 'patch', 'delete']);
  for (const w of watches) grant(w.resource.group, w.resource.plural, ['list']);
  for (const g of EVENT_RECORDER_RULE.apiGroups) grant(g, 'events', EVENT_RECORDER_RULE.verbs);
  for (const r of extra) for (const g of r.apiGroups) for (const res of r.resources) grant(g, res, r.verbs);
  return [...rules.values()];
}

/**
 * Declares a controller (see the module comment for what each reconcile does).
 * @returns the registry's {@link Controller}, with `owns`, `watches` and `rbac` filled in
 * @throws {Error} when the primary is cluster-scoped (not supported yet)
 */
export function defineController<Schema extends z.ZodType>(def: ControllerDefinition<Schema>): Controller {
  if (!def.primary.namespaced) throw new Error(`${def.name}: the kit supports namespaced primaries only`);
  const owns = (def.owns ?? []).map(ownedType);
  const watches = (def.watches ?? []).map(secondary);
  const toPrimary = mapThroughControllers(def.primary);
  const rbac = deriveRbac(def.primary, owns, watches, parsePolicyRules(def.name, def.rbac ?? []));
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
    const parsed = namespacedCustomObjectSchema.safeParse(raw);
    if (!parsed.success) {
      throw new TerminalError(
        'InvalidObject',
        `${keyString(key)}: not a ${def.primary.kind}: ${parsed.error.message}`,
      );
    }
    const object = parsed.data;
    if (object.metadata.deletionTimestamp) return {};
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

    const spec = def.spec.safeParse(object.spec ?? {});
    if (!spec.success) {
      const issues = spec.error.issues.map((i) => `spec.${i.path.join('.')}: ${i.message}`).join('; ');
      return fail(INVALID_SPEC, `${keyString(key)}: invalid spec: ${issues}`);
    }

    // Children are found by their labels: an object whose name cannot be a label value cannot have
    // children (and a LIST by that selector would answer 400 on every delivery).
    const badLabels = owns.flatMap((type) => invalidLabelValues(childLabels(def.name, type, owner)));
    if (badLabels.length > 0)
      return fail(INVALID_SPEC, `${keyString(key)}: cannot label its children: ${badLabels.join('; ')}`);

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
          owned: (resource) =>
            (listed.find((l) => sameResource(l.type.resource, resource))?.listed ?? []).filter((o) =>
              isControlledBy(o, owner),
            ),
          ...readsFor(def.name, rbac, client, key.namespace),
          log: ctx.log,
          events: ctx.events,
          kubeConfig: ctx.kubeConfig,
        })) ?? {};
      const changes = desired.children
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
        ...(w.predicate ? { predicate: w.predicate } : {}),
        map: w.map ?? toPrimary,
      })),
    ],
    rbac,
    ...(def.indexes ? { indexes: compileIndexes(def.spec, def.indexes) } : {}),
    ...(def.listKeys ? { listKeys: def.listKeys } : {}),
    reconcile,
  };
}
