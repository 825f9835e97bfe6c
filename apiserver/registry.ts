/**
 * Verb semantics over the generic store, as k8s.io/apiserver's genericregistry.Store and the type
 * strategies apply them: create/get/list/update/patch/delete, optimistic concurrency, generation,
 * status subresource, finalizers and deletionTimestamp, preconditions, dry run, selectors, pagination.
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import {
  apply,
  decodeManagedFields,
  emptyObject,
  encodeManagedFields,
  type FieldManagerContext,
  isResetManagedFields,
  type Manager,
  managerFromUserAgent,
  recordUpdate,
  resetFields,
  SchemaError,
  schemaOf,
  syncLastApplied,
  type TypeInfo,
} from './apply.ts';
import { dropUnknownFields } from './builtin-schema.ts';
import { applyPatch, checkPatchType } from './patch.ts';
import { groupVersion, type KubeObject, type ResourceRegistry, type ResourceType } from './resources.ts';
import { fieldsMatch, parseFieldSelector, parseLabelSelector } from './selectors.ts';
import {
  ApiError,
  alreadyExists,
  badRequest,
  conflict,
  continueExpired,
  deleteSuccess,
  type FieldError,
  fieldErrors,
  forbidden,
  type GroupResource,
  internalError,
  invalid,
  notFound,
  OPTIMISTIC_LOCK_MESSAGE,
  type Status,
  tooOldResourceVersion,
} from './status.ts';

/**
 * Namespaces that may never be deleted: `default`, `kube-system`, `kube-public` (the
 * NamespaceLifecycle admission plugin's immortal namespaces, metav1.NamespaceDefault/System/Public).
 */
export const IMMORTAL_NAMESPACES: readonly string[] = ['default', 'kube-system', 'kube-public'];

import { type RuleResult, validateRules } from './cel.ts';
import { admitByPolicies } from './policies.ts';
import { objectKey, type Store } from './store.ts';
import { decodeTimes, TimeParseError } from './times.ts';
import { applySchema, type SchemaResult, validateCrd, validateObjectMeta } from './validation.ts';

/** Per-request write options (query parameters of create/update/patch/delete). */
export interface WriteOptions {
  /** `dryRun=All`: run everything but do not persist. */
  dryRun?: boolean;
  fieldManager?: string;
  /** The request's User-Agent: the field manager of a non-apply write without `fieldManager`. */
  userAgent?: string;
  /** `force` of an apply patch: take the conflicting fields from their managers. */
  force?: boolean;
  /** managedFields computed by server-side apply (internal: the apply path's create/update). */
  managedFields?: unknown[];
  /** `fieldValidation`: Strict rejects unknown fields (400), Warn (default) reports them. */
  fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
  /** Warnings to return in `Warning` headers. */
  warnings?: string[];
  /** The requester, as admission's `request.userInfo` sees it. */
  user?: { username: string; uid?: string; groups: string[] };
}

/** Options of a list (query parameters). */
export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: string;
}

/** metav1.DeleteOptions, the fields honoured. */
export interface DeleteOptions {
  propagationPolicy?: string;
  orphanDependents?: boolean;
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: string[];
}

/** A list result in storage form plus its list metadata. */
export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

/** RFC 3339 with seconds precision, as metav1.Time serializes. */
export function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function groupResource(t: ResourceType): GroupResource {
  return { group: t.group, resource: t.plural };
}

const GENERATE_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

/** Finalizers the garbage collector acts on (metav1.FinalizerOrphanDependents / FinalizerDeleteDependents). */
export const FINALIZER_ORPHAN = 'orphan';
export const FINALIZER_FOREGROUND = 'foregroundDeletion';
export const FINALIZER_CRD_CLEANUP = 'customresourcecleanup.apiextensions.k8s.io';

/** Builds a continue token in kube-apiserver's format (base64 JSON of the list rv and next key). */
export function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start })).toString('base64');
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as {
      v?: string;
      rv?: number;
      start?: string;
    };
    if (parsed.v !== 'meta.k8s.io/v1' || typeof parsed.rv !== 'number' || typeof parsed.start !== 'string')
      throw new Error();
    return { rv: parsed.rv, start: parsed.start };
  } catch {
    throw badRequest(
      `continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)`,
    );
  }
}

/**
 * A read not older than `rv`, beyond the store's `current`: kube-apiserver's watch cache waits for it
 * (3 s), then answers 504 with cause `ResourceVersionTooLarge` (apiserver's storage errors,
 * `NewTooLargeResourceVersionError`); this store is always current, so it answers at once.
 */
