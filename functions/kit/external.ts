/**
 * `defineExternalResource`: a controller of cloud resources, in crossplane-runtime's managed
 * reconciler shape (docs/external-resources.md). The controller writes, per kind of cloud resource,
 * an {@link ExternalClient} (how to observe, create, update and delete one, and how to compare it
 * with what the spec wants), and a `desired` function (which resources an object wants); the kit does
 * the rest, the same way for every controller:
 *
 * - **the owner mark**: every resource it creates carries the label {@link CLOUD_OWNER_LABEL} = the
 *   object's UID; a resource without it is never written nor deleted (`Ready=False/ResourceExists`)
 *   unless the object adopts it, and one marked by another object never is
 *   (`Ready=False/ManagementConflict`, naming the holder's UID);
 * - **the finalizer** (`levelset.dev/<name>`), and on delete the {@link DELETION_POLICY};
 * - **status**: each resource's full name (`projects/p/topics/t`) in the status field its kind
 *   declares, and `Ready` (Kubernetes API conventions: `True/Available`, `True/Observed`, or `False`
 *   with the reason);
 * - **plans**: in `levelset plan` nothing is written outside the cluster; each write is reported as
 *   a planned change (`planExternal`: would create / update / delete / mark / unmark `<name>`);
 * - **traces**: one span `external <operation>` per Google Cloud call, with the API and the name;
 * - **deadlines**: each call gets an `AbortSignal` that aborts at its kind's `deadlineMs`, and is no
 *   longer awaited then;
 * - **recreation** of a resource whose client says it cannot change in place (`mustRecreate`);
 * - **quota**: a token bucket per Google API in the instance ({@link apiLimiter}); a
 *   `RESOURCE_EXHAUSTED` answer becomes a requeue after its delay (defineController, rate-limits.ts);
 * - **drift**: a resource the object had converged that is found missing or changed is set back and
 *   reported (`Result.driftCorrected`: counted by the runtime with its source, functions/runtime/drift.ts);
 * - **policies** per object, by annotation: {@link DELETION_POLICY}, {@link ADOPTION_POLICY},
 *   {@link RECONCILE_INTERVAL}.
 */
import * as z from 'zod';
import type { PolicyRule, ResourceType } from '../../core/contract/controller.ts';
import { isConditionTrue, parseConditions } from '../../core/k8s/conditions.ts';
import { TerminalError } from '../../core/k8s/errors.ts';
import { inSpan } from '../../core/k8s/tracing.ts';
import { messageResourceExists } from './children.ts';
import { type ControllerDefinition, defineController, type SecondaryWatch } from './define.ts';
import {
  apiLimiter,
  type GoogleCloudConfig,
  googleCloudConfig,
  isGrpcAlreadyExists,
  isGrpcNotFound,
  throwGoogleCloudError,
} from './google-cloud.ts';
import type { IndexFunction } from './index-spec.ts';
import type { Reads } from './reads.ts';
import { READY } from './steps.ts';
import type { FinalizeInput, PrimaryObject, ReconcileInput } from './types.ts';

/** Google Cloud labels: key → value (lower case, ≤ 63 characters each). */
export type Labels = Record<string, string>;

/**
 * The label that marks a cloud resource as an object's: the object's UID (a valid label value).
 * What carries another value, or none, is not this object's.
 */
export const CLOUD_OWNER_LABEL = 'levelset-owner-uid';

/** `delete` (default): the finalizer deletes the object's cloud resources; `abandon`: leaves them, unmarked. */
export const DELETION_POLICY = 'levelset.dev/deletion-policy';
/**
 * `never` (default): a resource that exists unmarked is refused (`ResourceExists`); `adopt`: it is
 * marked, then managed; `observe`: read into status, never written, never deleted (Crossplane's
 * `Observe` management policy).
 */
export const ADOPTION_POLICY = 'levelset.dev/adoption-policy';
/**
 * A Go duration (`10m`, `1h30m`, `0`): the key comes back after it once converged (`requeueAfterMs`);
 * `0` or absent: only on events (and the global resync).
 */
export const RECONCILE_INTERVAL = 'levelset.dev/reconcile-interval';

