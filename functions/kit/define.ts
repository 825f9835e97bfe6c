/**
 * `defineController`: the one way to declare a controller. It takes the primary type and its zod
 * spec, the children it owns, the secondary resources it watches and a reconcile that returns the
 * desired children and status; it returns the {@link Controller} the registry lists, with its
 * watches (map functions included) and its RBAC derived from what it declares.
 *
 * Every reconcile then runs the same steps (steps.ts, one function each), in one function that reads
 * top to bottom, the way a controller-runtime reconciler is written by hand: GET the primary (gone →
 * done: garbage collection removes its children); while it is being deleted, call `finalize` (when
 * declared) until done and remove the controller's finalizer (finalizers.ts); validate its spec
 * (invalid → `Ready=False/InvalidSpec` + Warning Event, no retry); observe its children; call the
 * reconcile; converge the children (the finalizer is added first when `finalize` is declared); write
 * the status through the `status` subresource when it changed, with `Ready` and `observedGeneration`
 * (Kubernetes API conventions: conditions); record a `Synced` Event when something changed. A
 * converged object costs 1 GET + 1 LIST per owned type, plus the reconcile's own reads, and no write;
 * in-process (`ReconcileContext.cache`) the GET and the LISTs of children in the primary's namespace come
 * from the informers (cached-client.ts).
 * A primary without a `status` subresource (a Secret) gets no status: Events report.
 *
 * Each owned kind carries the strategy that keeps its children (child-sets.ts: in the primary's
 * namespace by default, `acrossNamespaces`, `acrossClusters`), which gives its RBAC, its watch's
 * map and its child sets; the reconcile observes and converges every set the same way, within the
 * one scope it resolves for the key (steps.ts `resolveScope`: a primary pinned to a namespace makes
 * a key in another namespace name its children there alone).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import * as z from 'zod';
import type {
  Controller,
  PolicyRule,
  ReconcileContext,
  ResourceType,
  Result,
  Verb,
  Watch,
  WatchEvent,
} from '../../core/contract/controller.ts';
import type { Key } from '../../core/contract/key.ts';
import { errorText, TerminalError } from '../../core/k8s/errors.ts';
import { EVENT_RECORDER_RULE } from '../../core/k8s/events.ts';
import { type AuditLogDeclaration, compileAuditLog } from './audit-log.ts';
import { cachedReader, recordingWrites } from './cached-client.ts';
import { childSetsOf, convergeChildren, inNamespace, strategyOf } from './child-sets.ts';
import { resourceClient } from './client.ts';
import { withStatusDetails } from './google-cloud.ts';
import { compileIndexes, type IndexFunction } from './index-spec.ts';
import { type MapFunction, mapThroughControllers, mapToSelf } from './map.ts';
import { rateLimitOf } from './rate-limits.ts';
import { parsePolicyRules } from './rbac.ts';
import { readsFor } from './reads.ts';
import { holdWhileReferenced, type ReferencedBy, referringObjects } from './references.ts';
import {
  desiredConditions,
  ensureFinalizer,
  finalizePrimary,
  getPrimary,
  INVALID_SPEC,
  reconcileInput,
  recordSynced,
  resolveScope,
  resultOf,
  statusWriter,
  validatePrimary,
} from './steps.ts';
import type {
  ChildChange,
  Desired,
  FinalizeInput,
  FinalizeResult,
  OwnedType,
  ReconcileInput,
  Scope,
} from './types.ts';

/** A secondary watch: a resource whose events map to primary keys (default: through controller references). */
export interface SecondaryWatch {
  resource: ResourceType;
  /** Default {@link mapThroughControllers} to the primary. */
  map?: MapFunction;
  labelSelector?: string;
  namespace?: string;
  /** Drops the events it returns `false` for before the map (controller-runtime's `WithPredicates`). */
  predicate?: (event: WatchEvent) => boolean;
  /** What the reconcile reads of an object's `status` (`Watch.readsStatus`); default: every update passes. */
  readsStatus?: (object: KubernetesObject) => unknown;
}

