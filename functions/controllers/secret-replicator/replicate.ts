/**
 * The I/O half of `secret-replicator`: read the source, the namespaces and the copies, diff them
 * with {@link planReplicas}, and write only what differs, with optimistic concurrency.
 *
 * A converged (no-op) reconcile makes 3 API requests however many namespaces exist (one page each):
 * GET the source, LIST namespaces, LIST copies by label selector across all namespaces.
 */
import {
  type ConfigurationOptions,
  CoreV1Api,
  type V1Namespace,
  type V1Secret,
} from '@kubernetes/client-node';
import {
  apiStatusOf,
  ERR_RESOURCE_EXISTS,
  type FailedWrite,
  FailedWritesError,
  forEachLimit,
  isConflict,
  isDNS1123Label,
  isDNS1123Subdomain,
  isNotFound,
  type Key,
  METADATA_ONLY,
  paginate,
  type ReconcileContext,
  type Result,
  type ResyncContext,
  TerminalError,
} from '../../kit/index.ts';
import type { SecretReplicatorConfig } from './config.ts';
import {
  COPY_LABEL,
  copySelectorFor,
  isReplicable,
  planReplicas,
  planTarget,
  REASON_INVALID_KEY,
  type ReplicaPlan,
  regardingSecret,
  SERVICE_ACCOUNT_TOKEN_TYPE,
  sourceKeyOf,
} from './plan.ts';

/** Page size of the resync's LISTs of keys (client-go's pager default). */
export const PAGE_SIZE = 500;
/** Writes in flight at once for one reconcile. */
export const WRITE_CONCURRENCY = 8;

/** The writes a reconcile made, by kind; logged (never Secret data). */
interface ReplicaChanges {
  created: string[];
  updated: string[];
  recreated: string[];
  deleted: string[];
  conflicts: string[];
  skipped: string[];
  failures: FailedWrite[];
}

/** The namespace of a create that failed because it is gone or being deleted (skip, not an error). */
function namespaceUnavailable(err: unknown): boolean {
  const status = apiStatusOf(err);
  if (status === 404) return true;
  // kube-apiserver's NamespaceLifecycle admission: 403 "… because it is being terminated" (the
  // ApiException message carries the Status body).
  return status === 403 && /being terminated/.test(err instanceof Error ? err.message : String(err));
}

/**
 * Reconciles one source key: converges the copies of `key` to the source Secret's current state.
 *
 * A key outside the source namespace, or whose Secret is gone, being deleted, or a
 * service-account token, has no desired copies: its owned copies are deleted (copies of a deleted
 * source are pruned). A key `<namespace>/<name>` outside the source namespace also converges, in
 * that namespace only, the copy of the source `<name>` (a new namespace's keys, index.ts). Conflicts (a target holding a Secret Levelset does not own) are logged at
 * ERROR and recorded as one `ErrResourceExists` Warning Event on the source; they do not fail the
 * reconcile. After a 409 AlreadyExists on create, the Secret is re-read and handled by ownership.
 * @throws {TerminalError} `InvalidKey` for a key that cannot name a Secret; `InvalidReplicateTo`
 *   for an invalid target annotation (no copy is changed).
 * @throws {FailedWritesError} when some writes failed (retried); API errors of the reads as thrown
 *   by @kubernetes/client-node (`ApiException`, retried).
 */
export async function reconcileSource(
  key: Key,
  ctx: ReconcileContext,
  config: SecretReplicatorConfig,
): Promise<Result> {
  if (!isDNS1123Label(key.namespace) || !isDNS1123Subdomain(key.name)) {
    throw new TerminalError(REASON_INVALID_KEY, `key ${key.namespace}/${key.name} cannot name a Secret`);
  }
  const result = await replicate(key, ctx, config);
  // A key outside the source namespace also names a Secret that may be a copy: the copy of the
  // source of that name in that namespace alone is converged too. A new namespace's keys are these
  // (index.ts), so a namespace event costs work for that namespace only, however many namespaces
  // there are or churn.
  if (key.namespace !== config.sourceNamespace)
    return replicate({ namespace: config.sourceNamespace, name: key.name }, ctx, config, key.namespace);
  return result;
}

/**
 * Converges the copies of source `key` in every namespace, or in namespace `only` alone (its
 * Namespace, its copy and a Secret of that name there are read; nothing elsewhere is touched).
 * @throws as {@link reconcileSource}
 */