/** Reason of `Ready=False` when a resource is marked by another object. */
export const MANAGEMENT_CONFLICT = 'ManagementConflict';
/** Reason of `Ready=False` when a resource exists unmarked and the object does not adopt it. */
export const RESOURCE_EXISTS = 'ResourceExists';
/** Reason of `Ready=False` for an invalid policy annotation. */
export const INVALID_POLICY = 'InvalidPolicy';
/** Reason of `Ready=False` when an observed resource does not exist. */
export const NOT_FOUND = 'NotFound';

/**
 * What {@link ExternalClient.observe} found (crossplane-runtime's `ExternalObservation`, its
 * `ResourceExists`): `{ exists: false }` for a missing resource, never an error; else the live
 * resource and its labels (the owner mark among them).
 */
export type Observation<Observed> = { exists: false } | { exists: true; observed: Observed; labels: Labels };

/**
 * How to manage one kind of cloud resource, as crossplane-runtime's `ExternalClient`. Every call
 * makes one Google Cloud call (a `mustRecreate` may make a read) and is given an `AbortSignal` that
 * aborts at the kind's deadline ({@link ExternalKind.deadlineMs}; the kit stops waiting then, whether
 * or not the client library heeds it); errors are thrown as the client library throws them (the kit
 * sorts them: NOT_FOUND on delete is done, ALREADY_EXISTS on create a race, the rest by
 * {@link throwGoogleCloudError}).
 */
export interface ExternalClient<Desired, Observed> {
  /** The Google API, e.g. `pubsub.googleapis.com` (its limiter, the spans). */
  service: string;
  /**
   * Reads the resource `name` (full name), as crossplane-runtime's `ExternalClient.Observe`: a missing
   * one is `{ exists: false }`, never thrown ({@link observeGoogleResource} turns a NOT_FOUND into it).
   */
  observe(name: string, signal: AbortSignal): Promise<Observation<Observed>>;
  /** Whether the live resource has what `desired` asks, labels aside (the kit compares those). */
  isUpToDate(desired: Desired, observed: Observed): boolean;
  /**
   * Whether the live resource differs from `desired` in what cannot change in place (a
   * subscription's topic): the kit then recreates it, delete then create (Terraform's `ForceNew`),
   * instead of `update`. Absent: never. Asked only of a resource not up to date.
   * @throws {TerminalError} when it cannot be recreated yet (the resource is kept as it is)
   */
  mustRecreate?(
    name: string,
    desired: Desired,
    observed: Observed,
    signal: AbortSignal,
  ): boolean | Promise<boolean>;
  /** Creates `name` with `labels` (the spec's and the owner mark). */
  create(name: string, desired: Desired, labels: Labels, signal: AbortSignal): Promise<void>;
  /** Makes `name` what `desired` and `labels` say (it exists; `observed` is what was read). */
  update(
    name: string,
    desired: Desired,
    labels: Labels,
    observed: Observed,
    signal: AbortSignal,
  ): Promise<void>;
  /** Sets the labels of `name` alone (abandon: the mark removed). */
  setLabels(name: string, labels: Labels, observed: Observed, signal: AbortSignal): Promise<void>;
  /** Deletes `name`. */
  delete(name: string, signal: AbortSignal): Promise<void>;
}

/**
 * The {@link Observation} of a Google Cloud resource read by `read`, which throws gRPC NOT_FOUND when
 * it is missing (the client libraries' `getMetadata()`); its labels are its `labels` field.
 * @throws what `read` throws, NOT_FOUND aside
 */
export async function observeGoogleResource<Observed extends { labels?: Labels | null }>(
  read: () => Promise<Observed>,
): Promise<Observation<Observed>> {
  try {
    const observed = await read();
    return { exists: true, observed, labels: { ...observed.labels } };
  } catch (err) {
    if (isGrpcNotFound(err)) return { exists: false };
    throw err;
  }
}

/** One cloud resource an object wants. */
export interface WantedResource<Desired = unknown> {
  /** Full resource name, e.g. `projects/p/topics/t`. */
  name: string;
  desired: Desired;
  /** Its labels besides the owner mark. */
  labels?: Labels;
}

