/**
 * Metadata-only list+watch, as client-go's `metadatainformer`: the API server is asked for
 * `PartialObjectMetadata` instead of whole objects, so object bodies — a Secret's `data` above
 * all — never reach the relay. Whatever the server sends is also cut down to
 * `apiVersion`/`kind`/`metadata` (minus `managedFields` and kubectl's last-applied annotation, which
 * holds a copy of the body) before anything stores it.
 */
import {
  ApiException,
  HttpMethod,
  KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type RequestContext,
  type V1ObjectMeta,
  Watch,
} from '@kubernetes/client-node';
import type { ResourceType } from '../core/contract/controller.ts';
import {
  apiVersionOf,
  type JsonRequester,
  jsonRequester,
  METADATA_LIST_ACCEPT,
  METADATA_WATCH_ACCEPT,
  resourcePath,
} from '../core/k8s/rest.ts';

/** kubectl's client-side apply annotation: a full copy of the applied object, a Secret's data included. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/** Page size of a LIST, as client-go's reflector (`limit=500` with `continue`). */
export const LIST_PAGE_SIZE = 500;

/** A stable name for a resource in logs and metric labels: `v1/secrets`, `apps/v1/deployments`. */
export function resourceName(r: ResourceType): string {
  return `${apiVersionOf(r)}/${r.plural}`;
}

/**
 * Cuts an object down to what the relay may hold: its resource's `apiVersion` and `kind` and its
 * `metadata` without the last-applied annotation, and with `managedFields` reduced to who wrote
 * and when (`manager`, `operation`, `subresource`, `time`: never `fieldsV1`, which names the body's
 * fields). Never the body. The informer hands the managers to the event's predicates (the kit's
 * `skipOwnWrites` compares their times) and caches the object without them (relay/informer.ts).
 */
export function stripToMetadata(obj: KubernetesObject, r: ResourceType): KubernetesObject {
  const { managedFields, ...metadata } = obj.metadata ?? {};
  if (metadata.annotations && LAST_APPLIED_ANNOTATION in metadata.annotations) {
    const { [LAST_APPLIED_ANNOTATION]: _lastApplied, ...annotations } = metadata.annotations;
    metadata.annotations = annotations;
  }
  if (Array.isArray(managedFields) && managedFields.length > 0)
    (metadata as V1ObjectMeta).managedFields = managedFields.map((m) => ({
      ...(m.manager !== undefined ? { manager: m.manager } : {}),
      ...(m.operation !== undefined ? { operation: m.operation } : {}),
      ...(m.subresource ? { subresource: m.subresource } : {}),
      ...(m.time !== undefined ? { time: m.time } : {}),
    }));
  return { apiVersion: apiVersionOf(r), kind: r.kind, metadata };
}

/**
 * A KubeConfig that authenticates like `base` and sets one Accept header on every request: what
 * client-node's {@link Watch} reads (`getCurrentCluster`, `applySecurityAuthentication`).
 */
class AcceptKubeConfig extends KubeConfig {
  readonly #base: KubeConfig;
  readonly #accept: string;
  constructor(base: KubeConfig, accept: string) {
    super();
    this.#base = base;
    this.#accept = accept;
  }
  override getCurrentCluster(): ReturnType<KubeConfig['getCurrentCluster']> {
    return this.#base.getCurrentCluster();
  }
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await this.#base.applySecurityAuthentication(context);
    context.setHeaderParam('Accept', this.#accept);
  }
}

/**
 * client-node's {@link Watch} asking for `PartialObjectMetadata` events and with bookmarks on; each
 * event's object is cut down by {@link stripToMetadata} before the informer sees (and caches) it.
 */