function tooLargeResourceVersion(rv: number, current: number): ApiError {
  return new ApiError({
    message: `Timeout: Too large resource version: ${rv}, current: ${current}`,
    reason: 'Timeout',
    details: {
      causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
      retryAfterSeconds: 1,
    },
    code: 504,
  });
}

function parseRv(rv: string | undefined, what: string): number | undefined {
  if (rv === undefined || rv === '') return undefined;
  if (!/^\d+$/.test(rv)) throw badRequest(`invalid ${what} resource version: ${rv}`);
  return Number(rv);
}

/** The part of an object whose change bumps `metadata.generation`. */
function specOf(t: ResourceType, obj: KubeObject): unknown {
  const { metadata: _m, apiVersion: _a, kind: _k, status, ...rest } = obj;
  if (t.custom && !t.statusSubresource) return { ...rest, status };
  return rest;
}

export class Registry {
  readonly store: Store;
  readonly resources: ResourceRegistry;

  constructor(store: Store, resources: ResourceRegistry) {
    this.store = store;
    this.resources = resources;
  }

  /** The object as served at `t`'s version (storage → version conversion). */
  toVersion(t: ResourceType, obj: KubeObject): KubeObject {
    const converted = t.fromStorage ? t.fromStorage(obj) : obj;
    const { apiVersion: _a, kind: _k, ...rest } = converted;
    return { apiVersion: groupVersion(t), kind: t.kind, ...rest };
  }

  private toStorage(t: ResourceType, obj: KubeObject): KubeObject {
    const { apiVersion: _a, kind: _k, ...rest } = obj;
    const withType: KubeObject = { apiVersion: groupVersion(t), kind: t.kind, ...rest };
    return t.toStorage ? t.toStorage(withType) : withType;
  }

  private key(t: ResourceType, namespace: string | undefined, name: string): string {
    return objectKey(t.namespaced ? namespace : undefined, name);
  }

  /**
   * Reads one object in storage form.
   * @throws ApiError 404 NotFound
   */
  getStored(t: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const obj = this.store.get(t.storage, this.key(t, namespace, name));
    if (!obj) throw notFound(groupResource(t), name);
    return obj;
  }

  /**
   * GET: the latest state. With `resourceVersion` (a GET's "not older than", served by
   * kube-apiserver's watch cache), the same, as this store is always current; one beyond it is a
   * 504 ({@link tooLargeResourceVersion}), one not a resourceVersion a 400.
   */
  get(t: ResourceType, namespace: string | undefined, name: string, resourceVersion?: string): KubeObject {
    const rv = parseRv(resourceVersion, 'get');
    const current = this.store.currentRv();
    if (rv !== undefined && rv > current) throw tooLargeResourceVersion(rv, current);
    return this.toVersion(t, this.getStored(t, namespace, name));
  }

  /** A field selector value reader for `t`, after checking the labels are supported. */
  fieldReader(t: ResourceType, fieldSelector: string | undefined) {
    const reqs = parseFieldSelector(fieldSelector);
    for (const r of reqs) {
      if (r.field === 'metadata.name' || r.field === 'metadata.namespace' || t.fieldLabels[r.field]) continue;
      if (t.custom)
        throw badRequest(
          `"${r.field}" is not a known field selector: only "metadata.name", "metadata.namespace"`,
        );
      throw badRequest(`field label not supported: ${r.field}`);
    }
    return (obj: KubeObject) =>
      fieldsMatch(reqs, (f) => {
        if (f === 'metadata.name') return obj.metadata.name ?? '';
        if (f === 'metadata.namespace') return obj.metadata.namespace ?? '';
        return t.fieldLabels[f]?.(obj) ?? '';
      });
  }

  /** A predicate on storage-form objects for a label and field selector. */
  matcher(t: ResourceType, labelSelector?: string, fieldSelector?: string): (obj: KubeObject) => boolean {
    const labels = parseLabelSelector(labelSelector);
    const fields = this.fieldReader(t, fieldSelector);
    return (obj) => labels.matches(obj.metadata.labels) && fields(t.fromStorage ? t.fromStorage(obj) : obj);
  }