/** ms a call of an {@link ExternalClient} may take, unless its kind says otherwise (`deadlineMs`). */
export const EXTERNAL_CALL_DEADLINE_MS = 30_000;

/** One kind of cloud resource of a controller, and the status field holding the names of its resources. */
export interface ExternalKind<Desired = unknown, Observed = unknown> {
  /** How to observe, create, update and delete one. */
  client: ExternalClient<Desired, Observed>;
  /** `true`: the status field is a list of names; else one name. */
  list?: boolean;
  /** ms each call may take before its signal aborts (default {@link EXTERNAL_CALL_DEADLINE_MS}). */
  deadlineMs?: number;
}

/** The `Desired` of a kind's client. */
export type DesiredOf<Kind> = Kind extends ExternalKind<infer Desired, infer _Observed> ? Desired : never;

/** The resources an object wants, by status field (a kind's field; absent: none of that kind). */
export type Wanted<Kinds extends Record<string, ExternalKind> = Record<string, ExternalKind>> = {
  [Field in keyof Kinds]?: WantedResource<DesiredOf<Kinds[Field]>>[];
};

/** What `desired` is given. */
export interface DesiredInput<Spec> {
  object: PrimaryObject;
  spec: Spec;
  /** The project, emulator and client options of the controllers' Google clients. */
  google: GoogleCloudConfig;
  /** GETs an object the resources depend on (another controller's primary, say); needs `get` in the RBAC. */
  get: Reads['get'];
}

/**
 * What `desired` returns when the object cannot be converged yet (a dependency not there or not
 * Ready): `Ready=False` with this reason and message, nothing written outside the cluster, the status
 * kept. Not an error (no Warning Event, no retry): the key comes back on the dependency's event (a
 * watch mapping it) or at the resync. On delete, the kit releases what the status names.
 */
export interface Waiting {
  wait: { reason: string; message: string };
}

/**
 * A controller of cloud resources. Its types flow from `status` and `kinds` to `desired`: a kind
 * whose key is not a field of the status schema, a field `desired` returns that no kind declares, or
 * a resource of another kind's `Desired`, is a type error.
 */
export interface ExternalResourceDefinition<
  Schema extends z.ZodType,
  Status extends z.ZodObject = z.ZodObject,
  Kinds extends Record<string, ExternalKind> = Record<string, ExternalKind>,
> extends Pick<
    ControllerDefinition<Schema>,
    'name' | 'primary' | 'spec' | 'listKeys' | 'referencedBy' | 'auditLog'
  > {
  /** The zod schema of `status` (ControllerDefinition's): its fields hold the resources' names. */
  status: Status;
  /**
   * Status field → the kind of cloud resource whose full names it holds, in creation order
   * (deleted in reverse order: subscriptions before their topic).
   */
  kinds: Kinds & Record<Exclude<keyof Kinds, keyof z.infer<Status>>, never>;
  /** The resources `object` wants, by status field (a field absent: none of that kind), or {@link Waiting}. */
  desired(
    input: DesiredInput<z.infer<Schema>>,
  ): NoInfer<Wanted<Kinds>> | Waiting | Promise<NoInfer<Wanted<Kinds>> | Waiting>;
  watches?: (ResourceType | SecondaryWatch)[];
  indexes?: Record<string, IndexFunction<z.infer<Schema>>>;
  rbac?: PolicyRule[];
}

const policySchema = z.object({
  [DELETION_POLICY]: z.enum(['delete', 'abandon']).default('delete'),
  [ADOPTION_POLICY]: z.enum(['never', 'adopt', 'observe']).default('never'),
  [RECONCILE_INTERVAL]: z
    .string()
    .transform((d, ctx) => {
      const ms = parseGoDuration(d);
      if (ms === undefined)
        ctx.addIssue({ code: 'custom', message: 'must be a duration such as 10m, 1h30m or 0' });
      return ms ?? 0;
    })
    .default(0),
});

/** An object's policies, from its annotations. */
export interface Policies {
  deletion: 'delete' | 'abandon';
  adoption: 'never' | 'adopt' | 'observe';
  /** ms; 0: only on events. */
  intervalMs: number;
}