export class MetadataWatch extends Watch {
  readonly #resource: ResourceType;
  readonly #hooks: MetadataWatchHooks;
  /**
   * @param hooks `onWholeObject`, `onActivity`, `onWatching`; `silenceTimeoutMs` replaces client-node's
   *   30 s inactivity timeout of a watch (see {@link MetadataWatchHooks.silenceTimeoutMs}).
   */
  constructor(kubeConfig: KubeConfig, resource: ResourceType, hooks: MetadataWatchHooks = {}) {
    super(new AcceptKubeConfig(kubeConfig, hooks.onObject ? 'application/json' : METADATA_WATCH_ACCEPT));
    this.#resource = resource;
    this.#hooks = hooks;
    // client-node 2.x declares it private but reads it on every watch (connect and inactivity timeout).
    if (hooks.silenceTimeoutMs !== undefined)
      (this as unknown as { requestTimeoutMs: number }).requestTimeoutMs = hooks.silenceTimeoutMs;
  }
  override async watch(
    path: string,
    queryParams: Parameters<Watch['watch']>[1],
    callback: Parameters<Watch['watch']>[2],
    done: Parameters<Watch['watch']>[3],
  ): Promise<AbortController> {
    let ended = false;
    const controller = await super.watch(
      path,
      { ...queryParams, allowWatchBookmarks: true },
      (phase, apiObj) => {
        this.#hooks.onActivity?.();
        // ERROR carries a Status, BOOKMARK only a resourceVersion: both pass as they are.
        if (phase === 'ERROR' || phase === 'BOOKMARK' || !apiObj?.metadata) {
          callback(phase, apiObj);
          return;
        }
        if (this.#hooks.onObject)
          this.#hooks.onObject({
            apiVersion: apiVersionOf(this.#resource),
            kind: this.#resource.kind,
            ...apiObj,
          });
        else if (apiObj.kind !== 'PartialObjectMetadata') this.#hooks.onWholeObject?.(String(apiObj.kind));
        callback(phase, stripToMetadata(apiObj, this.#resource));
      },
      (err) => {
        ended = true;
        this.#hooks.onWatching?.(false, err ?? undefined);
        done(err);
      },
    );
    // super.watch resolves once the answer's headers are in: a 200 stream is open unless already done.
    if (!ended) this.#hooks.onWatching?.(true);
    return controller;
  }
}

/** Observers and tuning of a {@link MetadataWatch}. */
export interface MetadataWatchHooks {
  /**
   * ms without a byte on an open watch (no event, no BOOKMARK) after which the watch is aborted with
   * a `TimeoutError`, upon which client-node's ListWatch watches again from its last resourceVersion.
   * Also the time allowed for the answer's headers. Default client-node's 30 000.
   */
  silenceTimeoutMs?: number;
  /** Called for each event whose object is not a `PartialObjectMetadata` (a server ignoring the metadata Accept header); it is stripped all the same. */
  onWholeObject?(kind: string): void;
  /**
   * Asks for whole objects instead of metadata, and is handed each one (with `apiVersion`/`kind`)
   * before it is stripped to metadata like any other: for what must read the body (the spec
   * indexes, relay/spec-index.ts) and keep only a projection of it. Synchronous, must not throw.
   */
  onObject?(object: KubernetesObject): void;
  /** Called for every event received, BOOKMARKs and ERRORs included. */
  onActivity?(): void;
  /** `true` once a watch stream is open (200); `false` with the error (or none: a clean close) when it ends. */
  onWatching?(watching: boolean, err?: unknown): void;
}

/** An API server answer other than 2xx. `statusCode` as client-node's Watch sets it (the informer reads it). */
export class ApiStatusError extends Error {
  override readonly name = 'ApiStatusError';
  readonly statusCode: number;
  readonly code: number;
  /** The answer's `Retry-After` in seconds (delta-seconds form), when it had one. */
  readonly retryAfterSeconds: number | undefined;
  constructor(statusCode: number, method: string, path: string, body: string, retryAfter?: string | null) {
    super(`${method} ${path}: HTTP ${statusCode}${body ? `: ${body.slice(0, 300)}` : ''}`);
    this.statusCode = statusCode;
    this.code = statusCode;
    const seconds = retryAfter != null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : undefined;
    this.retryAfterSeconds = seconds;
  }
}

const requesters = new WeakMap<KubeConfig, JsonRequester>();

/**
 * GET `path` as JSON (core/k8s/rest.ts, one requester per KubeConfig).
 * @throws {ApiStatusError} on a non-2xx answer, with its `Retry-After`
 */
async function getJson(
  kc: KubeConfig,
  path: string,
  query: Record<string, string>,
  accept: string,
): Promise<unknown> {
  let request = requesters.get(kc);
  if (!request) {
    request = jsonRequester(kc);
    requesters.set(kc, request);
  }
  try {
    return (await request(HttpMethod.GET, path, { query, accept })).body;
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    const headers = err.headers as Record<string, string | undefined>;
    throw new ApiStatusError(err.code, 'GET', path, String(err.body ?? ''), headers['retry-after']);
  }
}

/**
 * Metadata-only paginated LIST of a resource (`limit`/`continue`, one consistent snapshot).
 * @returns the items cut down by {@link stripToMetadata} (none with `onPage`), and the list's resourceVersion.
 * @throws {ApiStatusError} on a non-2xx answer (410 when a continue token expired);
 *   {@link Error} when the server ignored the metadata Accept header (it would send object bodies).
 */
export async function listMetadata(
  kc: KubeConfig,
  r: ResourceType,
  options: {
    namespace?: string;
    labelSelector?: string;
    pageSize?: number;
    /** Lists whole objects and hands each to this before stripping it ({@link MetadataWatchHooks.onObject}). */
    onObject?(object: KubernetesObject): void;
    /**
     * Receives each page's items (stripped) as it arrives, instead of the result's `items` (then
     * empty): a LIST of 100 000 objects never holds more than one page of them.
     */
    onPage?(items: KubernetesObject[]): void;
  } = {},
): Promise<KubernetesListObject<KubernetesObject>> {
  const path = resourcePath(r, options.namespace);
  const items: KubernetesObject[] = [];
  let resourceVersion = '';
  let continueToken: string | undefined;
  do {
    const query: Record<string, string> = { limit: String(options.pageSize ?? LIST_PAGE_SIZE) };
    if (options.labelSelector) query.labelSelector = options.labelSelector;
    if (continueToken) query.continue = continueToken;
    const whole = options.onObject;
    const page = (await getJson(
      kc,
      path,
      query,
      whole ? 'application/json' : METADATA_LIST_ACCEPT,
    )) as KubernetesListObject<KubernetesObject>;
    // A LIST's items carry no apiVersion/kind (the list's do).
    if (whole)
      for (const item of page.items ?? []) whole({ apiVersion: apiVersionOf(r), kind: r.kind, ...item });
    else if (page.kind !== 'PartialObjectMetadataList') {
      throw new Error(
        `GET ${path} answered ${String(page.kind)}, not PartialObjectMetadataList: the API server does not serve metadata-only lists`,
      );
    }
    const stripped = (page.items ?? []).map((item) => stripToMetadata(item, r));
    if (options.onPage) options.onPage(stripped);
    else items.push(...stripped);
    resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
    // Raw JSON spells it `continue` (client-node's deserialised type says `_continue`).
    continueToken = (page.metadata as { continue?: string } | undefined)?.continue || undefined;
  } while (continueToken);
  return {
    apiVersion: 'meta.k8s.io/v1',
    kind: 'PartialObjectMetadataList',
    metadata: { resourceVersion },
    items,
  };
}

/**
 * Whether the API server serves a resource now (discovery: `GET /api/v1` or `/apis/<group>/<version>`).
 * A custom resource is served once its CRD is established.
 * @returns `false` when the group/version is unknown (404) or does not list the resource.
 * @throws {ApiStatusError} on other non-2xx answers; network errors as thrown by fetch.
 */
export async function isServed(kc: KubeConfig, r: ResourceType): Promise<boolean> {
  const path = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  let list: { resources?: { name?: string }[] };
  try {
    list = (await getJson(kc, path, {}, 'application/json')) as typeof list;
  } catch (err) {
    if (err instanceof ApiStatusError && err.statusCode === 404) return false;
    throw err;
  }
  return (list.resources ?? []).some((res) => res.name === r.plural);
}