  /**
   * Lists objects (storage form) with selectors and pagination.
   * @throws ApiError 400 bad selector/token, 410 continue token or Exact resourceVersion compacted, 504 too large rv
   */
  list(t: ResourceType, namespace: string | undefined, opts: ListOptions): ListResult {
    const match = this.matcher(t, opts.labelSelector, opts.fieldSelector);
    const current = this.store.currentRv();
    let listRv = current;
    let start = '';
    let atRv: number | undefined; // read the state at this resourceVersion (continue, Exact)
    if (opts.continue) {
      const token = decodeContinue(opts.continue);
      listRv = token.rv;
      start = token.start;
      atRv = listRv;
    } else {
      const rv = parseRv(opts.resourceVersion, 'list');
      if (rv !== undefined && rv > current) throw tooLargeResourceVersion(rv, current);
      if (opts.resourceVersionMatch === 'Exact' && rv !== undefined) {
        atRv = rv;
        listRv = rv;
      }
    }
    // One range read in key order: only the page's matching objects are copied; past the page,
    // matches are only counted (remainingItemCount), or the read stops at the first (selectors).
    const limit = opts.limit && opts.limit > 0 ? opts.limit : undefined;
    const selectors = Boolean(opts.labelSelector || opts.fieldSelector);
    const items: KubeObject[] = [];
    let remaining = 0;
    const range = { namespace: t.namespaced ? namespace : undefined, from: start };
    const visit = (o: Readonly<KubeObject>) => {
      if (!match(o as KubeObject)) return;
      if (limit === undefined || items.length < limit) items.push(structuredClone(o) as KubeObject);
      else {
        remaining++;
        if (selectors) return false;
      }
    };
    if (atRv === undefined) this.store.walk(t.storage, range, visit);
    else if (!this.store.walkAt(t.storage, atRv, range, visit)) {
      if (opts.continue) throw continueExpired();
      throw tooOldResourceVersion(atRv, this.store.oldestAvailable(t.storage));
    }
    if (limit === undefined || remaining === 0) return { items, resourceVersion: String(listRv) };
    const last = items[items.length - 1] as KubeObject;
    const result: ListResult = {
      items,
      resourceVersion: String(listRv),
      continue: encodeContinue(
        listRv,
        `${objectKey(last.metadata.namespace, last.metadata.name ?? '')}\u0000`,
      ),
    };
    if (!selectors) result.remainingItemCount = remaining;
    return result;
  }

  private checkNamespace(t: ResourceType, namespace: string | undefined, name: string): void {
    if (!t.namespaced || !namespace) return;
    const ns = this.store.get('/namespaces', namespace);
    if (!ns) throw notFound({ group: '', resource: 'namespaces' }, namespace);
    if (ns.metadata.deletionTimestamp) {
      throw forbidden(
        groupResource(t),
        name,
        `unable to create new content in namespace ${namespace} because it is being terminated`,
        [
          {
            reason: 'NamespaceTerminating',
            message: `namespace ${namespace} is being terminated`,
            field: 'metadata.namespace',
          },
        ],
      );
    }
  }

  private bodyObject(body: unknown): KubeObject {
    if (!body || typeof body !== 'object' || Array.isArray(body))
      throw badRequest("Object 'Kind' is missing in 'null'");
    // A JSON round trip, as decoding from the wire: no undefined-valued fields, no shared references.
    const obj = JSON.parse(JSON.stringify(body)) as KubeObject;
    if (!obj.metadata || typeof obj.metadata !== 'object') obj.metadata = {};
    return obj;
  }

  /**
   * Decodes a create/update body's time fields as kube-apiserver's JSON decoding does (times.ts).
   * @throws ApiError 400 `<Kind> in version "<v>" cannot be handled as a <Kind>: parsing time …`
   *   (apiserver handlers transformDecodeError)
   */
  private decodeBody(t: ResourceType, obj: KubeObject): void {
    try {
      decodeTimes(t, obj);
    } catch (err) {
      if (!(err instanceof TimeParseError)) throw err;
      throw badRequest(
        `${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: ${err.message}`,
      );
    }
  }

  /**
   * Prunes/defaults/validates a custom resource against its schema, and drops the fields a built-in
   * kind does not declare (builtin-schema.ts); handles fieldValidation.
   */
  private applyCustomSchema(t: ResourceType, obj: KubeObject, opts: WriteOptions): FieldError[] {
    const result: SchemaResult = { errors: [], unknownFields: [] };
    if (t.custom?.schema) {
      const { metadata, ...rest } = obj;
      const body = rest as Record<string, unknown>;
      applySchema(body, t.custom.schema, '', result);
      for (const k of Object.keys(obj)) if (k !== 'metadata') delete obj[k];
      Object.assign(obj, body, { metadata });
    } else if (t.model) result.unknownFields = dropUnknownFields(t.model, obj);
    else return [];
    if (result.unknownFields.length > 0) {
      if (opts.fieldValidation === 'Strict') {
        throw badRequest(
          `${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: strict decoding error: ${result.unknownFields
            .map((f) => `unknown field "${f}"`)
            .join(', ')}`,
        );
      }
      if (opts.fieldValidation !== 'Ignore')
        for (const f of result.unknownFields) opts.warnings?.push(`unknown field "${f}"`);
    }
    return result.errors;
  }