/**
 * The policies of `object` (its annotations, zod-validated); those named in `ignore` take their
 * defaults (on delete the interval does not matter, so an invalid one cannot hold the delete).
 * @throws {TerminalError} `InvalidPolicy` naming the annotation and what it must be
 */
export function policiesOf(object: PrimaryObject, ignore: readonly string[] = []): Policies {
  const annotations = Object.entries(object.metadata.annotations ?? {}).filter(([k]) => !ignore.includes(k));
  const parsed = policySchema.safeParse(Object.fromEntries(annotations));
  if (!parsed.success)
    throw new TerminalError(
      INVALID_POLICY,
      parsed.error.issues.map((i) => `annotation ${i.path.join('.')}: ${i.message}`).join('; '),
    );
  const p = parsed.data;
  return { deletion: p[DELETION_POLICY], adoption: p[ADOPTION_POLICY], intervalMs: p[RECONCILE_INTERVAL] };
}

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * A Go duration (Go's `time.ParseDuration`: `300ms`, `10m`, `1h30m`, `0`) in ms, rounded up;
 * `undefined` when it is not one (a sign is refused: an interval is never negative).
 */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(text)) return undefined;
  let ms = 0;
  for (const [, n, , unit] of text.matchAll(/(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)/g))
    ms += Number(n) * (UNIT_MS[unit as string] as number);
  return Math.ceil(ms);
}

/** Whether two label sets are equal, order aside (an update sends `labels` only when they differ: its update mask). */
export const sameLabels = (a: Labels, b: Labels): boolean =>
  JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