/** A controller's declaration. */
export interface ControllerDefinition<Schema extends z.ZodType = z.ZodUnknown> {
  /** Unique kebab-case name (the key message's `controller`). */
  name: string;
  /**
   * The primary resource: a custom resource, or a built-in type (a Secret: one without a `status`
   * subresource gets no status written, and reports through Events alone).
   */
  primary: ResourceType;
  /**
   * The namespace every primary lives in, or a function returning it (called at each use, so that
   * configuration is read lazily); default: any namespace. The primary's watch is then that
   * namespace's, and a key `<namespace>/<name>` in another namespace names the children, in that
   * namespace alone, of the primary `<name>` (kinds owned `acrossNamespaces`): the reconcile's
   * `scope.namespace` is it, so an event of one namespace costs the work of that namespace only.
   */
  namespace?: string | (() => string);
  /**
   * The zod schema of `spec`; an object failing it is `Ready=False/InvalidSpec`, not retried.
   * Default: none (a primary without a spec, such as a Secret).
   */
  spec?: Schema;
  /**
   * The zod schema of the `status` fields the reconcile returns (besides `observedGeneration` and
   * `conditions`, which the kit writes). With `spec`, the source of the primary's CRD schema:
   * `levelset build` writes `crd.yaml`'s `openAPIV3Schema` from both
   * (functions/kit/crd-schema.ts). Default: none (a status of the kit's fields alone).
   */
  status?: z.ZodObject;
  /**
   * Owned kinds, each with its strategy (child-sets.ts): a resource type (`deployments`) or
   * `{resource, …}` for children in the primary's namespace (watched through controller references,
   * listed, applied, pruned); `acrossNamespaces(resource, tracking)` and `acrossClusters(…)` for
   * children elsewhere, tracked by label and annotation.
   */
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
  /**
   * Message of the Normal `Synced` Event recorded when a reconcile wrote something, or a function of
   * the children's changes (`created Secret team-a/db`, …) returning it (so that an Event of other
   * changes is a new Event, not a repeat); default `<Kind> synced successfully`; `false`: none.
   */
  synced?: string | false | ((changes: readonly ChildChange[]) => string);
  /** Every key resync publishes; default every primary object. */
  listKeys?: Controller['listKeys'];
  /**
   * Computes the desired state. Reads through `owned`/`list`; writes nothing itself (the kit does).
   * Throw `TerminalError(reason, message)` for what no retry fixes: `Ready=False/<reason>` + Warning Event.
   */
  reconcile(input: ReconcileInput<z.infer<Schema>>): Promise<Desired | undefined> | Desired | undefined;
  /**
   * The cloud resources the controller owns, so that a change made to one outside Levelset, reported
   * by Cloud Audit Logs, reconciles its owner within seconds (functions/kit/audit-log.ts); a wrong
   * shape throws here.
   */
  auditLog?: AuditLogDeclaration;
  /**
   * Releases what the object holds outside the cluster (controller-runtime's finalizer pattern, Kopf's
   * `@kopf.on.delete`). Declaring it makes the kit add the finalizer `levelset.dev/<name>` before the
   * first reconcile runs, and, once `deletionTimestamp` is set, call `finalize` instead of `reconcile`
   * until it returns without a requeue; the kit then removes its finalizer (only its own, with a
   * precondition: finalizers.ts `removeFinalizer`). A `TerminalError` keeps the finalizer, sets
   * `Ready=False/<reason>` and records a Warning Event; the next resync tries again.
   */
  finalize?(input: FinalizeInput<z.infer<Schema>>): Promise<FinalizeResult> | FinalizeResult;
  /**
   * Who references the primaries (references.ts): while a referrer exists, a primary's delete waits
   * (`Ready=False/StillReferenced` naming them, a Warning Event, `finalize` not called) and looks
   * again later, completing once the last referrer is gone. Declaring it puts the kit's finalizer on
   * every primary, as `finalize` does; the RBAC gets `list` on each referrer resource. A reconcile
   * that corrected drift outside the cluster (`Desired.driftCorrected`) returns the referrers
   * (`Result.referrers`: 1 LIST per referrer resource), which the runtime reconciles next.
   */
  referencedBy?: ReferencedBy[];
  /**
   * `finalize` honours `dryRun` (it writes nothing outside the cluster then, and reports what it
   * would do through `planExternal`), so a plan calls it too; default `false`: a plan does not
   * call `finalize` (the kit's external resources set it: functions/kit/external.ts).
   */
  finalizePlans?: boolean;
}

const ownedType = (o: ResourceType | OwnedType): OwnedType => ('resource' in o ? o : { resource: o });
const secondary = (w: ResourceType | SecondaryWatch): SecondaryWatch =>
  'resource' in w ? w : { resource: w };

/**
 * The RBAC a definition needs, derived so that it cannot forget a rule: `get`/`list` on the primary,
 * `patch` on its `status` (when it has one); on each owned kind, its strategy's verbs
 * (`ChildStrategy.verbs`); `list` on watched types; core Events as the recorder needs them
 * ({@link EVENT_RECORDER_RULE}); plus `extra`, merged per group/resource.
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
  if (primary.statusSubresource !== false) grant(primary.group, `${primary.plural}/status`, ['patch']);
  for (const o of owns) grant(o.resource.group, o.resource.plural, strategyOf(o).verbs);
  for (const w of watches) grant(w.resource.group, w.resource.plural, ['list']);
  for (const g of EVENT_RECORDER_RULE.apiGroups) grant(g, 'events', EVENT_RECORDER_RULE.verbs);
  for (const r of extra) for (const g of r.apiGroups) for (const res of r.resources) grant(g, res, r.verbs);
  return [...rules.values()];
}

/**
 * Declares a controller (see the module comment for what each reconcile does).
 * @returns the registry's {@link Controller}, with `owns`, `watches` and `rbac` filled in (with
 *   `patch` on the primary when `finalize` is declared: the finalizer is added and removed by a patch)
 * @throws {Error} for `rbac` rules of the wrong shape (rbac.ts)
 */