  private validate(
    t: ResourceType,
    obj: KubeObject,
    old: KubeObject | undefined,
    extra: FieldError[],
    opts: WriteOptions = {},
  ): void {
    const errs = [
      ...validateObjectMeta(obj, t.nameRule, t.namespaced),
      ...extra,
      ...(t.validate?.(obj, old) ?? []),
    ];
    // A CRD's CEL rules and list types (cel.ts), after its schema: as apiextensions' strategy, not
    // when the schema found a value of the wrong type (the rules would see a value of no CEL type).
    if (t.custom?.schema && !extra.some((e) => e.type === 'FieldValueTypeInvalid')) {
      const rules: RuleResult = { errors: [], warnings: [] };
      validateRules(t.custom.schema, obj, old, '', rules);
      errs.push(...rules.errors);
      opts.warnings?.push(...rules.warnings);
    }
    if (t.storage === 'apiextensions.k8s.io/customresourcedefinitions') errs.push(...validateCrd(obj));
    if (old?.metadata.deletionTimestamp) {
      const added = (obj.metadata.finalizers ?? []).filter(
        (f) => !(old.metadata.finalizers ?? []).includes(f),
      );
      if (added.length > 0)
        errs.push(
          fieldErrors.forbidden(
            'metadata.finalizers',
            'no new finalizers can be added if the object is being deleted',
          ),
        );
    }
    if (errs.length > 0) throw invalid(t.kind, t.group, obj.metadata.name ?? '', errs);
  }

  /**
   * The ValidatingAdmissionPolicies bound in the store, run on a create or update after its
   * validation (policies.ts). The admissionregistration.k8s.io kinds are exempt, as kube-apiserver
   * exempts them (a policy cannot lock its own changes out).
   * @throws ApiError the first `Deny` refusal (422 `Invalid` unless the validation names a reason)
   */
  private admit(
    t: ResourceType,
    operation: 'CREATE' | 'UPDATE',
    obj: KubeObject,
    old: KubeObject | undefined,
    opts: WriteOptions,
    subresource?: string,
  ): void {
    if (t.group === 'admissionregistration.k8s.io') return;
    const bindings = this.store.list('admissionregistration.k8s.io/validatingadmissionpolicybindings');
    if (bindings.length === 0) return;
    const policies = this.store.list('admissionregistration.k8s.io/validatingadmissionpolicies');
    const namespace = t.namespaced ? obj.metadata.namespace : undefined;
    const outcome = admitByPolicies(
      policies,
      bindings,
      {
        operation,
        group: t.group,
        version: t.version,
        kind: t.kind,
        resource: t.plural,
        subresource,
        namespace,
        name: obj.metadata.name ?? '',
        object: obj,
        oldObject: old,
        namespaceObject: namespace ? this.store.get('/namespaces', namespace) : undefined,
        user: opts.user,
        dryRun: opts.dryRun ?? false,
      },
      groupResource(t),
    );
    opts.warnings?.push(...outcome.warnings);
    if (outcome.denied) throw outcome.denied;
  }