/** The names status field `field` holds (one or a list). */
function namesIn(status: unknown, field: string): string[] {
  const value = (status as Record<string, unknown> | undefined)?.[field];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/**
 * Calls one kind's client for one resource: the API's token, a span, and the signal of the kind's
 * deadline; the answer is no longer awaited once it aborts.
 * @throws {Error} `<operation> <name>: no answer within <ms> ms` at the deadline; else what `fn` throws
 */
function caller(kind: ExternalKind, google: GoogleCloudConfig) {
  return async <T>(operation: string, name: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> => {
    await apiLimiter(kind.client.service, google).removeTokens(1);
    const ms = kind.deadlineMs ?? EXTERNAL_CALL_DEADLINE_MS;
    const signal = AbortSignal.timeout(ms);
    const attributes = {
      'levelset.external.service': kind.client.service,
      'levelset.external.resource': name,
    };
    return inSpan(`external ${operation}`, attributes, async () => {
      const { promise, reject, resolve } = Promise.withResolvers<T>();
      const abort = () =>
        reject(new Error(`${operation} ${name}: no answer within ${ms} ms`, { cause: signal.reason }));
      signal.addEventListener('abort', abort, { once: true });
      new Promise<T>((settle) => settle(fn(signal))).then(resolve, reject); // a synchronous throw too
      return promise.finally(() => signal.removeEventListener('abort', abort));
    });
  };
}

/** The log message of each write done (with the resource's name as `resource`). */
const DONE = {
  create: 'created',
  update: 'updated',
  delete: 'deleted',
  mark: 'marked (adopted)',
  unmark: 'unmarked (abandoned)',
};

/** One object's run over its resources: the reads, the writes (or, in a plan, the planned changes). */
function session(
  def: { kind: string },
  input: Pick<ReconcileInput<unknown>, 'dryRun' | 'planExternal' | 'log'>,
  object: PrimaryObject,
  google: GoogleCloudConfig,
) {
  const uid = object.metadata.uid;
  const observe = (kind: ExternalKind, name: string): Promise<Observation<unknown>> =>
    caller(kind, google)('observe', name, (signal) => kind.client.observe(name, signal)).catch((err) =>
      throwGoogleCloudError(err, `read ${name}`),
    );
  /** Runs a write, or in a plan reports it. */
  const write = async (
    kind: ExternalKind,
    action: 'create' | 'update' | 'delete' | 'mark' | 'unmark',
    name: string,
    fn: (signal: AbortSignal) => Promise<void>,
  ): Promise<void> => {
    if (input.dryRun) {
      input.planExternal({ action, resource: name, service: kind.client.service });
      return;
    }
    const operation = action === 'mark' || action === 'unmark' ? 'update' : action;
    try {
      await caller(kind, google)(action, name, fn);
      input.log.info({ resource: name }, DONE[action]);
    } catch (err) {
      if (action === 'delete' && isGrpcNotFound(err)) return;
      throwGoogleCloudError(err, `${operation} ${name}`);
    }
  };
  /** Throws when `labels` (a resource's) are the mark of another object. */
  const holderOf = (name: string, labels: Labels): string | undefined => {
    const holder = labels[CLOUD_OWNER_LABEL];
    if (holder !== undefined && holder !== uid)
      throw new TerminalError(
        MANAGEMENT_CONFLICT,
        `${name} is managed by another object (${CLOUD_OWNER_LABEL}=${holder}); it is never adopted`,
      );
    return holder;
  };
  /** Whether `observed` must be recreated to be what `desired` says (the client's `mustRecreate`). */
  const mustRecreate = (kind: ExternalKind, name: string, desired: unknown, observed: unknown) =>
    kind.client.mustRecreate === undefined
      ? false
      : caller(kind, google)('observe', name, async (signal) =>
          kind.client.mustRecreate?.(name, desired, observed, signal),
        ).catch((err) => throwGoogleCloudError(err, `read ${name}`));

  return {
    /** Converges one wanted resource; `drift`: it had to be set back (it was converged before). */
    async converge(
      kind: ExternalKind,
      wanted: WantedResource,
      policies: Policies,
      wasConverged: boolean,
    ): Promise<{ exists: boolean; drift: boolean }> {
      const { name, desired } = wanted;
      const { client } = kind;
      const labels = { ...wanted.labels, [CLOUD_OWNER_LABEL]: uid };
      let seen = await observe(kind, name);
      if (policies.adoption === 'observe') {
        if (seen.exists) holderOf(name, seen.labels);
        return { exists: seen.exists, drift: false };
      }
      if (!seen.exists) {
        try {
          await write(kind, 'create', name, (signal) => client.create(name, desired, labels, signal));
          return { exists: true, drift: wasConverged };
        } catch (err) {
          // Created meanwhile (another delivery, another party): read it again, and judge it.
          if (!isGrpcAlreadyExists(err)) throw err;
          seen = await observe(kind, name);
          if (!seen.exists) throw err;
        }
      }
      const { observed } = seen;
      const holder = holderOf(name, seen.labels);
      if (holder === undefined) {
        if (policies.adoption !== 'adopt')
          throw new TerminalError(RESOURCE_EXISTS, messageResourceExists(name, def.kind));
        await write(kind, 'mark', name, (signal) => client.update(name, desired, labels, observed, signal));
        return { exists: true, drift: false };
      }
      if (client.isUpToDate(desired, observed) && sameLabels(seen.labels, labels))
        return { exists: true, drift: false };
      if (await mustRecreate(kind, name, desired, observed)) {
        await write(kind, 'delete', name, (signal) => client.delete(name, signal));
        await write(kind, 'create', name, (signal) => client.create(name, desired, labels, signal));
      } else
        await write(kind, 'update', name, (signal) => client.update(name, desired, labels, observed, signal));
      return { exists: true, drift: wasConverged };
    },
    /** Releases one resource the object no longer wants, or on delete: deletes it, or abandons it unmarked. */
    async release(kind: ExternalKind, name: string, policies: Policies): Promise<void> {
      if (policies.adoption === 'observe') return; // never written, never deleted
      const seen = await observe(kind, name);
      if (!seen.exists || seen.labels[CLOUD_OWNER_LABEL] !== uid) return; // not ours
      if (policies.deletion === 'delete') {
        await write(kind, 'delete', name, (signal) => kind.client.delete(name, signal));
        return;
      }
      const { [CLOUD_OWNER_LABEL]: _mark, ...unmarked } = seen.labels;
      await write(kind, 'unmark', name, (signal) =>
        kind.client.setLabels(name, unmarked, seen.observed, signal),
      );
    },
  };
}

/**
 * Declares a controller of cloud resources (see the module comment for what the kit does).
 * @returns the registry's Controller (defineController's), with the finalizer declared
 */
export function defineExternalResource<
  Schema extends z.ZodType,
  Status extends z.ZodObject,
  Kinds extends Record<string, ExternalKind>,
>(def: ExternalResourceDefinition<Schema, Status, Kinds>) {
  const kinds: Record<string, ExternalKind> = def.kinds;
  const fields = Object.keys(kinds);
  const kindOf = (field: string) => kinds[field] as ExternalKind;
  const wantedBy = async (
    object: PrimaryObject,
    spec: z.infer<Schema>,
    google: GoogleCloudConfig,
    get: Reads['get'],
  ): Promise<((field: string) => WantedResource[]) | Waiting> => {
    const wanted = await def.desired({ object, spec, google, get });
    if ('wait' in wanted && !Array.isArray(wanted.wait)) return wanted as Waiting;
    // A field is a kind's (the types say so): absent, none of that kind.
    return (field: string) => (wanted as Wanted)[field] ?? [];
  };

  const { kinds: _kinds, desired: _desired, ...declared } = def;
  return defineController({
    ...declared,
    synced: false,
    finalizePlans: true,
    async reconcile(input: ReconcileInput<z.infer<Schema>>) {
      const { object } = input;
      const policies = policiesOf(object);
      const google = googleCloudConfig();
      const run = session({ kind: def.primary.kind }, input, object, google);
      const wanted = await wantedBy(object, input.spec, google, input.get);
      if (typeof wanted !== 'function')
        return {
          ready: { status: false, ...wanted.wait },
          ...(policies.intervalMs > 0 ? { requeueAfterMs: policies.intervalMs } : {}),
        };
      // Converged before: the last reconcile of this generation ended Ready (a change now is drift).
      const stored = object.status as { observedGeneration?: unknown; conditions?: unknown } | undefined;
      const wasReady =
        stored?.observedGeneration === object.metadata.generation &&
        isConditionTrue(parseConditions(stored?.conditions), READY);
      const status: Record<string, unknown> = {};
      const missing: string[] = [];
      const present: string[] = [];
      let drift = false;
      for (const field of fields) {
        const kind = kindOf(field);
        const names: string[] = [];
        const before = new Set(namesIn(object.status, field));
        for (const w of wanted(field)) {
          const converged = await run.converge(kind, w, policies, wasReady && before.has(w.name));
          drift ||= converged.drift;
          if (converged.exists) names.push(w.name);
          (converged.exists ? present : missing).push(w.name);
        }
        // What the object managed before and no longer wants (a renamed resource, a removed one).
        for (const name of before)
          if (!wanted(field).some((w) => w.name === name)) await run.release(kind, name, policies);
        status[field] = kind.list ? names : names[0];
      }
      const observing = policies.adoption === 'observe';
      const ready =
        missing.length > 0
          ? {
              status: false,
              reason: NOT_FOUND,
              message: `${missing.join(', ')} not found (observed, never created)`,
            }
          : {
              status: true,
              reason: observing ? 'Observed' : 'Available',
              message: `${present.join(', ')} ${present.length === 1 ? 'exists' : 'exist'}${observing ? ' (observed)' : ''}`,
            };
      return {
        status,
        ready,
        ...(policies.intervalMs > 0 ? { requeueAfterMs: policies.intervalMs } : {}),
        ...(drift && !input.dryRun ? { driftCorrected: true } : {}),
      };
    },
    async finalize(input: FinalizeInput<z.infer<Schema>>) {
      const { object } = input;
      // Read from the object as it is now: a policy changed while it is being deleted takes effect.
      const policies = policiesOf(object, [RECONCILE_INTERVAL]);
      const google = googleCloudConfig();
      const run = session({ kind: def.primary.kind }, input, object, google);
      const desired =
        input.spec === undefined ? undefined : await wantedBy(object, input.spec, google, input.get);
      const wanted = typeof desired === 'function' ? desired : () => [];
      for (const field of [...fields].reverse()) {
        const kind = kindOf(field);
        const names = new Set([...namesIn(object.status, field), ...wanted(field).map((w) => w.name)]);
        for (const name of names) await run.release(kind, name, policies);
      }
      return undefined; // done: the kit removes the finalizer
    },
  });
}