export function defineController<Schema extends z.ZodType = z.ZodUnknown>(
  def: ControllerDefinition<Schema>,
): Controller {
  const schema = (def.spec ?? z.unknown()) as Schema;
  const given = def.namespace;
  const primaryNamespaceOf =
    typeof given === 'function' ? given : given !== undefined ? () => given : undefined;
  const owns = (def.owns ?? []).map(ownedType);
  const watches = (def.watches ?? []).map(secondary);
  const toPrimary = mapThroughControllers(def.primary);
  const referencedBy = def.referencedBy ?? [];
  const holdsFinalizer = Boolean(def.finalize) || referencedBy.length > 0;
  const finalize = def.finalize ?? (() => undefined);
  const rbac = deriveRbac(def.primary, owns, watches, [
    ...parsePolicyRules(def.name, def.rbac ?? []),
    ...(holdsFinalizer
      ? [{ apiGroups: [def.primary.group], resources: [def.primary.plural], verbs: ['patch' as const] }]
      : []),
    ...referencedBy.map((by) => ({
      apiGroups: [by.resource.group],
      resources: [by.resource.plural],
      verbs: ['list' as const],
    })),
  ]);
  const synced = def.synced ?? `${def.primary.kind} synced successfully`;
  const childSetsIn = childSetsOf(owns);

  /**
   * The reconcile of one key, top to bottom: GET the primary (the children's reads that need the
   * key alone go out with it); gone → prune what no garbage collector removes; being deleted with
   * `finalize` → finalize; invalid spec → `Ready=False/InvalidSpec`; observe the children; the
   * controller's reconcile; converge the children; write the status; record `Synced`; a
   * `TerminalError` → `Ready=False/<reason>`. A key outside the primary's pinned namespace names no
   * primary: its children are a former primary's (the namespace changed) and are pruned first; then
   * the primary of that name converges its children in the key's namespace alone.
   */
  async function reconcileOnce(requested: Key, ctx: ReconcileContext): Promise<Result> {
    const { log, events } = ctx;
    // In the in-process mode, the primary's GET and the children's LIST from its informers, every
    // write recorded so that the next reconcile reads what it wrote (cached-client.ts).
    const { cache } = ctx;
    const live = resourceClient(ctx.kubeConfig);
    const client = cache ? recordingWrites(live, cache) : live;
    const reader = cache ? cachedReader(client, cache) : client;
    const { scope, former } = resolveScope(requested, primaryNamespaceOf?.(), ctx);
    const childSets = (within: Scope) =>
      childSetsIn({
        client,
        reader,
        controller: def.name,
        scope: within,
        ctx,
      });
    if (former) {
      const pruned = await convergeChildren(childSets(former), undefined, undefined);
      if (pruned.failed) throw pruned.failed;
    }
    const { key } = scope;
    // The version the key's publisher saw, when the key names this very primary (not a former scope's).
    const seen = key.namespace === requested.namespace && key.name === requested.name;
    const getting = getPrimary(reader, def.primary, key, seen ? ctx.primaryResourceVersion : undefined);
    const children = childSets(scope);
    for (const set of children) set.observeKey?.();
    const object = await getting;
    if (!object) {
      const pruned = await convergeChildren(children, undefined, undefined);
      if (pruned.failed) throw pruned.failed;
      return pruned.pruning ? {} : { notFound: true };
    }
    const deleting = Boolean(object.metadata.deletionTimestamp);
    const status = statusWriter(client, def.primary, object);
    try {
      if (deleting && holdsFinalizer) {
        const held =
          referencedBy.length > 0 &&
          (await holdWhileReferenced({ client, referencedBy, object, status, events }));
        if (held) return held;
        // A TerminalError keeps the finalizer: nothing outside the cluster is leaked silently.
        const input = {
          key,
          object,
          spec: schema.safeParse(object.spec ?? {}).data,
          ...readsFor(def.name, rbac, client, key.namespace),
          log,
          events,
          kubeConfig: ctx.kubeConfig,
          dryRun: ctx.dryRun ?? false,
          planExternal: ctx.planExternal ?? (() => {}),
        };
        return await finalizePrimary({
          controller: def.name,
          primary: def.primary,
          input,
          finalize,
          finalizePlans: def.finalizePlans ?? false,
        });
      }
      const valid = validatePrimary(object, schema, { controller: def.name, owns });
      if ('invalid' in valid) return await status.fail(INVALID_SPEC, valid.invalid);
      if (holdsFinalizer && !deleting) {
        const patched = await ensureFinalizer(ctx.kubeConfig, def.name, def.primary, object, log);
        if (patched) cache?.wrote(def.primary, patched);
      }
      const listings = (await Promise.all(children.map((c) => c.observe?.(object) ?? []))).flat();
      const input = reconcileInput({
        ...ctx,
        controller: def.name,
        key,
        object,
        spec: valid.spec,
        deleting,
        scope,
        listings,
        rbac,
        client,
      });
      const desired = (await def.reconcile(input)) ?? {};
      const converged = await convergeChildren(children, object, desired);
      const { changes } = converged;
      if (changes.length > 0) log.info({ changes }, 'children converged');
      // A child whose name someone else holds: Ready=False/ErrResourceExists once the others converged.
      if (converged.failed instanceof TerminalError) throw converged.failed;
      const wrote = await status.write(desired.status ?? {}, desiredConditions(desired, object));
      const changed = wrote || changes.length > 0;
      await recordSynced(events, object, typeof synced === 'function' ? synced(changes) : synced, changed);
      if (converged.failed) throw converged.failed;
      // Set back outside the cluster: what references the primary may have lost something with it.
      const referrers =
        desired.driftCorrected && referencedBy.length > 0 && !ctx.dryRun
          ? await referringObjects(client, referencedBy, object as KubernetesObject)
          : [];
      const drift = desired.driftCorrected
        ? { driftCorrected: true, ...(referrers.length > 0 ? { referrers } : {}) }
        : {};
      return changed ? { ...resultOf(desired), changed, ...drift } : { ...resultOf(desired), ...drift };
    } catch (err) {
      if (err instanceof TerminalError && !err.object) return status.fail(err.reason, err.message, err.cause);
      throw err;
    }
  }

  /**
   * {@link reconcileOnce}, with quota and rate limits (Google RESOURCE_EXHAUSTED/429, Kubernetes 429,
   * rate-limits.ts) answered as `rateLimited`, with the delay they name if any: the runtime retries
   * the key after it, else after the key's backoff counted in its message (`Result.rateLimited`).
   * Not a failure, not terminal; the kit keeps no state of its own.
   */
  async function reconcile(requested: Key, ctx: ReconcileContext): Promise<Result> {
    try {
      return await reconcileOnce(requested, ctx);
    } catch (err) {
      const rateLimited = rateLimitOf(await withStatusDetails(err));
      if (!rateLimited) throw err;
      ctx.log.warn({ err: errorText(err), ...rateLimited }, 'rate limited; the runtime retries the key');
      return { rateLimited };
    }
  }

  // The primary's own watch; pinned to a namespace, it watches that one (read at each use).
  const self = primaryNamespaceOf
    ? (event: WatchEvent, c: Parameters<MapFunction>[1]) =>
        event.object.metadata?.namespace === primaryNamespaceOf() ? mapToSelf(event, c) : []
    : mapToSelf;
  const primaryWatch: Watch = { resource: def.primary, map: self };
  if (primaryNamespaceOf)
    Object.defineProperty(primaryWatch, 'namespace', { get: primaryNamespaceOf, enumerable: true });
  const watchOf = ({ resource, labelSelector, namespace, predicate, readsStatus, map }: SecondaryWatch) => ({
    resource,
    ...(labelSelector ? { labelSelector } : {}),
    ...(namespace ? { namespace } : {}),
    ...(predicate ? { predicate } : {}),
    ...(readsStatus ? { readsStatus } : {}),
    map: map ?? toPrimary,
  });

  return {
    name: def.name,
    primary: def.primary,
    owns: owns.map((o) => o.resource),
    // Read whole by the reconcile (the primary's GET, the LIST of children in its namespace):
    // cached in the in-process mode; children elsewhere are read live.
    cachedReads: [def.primary, ...owns.filter((o) => strategyOf(o) === inNamespace).map((o) => o.resource)],
    readyCondition: def.primary.statusSubresource !== false,
    watches: [
      primaryWatch,
      ...owns.map((o) =>
        watchOf({
          ...o,
          labelSelector: o.watchSelector,
          map: o.map ?? strategyOf(o).map(o, def.primary),
        }),
      ),
      ...watches.map(watchOf),
    ],
    rbac,
    ...(def.spec || def.status ? { schemas: { spec: def.spec, status: def.status } } : {}),
    ...(def.indexes ? { indexes: compileIndexes(schema, def.indexes) } : {}),
    ...(def.listKeys ? { listKeys: def.listKeys } : {}),
    ...(def.auditLog ? { auditLog: compileAuditLog(def.name, def.primary, def.auditLog) } : {}),
    reconcile,
  };
}