  /**
   * Creates an object.
   * @returns the created object at `t`'s version
   * @throws ApiError 404 namespace missing, 403 namespace terminating, 409 AlreadyExists, 422 Invalid, 400 BadRequest
   */
  create(t: ResourceType, namespace: string | undefined, body: unknown, opts: WriteOptions = {}): KubeObject {
    const obj = this.bodyObject(body);
    this.decodeBody(t, obj);
    const meta = obj.metadata;
    if (t.namespaced) {
      if (meta.namespace && namespace && meta.namespace !== namespace) {
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      meta.namespace = namespace ?? meta.namespace;
    } else delete meta.namespace;
    if (meta.resourceVersion)
      throw internalError('resourceVersion should not be set on objects to be created');
    if (!meta.name && meta.generateName) {
      let suffix = '';
      for (let i = 0; i < 5; i++) suffix += GENERATE_CHARS[Math.floor(Math.random() * GENERATE_CHARS.length)];
      meta.name = `${meta.generateName}${suffix}`;
    }
    this.checkNamespace(t, meta.namespace, meta.name ?? '');
    meta.uid = randomUUID();
    meta.creationTimestamp = now();
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    const incomingManagedFields = meta.managedFields;
    delete meta.managedFields;
    delete meta.selfLink;
    if (t.hasGeneration) meta.generation = 1;
    else delete meta.generation;
    if (t.custom && t.statusSubresource) delete obj.status;
    t.defaults?.(obj);
    const schemaErrors = this.applyCustomSchema(t, obj, opts);
    this.trackCreate(t, obj, incomingManagedFields, opts);
    if (t.storage === 'apiextensions.k8s.io/customresourcedefinitions') {
      const versions = ((obj.spec as Record<string, unknown> | undefined)?.versions ?? []) as Record<
        string,
        unknown
      >[];
      obj.status = {
        acceptedNames: { kind: '', plural: '' },
        conditions: [],
        storedVersions: versions.filter((v) => v.storage).map((v) => v.name),
      };
    }
    t.prepareForCreate?.(obj);
    this.validate(t, obj, undefined, schemaErrors, opts);
    this.admit(t, 'CREATE', obj, undefined, opts);
    const key = this.key(t, meta.namespace, meta.name ?? '');
    if (this.store.get(t.storage, key)) throw alreadyExists(groupResource(t), meta.name ?? '');
    const stored = this.toStorage(t, obj);
    if (opts.dryRun) return this.toVersion(t, stored);
    return this.toVersion(t, this.store.create(t.storage, key, stored));
  }

  /**
   * Replaces an object (PUT), or its status (`subresource` = `status`), or a namespace's
   * `spec.finalizers` (`finalize`), or a pod's node and `PodScheduled` condition (`binding`).
   * @throws ApiError 404, 409 Conflict (stale resourceVersion or uid), 422, 400 name/namespace mismatch
   */
  update(
    t: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    opts: WriteOptions = {},
    subresource?: string,
  ): KubeObject {
    const incoming = this.bodyObject(body);
    this.decodeBody(t, incoming);
    if (incoming.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${incoming.metadata.name ?? ''}) does not match the name on the URL (${name})`,
      );
    }
    if (t.namespaced && incoming.metadata.namespace && incoming.metadata.namespace !== namespace) {
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    const existingStored = this.getStored(t, namespace, name);
    const existing = this.toVersion(t, existingStored);
    const gr = groupResource(t);
    const rv = incoming.metadata.resourceVersion;
    if (rv && rv !== existing.metadata.resourceVersion) throw conflict(gr, name, OPTIMISTIC_LOCK_MESSAGE);
    if (incoming.metadata.uid && incoming.metadata.uid !== existing.metadata.uid) {
      throw conflict(
        gr,
        name,
        `Precondition failed: UID in precondition: ${incoming.metadata.uid}, UID in object meta: ${existing.metadata.uid}`,
      );
    }
    let next: KubeObject;
    if (subresource === 'status') {
      next = structuredClone(existing);
      if ('status' in incoming) next.status = incoming.status;
      else delete next.status;
    } else if (subresource === 'binding') {
      // pods/binding (http.ts bindPod): spec.nodeName and the PodScheduled condition, written together.
      next = incoming;
    } else if (subresource === 'finalize') {
      next = structuredClone(existing);
      const spec = (incoming.spec ?? {}) as Record<string, unknown>;
      next.spec = { ...(next.spec as object), finalizers: spec.finalizers ?? [] };
    } else {
      next = incoming;
      if (t.statusSubresource) {
        if ('status' in existing) next.status = existing.status;
        else delete next.status;
      }
      if (t.storage === '/namespaces') next.spec = existing.spec;
    }
    const incomingManagedFields = incoming.metadata.managedFields;
    const m = next.metadata;
    const em = existing.metadata;
    m.namespace = em.namespace;
    if (!t.namespaced) delete m.namespace;
    m.uid = em.uid;
    m.creationTimestamp = em.creationTimestamp;
    m.resourceVersion = em.resourceVersion;
    if (em.deletionTimestamp) m.deletionTimestamp = em.deletionTimestamp;
    else delete m.deletionTimestamp;
    if (em.deletionGracePeriodSeconds !== undefined)
      m.deletionGracePeriodSeconds = em.deletionGracePeriodSeconds;
    else delete m.deletionGracePeriodSeconds;
    delete m.managedFields;
    delete m.selfLink;
    if (!m.generateName && em.generateName) m.generateName = em.generateName;
    t.defaults?.(next);
    const schemaErrors = this.applyCustomSchema(t, next, opts);
    if (t.hasGeneration) {
      m.generation = em.generation ?? 1;
      if (!isDeepStrictEqual(specOf(t, next), specOf(t, existing))) m.generation += 1;
    } else delete m.generation;
    this.trackUpdate(t, existing, next, incomingManagedFields, opts, subresource);
    this.validate(t, next, existing, schemaErrors, opts);
    this.admit(t, 'UPDATE', next, existing, opts, subresource);
    const key = this.key(t, namespace, name);
    const stored = this.toStorage(t, next);
    if (isDeepStrictEqual(stored, existingStored)) return existing;
    if (opts.dryRun) return this.toVersion(t, stored);
    if (m.deletionTimestamp && (m.finalizers ?? []).length === 0 && !this.namespaceFinalizers(t, next)) {
      return this.toVersion(t, this.store.delete(t.storage, key, stored));
    }
    return this.toVersion(t, this.store.update(t.storage, key, stored));
  }

  private typeInfo(t: ResourceType): TypeInfo {
    return {
      group: t.group,
      kind: t.kind,
      apiVersion: groupVersion(t),
      custom: !!t.custom,
      customSchema: t.custom?.schema,
    };
  }

  private fieldContext(t: ResourceType, obj: KubeObject, subresource?: string): FieldManagerContext {
    const ctx: FieldManagerContext = {
      schema: schemaOf(this.typeInfo(t)),
      apiVersion: groupVersion(t),
      ignored: resetFields(obj, t.statusSubresource, subresource),
    };
    if (subresource) ctx.subresource = subresource;
    return ctx;
  }

  /** The field manager of a non-apply write: `fieldManager`, else from the User-Agent, else (in-process) the controller's. */
  private managerOf(t: ResourceType, opts: WriteOptions): string {
    if (opts.fieldManager) return opts.fieldManager;
    if (opts.userAgent !== undefined) return managerFromUserAgent(opts.userAgent);
    return t.storage === 'apiextensions.k8s.io/customresourcedefinitions'
      ? 'kube-apiserver'
      : 'kube-controller-manager';
  }

  /** managedFields of a create (FieldManager.UpdateNoErrors against the type's empty object). */
  private trackCreate(t: ResourceType, obj: KubeObject, incoming: unknown, opts: WriteOptions): void {
    if (opts.managedFields) {
      if (opts.managedFields.length > 0) obj.metadata.managedFields = opts.managedFields;
      return;
    }
    const managers =
      (!isResetManagedFields(incoming) && decodeManagedFields(incoming)) || new Map<string, Manager>();
    try {
      recordUpdate(
        emptyObject(this.typeInfo(t)),
        obj,
        managers,
        this.managerOf(t, opts),
        this.fieldContext(t, obj),
      );
      const encoded = encodeManagedFields(managers);
      if (encoded) obj.metadata.managedFields = encoded;
    } catch (err) {
      if (!(err instanceof SchemaError)) throw err;
    }
  }

  /**
   * managedFields of an update or non-apply patch (FieldManager.Update): the request's own
   * managedFields when it sends some (`[{}]` resets them), else the live object's; an object without
   * any stays untracked (managedfields skipNonAppliedManager).
   */
  private trackUpdate(
    t: ResourceType,
    existing: KubeObject,
    next: KubeObject,
    incoming: unknown,
    opts: WriteOptions,
    subresource?: string,
  ): void {
    delete next.metadata.managedFields;
    if (opts.managedFields) {
      if (opts.managedFields.length > 0) next.metadata.managedFields = opts.managedFields;
      return;
    }
    const live = existing.metadata.managedFields;
    let managers: Map<string, Manager> | undefined;
    if (subresource) managers = decodeManagedFields(live);
    else if (isResetManagedFields(incoming)) managers = undefined;
    else {
      const mine = decodeManagedFields(incoming);
      managers = mine && mine.size > 0 ? mine : decodeManagedFields(live);
    }
    if (!managers || managers.size === 0) return;
    try {
      recordUpdate(
        withoutManagedFields(existing),
        next,
        managers,
        this.managerOf(t, opts),
        this.fieldContext(t, next, subresource),
      );
      const encoded = encodeManagedFields(managers);
      if (encoded) next.metadata.managedFields = encoded;
    } catch (err) {
      if (!(err instanceof SchemaError)) throw err;
    }
  }

  /**
   * Server-side apply (`application/apply-patch+yaml`): merges the applied configuration into the
   * live object (or the type's empty object, creating it) with field ownership, as {@link apply}.
   * @throws ApiError 400 wrong apiVersion/kind or managedFields in the configuration, 404 for a
   * missing object's /status, 409 Conflict with other managers, as update/create otherwise
   */
  private apply(
    t: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    opts: WriteOptions,
    subresource?: string,
  ): { object: KubeObject; created: boolean } {
    const config = this.bodyObject(patch);
    if (config.apiVersion !== groupVersion(t) || config.kind !== t.kind) {
      const [g, v] = String(config.apiVersion ?? '').includes('/')
        ? String(config.apiVersion).split('/', 2)
        : ['', String(config.apiVersion ?? '')];
      throw badRequest(`invalid object type: ${g}/${v}, Kind=${String(config.kind ?? '')}`);
    }
    if (config.metadata.managedFields !== undefined && config.metadata.managedFields !== null)
      throw badRequest('metadata.managedFields must be nil');
    delete config.metadata.managedFields;
    let existing: KubeObject | undefined;
    try {
      existing = this.get(t, namespace, name);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404) || subresource) throw err;
    }
    const info = this.typeInfo(t);
    const ctx = this.fieldContext(t, config, subresource);
    const managers = decodeManagedFields(existing?.metadata.managedFields) ?? new Map<string, Manager>();
    let result: ReturnType<typeof apply>;
    try {
      result = apply(
        existing ?? emptyObject(info),
        config,
        managers,
        opts.fieldManager ?? '',
        opts.force === true,
        ctx,
        existing ? emptyObject(info) : undefined,
      );
    } catch (err) {
      if (!(err instanceof SchemaError)) throw err;
      const gvk = `${t.group}/${t.version}, Kind=${t.kind}`;
      throw internalError(
        `failed to create typed patch object (${namespace ?? ''}/${name}; ${gvk}): ${err.message}`,
      );
    }
    const object = dropNulls(result.object) as KubeObject;
    object.metadata ??= {};
    syncLastApplied(object, config, opts.fieldManager ?? '');
    if ((object.metadata.name ?? '') !== name) {
      throw badRequest(
        `the name of the object (${object.metadata.name ?? ''}) does not match the name on the URL (${name})`,
      );
    }
    const managedFields = encodeManagedFields(result.managers) ?? [];
    const writeOpts = { ...opts, managedFields };
    if (!existing) {
      delete object.metadata.creationTimestamp;
      return { object: this.create(t, namespace, object, writeOpts), created: true };
    }
    return { object: this.update(t, namespace, name, object, writeOpts, subresource), created: false };
  }

  private namespaceFinalizers(t: ResourceType, obj: KubeObject): boolean {
    if (t.storage !== '/namespaces') return false;
    const f = (obj.spec as { finalizers?: string[] } | undefined)?.finalizers;
    return Array.isArray(f) && f.length > 0;
  }

  /**
   * Patches an object (or its status). `application/apply-patch+yaml` creates a missing object.
   * @throws ApiError as {@link Registry.update}, 415 for an unknown patch type
   */
  patch(
    t: ResourceType,
    namespace: string | undefined,
    name: string,
    contentType: string,
    patch: unknown,
    opts: WriteOptions = {},
    subresource?: string,
  ): { object: KubeObject; created: boolean } {
    checkPatchType(contentType, !!t.custom);
    const isApply = contentType === 'application/apply-patch+yaml';
    checkPatchOptions(isApply, opts);
    if (isApply) return this.apply(t, namespace, name, patch, opts, subresource);
    const existing = this.get(t, namespace, name);
    const patched = applyPatch(contentType, existing, patch, !!t.custom) as KubeObject;
    if (!patched || typeof patched !== 'object') throw badRequest('the patched object is not a JSON object');
    patched.metadata ??= {};
    try {
      decodeTimes(t, patched);
    } catch (err) {
      if (!(err instanceof TimeParseError)) throw err;
      // apiserver handlers/patch.go: a patched object that does not decode is 422 on field `patch`.
      throw invalid('', '', '', [fieldErrors.invalid('patch', JSON.stringify(patched), err.message)]);
    }
    if (patched.metadata.name === undefined) patched.metadata.name = name;
    return { object: this.update(t, namespace, name, patched, opts, subresource), created: false };
  }

  /**
   * Deletes an object: at once, or — with finalizers (including those the propagation policy adds) —
   * by setting `deletionTimestamp` so it stays until its finalizers are removed.
   * @returns the object when it still exists, else a `Status` Success
   * @throws ApiError 403 an immortal namespace, 404, 409 precondition failed, 422 bad propagation policy
   */
  delete(
    t: ResourceType,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
    opts: WriteOptions = {},
  ): { object?: KubeObject; status?: Omit<Status, 'code'> } {
    const gr = groupResource(t);
    // The NamespaceLifecycle admission plugin (plugin/pkg/admission/namespace/lifecycle) runs before
    // the delete and refuses it for its immortal namespaces, existing or not.
    if (t.storage === '/namespaces' && IMMORTAL_NAMESPACES.includes(name))
      throw forbidden(gr, name, 'this namespace may not be deleted');
    const existingStored = this.getStored(t, namespace, name);
    const existing = this.toVersion(t, existingStored);
    const pre = options.preconditions;
    // rest.BeforeDelete checks preconditions first and names the Kind, not the resource
    // (errors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ...)).
    const byKind: GroupResource = { group: t.group, resource: t.kind };
    if (pre?.uid && pre.uid !== existing.metadata.uid) {
      throw conflict(
        byKind,
        name,
        `the UID in the precondition (${pre.uid}) does not match the UID in record (${existing.metadata.uid}). The object might have been deleted and then recreated`,
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== existing.metadata.resourceVersion) {
      throw conflict(
        byKind,
        name,
        `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${existing.metadata.resourceVersion}). The object might have been modified`,
      );
    }
    let policy = options.propagationPolicy;
    if (policy !== undefined && !['Orphan', 'Background', 'Foreground'].includes(policy)) {
      throw invalid('DeleteOptions', '', '', [
        fieldErrors.notSupported('propagationPolicy', policy, ['Foreground', 'Background', 'Orphan', 'nil']),
      ]);
    }
    if (policy === undefined && options.orphanDependents !== undefined)
      policy = options.orphanDependents ? 'Orphan' : 'Background';
    const next = structuredClone(existing);
    const finalizers = [...(next.metadata.finalizers ?? [])];
    const add = (f: string) => {
      if (!finalizers.includes(f)) finalizers.push(f);
    };
    if (policy === 'Foreground') add(FINALIZER_FOREGROUND);
    if (policy === 'Orphan') add(FINALIZER_ORPHAN);
    if (t.storage === 'apiextensions.k8s.io/customresourcedefinitions') add(FINALIZER_CRD_CLEANUP);
    const key = this.key(t, namespace, name);
    const isNamespace = t.storage === '/namespaces';
    if (finalizers.length > 0 || isNamespace) {
      if (finalizers.length > 0) next.metadata.finalizers = finalizers;
      if (!next.metadata.deletionTimestamp) {
        next.metadata.deletionTimestamp = now();
        next.metadata.deletionGracePeriodSeconds = 0;
        if (t.hasGeneration && next.metadata.generation) next.metadata.generation += 1;
      }
      if (isNamespace) next.status = { ...(next.status as object), phase: 'Terminating' };
      if (isNamespace && !this.namespaceFinalizers(t, next) && finalizers.length === 0) {
        if (opts.dryRun) return { object: next };
        this.store.delete(t.storage, key, this.toStorage(t, next));
        return { object: next };
      }
      const stored = this.toStorage(t, next);
      if (isDeepStrictEqual(stored, existingStored) || opts.dryRun)
        return { object: opts.dryRun ? next : existing };
      return { object: this.toVersion(t, this.store.update(t.storage, key, stored)) };
    }
    // genericregistry Store.finalizeDelete: the object when the type's ReturnDeletedObject, else Status.
    if (opts.dryRun)
      return t.returnDeletedObject
        ? { object: existing }
        : { status: deleteSuccess(gr, name, existing.metadata.uid ?? '') };
    const gone = this.toVersion(t, this.store.delete(t.storage, key));
    if (t.returnDeletedObject) return { object: gone };
    return { status: deleteSuccess(gr, name, existing.metadata.uid ?? '') };
  }

  /** DELETE on a collection: deletes every matching object; returns the affected objects. */
  deleteCollection(
    t: ResourceType,
    namespace: string | undefined,
    list: ListOptions,
    options: DeleteOptions,
    opts: WriteOptions,
  ): KubeObject[] {
    const { items } = this.list(t, namespace, {
      labelSelector: list.labelSelector,
      fieldSelector: list.fieldSelector,
    });
    const out: KubeObject[] = [];
    for (const item of items) {
      try {
        const r = this.delete(t, item.metadata.namespace, item.metadata.name ?? '', options, opts);
        out.push(r.object ?? this.toVersion(t, item));
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
    return out;
  }
}

/**
 * PatchOptions validation (apimachinery ValidatePatchOptions): apply needs a fieldManager, only
 * apply takes `force`.
 * @throws ApiError 422 Invalid PatchOptions
 */
function checkPatchOptions(isApply: boolean, opts: WriteOptions): void {
  let error: FieldError | undefined;
  if (!isApply && opts.force !== undefined)
    error = fieldErrors.forbidden('force', 'may not be specified for non-apply patch');
  else if (isApply && !opts.fieldManager)
    error = fieldErrors.required('fieldManager', 'is required for apply patch');
  if (!error) return;
  const err = invalid('PatchOptions', 'meta.k8s.io', '', [error]);
  delete err.status.details?.name;
  throw err;
}

/** Drops null fields, as decoding into the Go type (or CRD pruning of non-nullable fields) does. */
function dropNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropNulls);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = dropNulls(x);
  return out;
}

function withoutManagedFields(obj: KubeObject): KubeObject {
  const { managedFields: _m, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}