async function replicate(
  key: Key,
  ctx: ReconcileContext,
  config: SecretReplicatorConfig,
  only?: string,
): Promise<Result> {
  const core = ctx.kubeConfig.makeApiClient(CoreV1Api);
  const sourceRef = `${key.namespace}/${key.name}`;

  let source: V1Secret | undefined;
  if (key.namespace === config.sourceNamespace) {
    try {
      source = await core.readNamespacedSecret({ name: key.name, namespace: key.namespace });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  const replicable = isReplicable(source);
  // One LIST per kind, not pages: the plan holds every namespace and copy anyway to diff them, so
  // pages would bound no memory and only add requests (kube-apiserver serves these consistent
  // LISTs from its watch cache). The cost of a reconcile stays the same however many namespaces.
  // One namespace: a LIST by name (the functions' role lists namespaces; it has no get on them).
  const namespaces: V1Namespace[] | undefined = replicable
    ? (await core.listNamespace(only ? { fieldSelector: `metadata.name=${only}` } : {})).items.filter(
        (n) => !only || n.metadata?.name === only,
      )
    : undefined;
  const secretsOf = (
    selector: { labelSelector?: string; fieldSelector?: string },
    options?: ConfigurationOptions,
  ) =>
    only
      ? core.listNamespacedSecret({ namespace: only, ...selector }, options)
      : core.listSecretForAllNamespaces(selector, options);
  // Without a replicable source the plan only deletes copies, which needs their metadata alone:
  // the LIST then carries no Secret data (copies of a 1 MiB source weigh 1 MiB each otherwise).
  const observed = (
    await secretsOf({ labelSelector: copySelectorFor(key) }, replicable ? undefined : METADATA_ONLY)
  ).items;

  let plan = planReplicas({ key, source, namespaces, observed, config });
  if (plan.create.length > 0) {
    // Find Secrets of the same name Levelset does not own in one LIST, instead of one failed
    // create (409) and one GET per such namespace. Filtered client-side as well, so a server
    // that ignores the field selector is still answered correctly.
    const sameName = await secretsOf({ fieldSelector: `metadata.name=${key.name}` });
    const others = sameName.items.filter((s) => s.metadata?.name === key.name);
    plan = planReplicas({ key, source, namespaces, observed: [...observed, ...others], config });
  }

  const outcome = await execute(core, key, plan);
  await report(key, ctx, source, plan, outcome);
  if (outcome.failures.length > 0) throw new FailedWritesError(`copies of ${sourceRef}`, outcome.failures);
  // No source and no copy of it: the key names nothing.
  if (!source && plan.delete.length === 0) return { notFound: true };
  const { created, updated, recreated, deleted } = outcome;
  return created.length + updated.length + recreated.length + deleted.length > 0 ? { changed: true } : {};
}

/** Performs the writes of `plan`; every failure is recorded in the outcome, none is thrown. */
async function execute(core: CoreV1Api, key: Key, plan: ReplicaPlan): Promise<ReplicaChanges> {
  const outcome: ReplicaChanges = {
    created: [],
    updated: [],
    recreated: [],
    deleted: [],
    conflicts: plan.conflicts.map((c) => c.namespace),
    skipped: [],
    failures: [],
  };
  const fail = (namespace: string, op: 'create' | 'update' | 'recreate' | 'delete', error: unknown) =>
    outcome.failures.push({ op, target: namespace, status: apiStatusOf(error), error });

  const create = async (desired: V1Secret, afterDelete: boolean): Promise<void> => {
    const namespace = desired.metadata?.namespace ?? '';
    try {
      await core.createNamespacedSecret({ namespace, body: desired });
      (afterDelete ? outcome.recreated : outcome.created).push(namespace);
    } catch (err) {
      if (namespaceUnavailable(err)) outcome.skipped.push(namespace);
      else if (isConflict(err) && !afterDelete) await afterAlreadyExists(desired);
      else fail(namespace, afterDelete ? 'recreate' : 'create', err);
    }
  };
  // 409 AlreadyExists: someone created it since our LIST. Re-read and decide by ownership, once.
  const afterAlreadyExists = async (desired: V1Secret): Promise<void> => {
    const namespace = desired.metadata?.namespace ?? '';
    let current: V1Secret;
    try {
      current = await core.readNamespacedSecret({ name: key.name, namespace });
    } catch (err) {
      fail(namespace, 'create', err);
      return;
    }
    const step = planTarget(key, desired, current);
    if (step.op === 'conflict') outcome.conflicts.push(namespace);
    else if (step.op === 'update') await update(step.desired);
    else if (step.op === 'recreate') await recreate(step.current, step.desired);
    // 'unchanged': converged by someone else (a concurrent reconcile); 'create' cannot happen.
  };
  const update = async (body: V1Secret): Promise<void> => {
    const namespace = body.metadata?.namespace ?? '';
    try {
      await core.replaceNamespacedSecret({ name: key.name, namespace, body });
      outcome.updated.push(namespace);
    } catch (err) {
      fail(namespace, 'update', err);
    }
  };
  const remove = async (current: V1Secret): Promise<boolean> => {
    const namespace = current.metadata?.namespace ?? '';
    try {
      await core.deleteNamespacedSecret({
        name: key.name,
        namespace,
        body: {
          preconditions: { uid: current.metadata?.uid, resourceVersion: current.metadata?.resourceVersion },
        },
      });
      return true;
    } catch (err) {
      if (isNotFound(err)) return true;
      fail(namespace, 'delete', err);
      return false;
    }
  };
  const recreate = async (current: V1Secret, desired: V1Secret): Promise<void> => {
    if (await remove(current)) await create(desired, true);
  };

  await forEachLimit(
    [
      ...plan.create.map((d) => () => create(d, false)),
      ...plan.update.map((c) => () => update(c.desired)),
      ...plan.recreate.map((c) => () => recreate(c.current, c.desired)),
      ...plan.delete.map((s) => async () => {
        if (await remove(s)) outcome.deleted.push(s.metadata?.namespace ?? '');
      }),
    ],
    WRITE_CONCURRENCY,
    (write) => write(),
  );
  return outcome;
}

/** Logs the outcome and records Events on the source (metadata only: never its data). */
async function report(
  key: Key,
  ctx: ReconcileContext,
  source: V1Secret | undefined,
  plan: ReplicaPlan,
  outcome: ReplicaChanges,
): Promise<void> {
  const regarding = source && regardingSecret(source);
  for (const namespace of outcome.conflicts) {
    ctx.log.error(
      { namespace, name: key.name, eventReason: ERR_RESOURCE_EXISTS },
      'target Secret exists and is not a Levelset copy; not replicated there',
    );
  }
  if (regarding && outcome.conflicts.length > 0) {
    const shown = outcome.conflicts.slice(0, 10).join(', ');
    const more = outcome.conflicts.length > 10 ? ` and ${outcome.conflicts.length - 10} more` : '';
    await ctx.events.record(
      regarding,
      'Warning',
      ERR_RESOURCE_EXISTS,
      `Secret ${key.name} already exists and is not managed by Levelset in namespace(s) ${shown}${more}`,
    );
  }
  const counts = {
    targets: plan.targets.length,
    unchanged: plan.unchanged.length,
    created: outcome.created.length,
    updated: outcome.updated.length,
    recreated: outcome.recreated.length,
    deleted: outcome.deleted.length,
    conflicts: outcome.conflicts.length,
    skipped: outcome.skipped.length,
    failed: outcome.failures.length,
  };
  const changed = counts.created + counts.updated + counts.recreated + counts.deleted;
  if (changed > 0 || counts.failed > 0) ctx.log.info(counts, 'reconciled copies');
  else ctx.log.debug(counts, 'copies converged');
  if (regarding && changed > 0) {
    await ctx.events.record(
      regarding,
      'Normal',
      'Replicated',
      `copies: ${counts.created} created, ${counts.updated + counts.recreated} updated, ${counts.deleted} deleted`,
    );
  }
}

/**
 * Every key the resync publishes, deduplicated: each Secret in the source namespace (except
 * service-account tokens), then each source named by an existing copy (so copies of a source
 * deleted while the relay was down are still pruned). Both LISTs are paginated (`limit`/`continue`).
 * @throws API errors from @kubernetes/client-node (e.g. `ApiException` 410 on an expired continue token).
 */
export async function* listSourceKeys(
  ctx: Pick<ResyncContext, 'kubeConfig'>,
  config: SecretReplicatorConfig,
): AsyncGenerator<Key> {
  const core = ctx.kubeConfig.makeApiClient(CoreV1Api);
  const seen = new Set<string>();
  const sources = paginate((c) =>
    core.listNamespacedSecret({ namespace: config.sourceNamespace, limit: PAGE_SIZE, _continue: c }),
  );
  for await (const s of sources) {
    const name = s.metadata?.name;
    if (!name || s.type === SERVICE_ACCOUNT_TOKEN_TYPE || seen.has(`${config.sourceNamespace}/${name}`))
      continue;
    seen.add(`${config.sourceNamespace}/${name}`);
    yield { namespace: config.sourceNamespace, name };
  }
  const copies = paginate((c) =>
    core.listSecretForAllNamespaces({ labelSelector: COPY_LABEL, limit: PAGE_SIZE, _continue: c }),
  );
  for await (const copy of copies) {
    const key = sourceKeyOf(copy.metadata);
    if (!key || seen.has(`${key.namespace}/${key.name}`)) continue;
    seen.add(`${key.namespace}/${key.name}`);
    yield key;
  }
}
