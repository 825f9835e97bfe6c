/**
 * Metadata-only list+watch, as client-go's `metadatainformer`: the API server is asked for
 * `PartialObjectMetadata` instead of whole objects, so object bodies — a Secret's `data` above
 * all — never reach the relay. Whatever the server sends is also cut down to
 * `apiVersion`/`kind`/`metadata` (minus `managedFields` and kubectl's last-applied annotation, which
 * holds a copy of the body) before anything stores it.
 */
import {
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  RequestContext,
  Watch,
} from '@kubernetes/client-node';
import type { ResourceType } from '../functions/controllers/types.ts';

/** Accept header of a metadata-only LIST (Kubernetes API concepts: "Receiving resources as tables / metadata"). */
export const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
/** Accept header of a metadata-only WATCH: each event's object is a `PartialObjectMetadata`. */
export const METADATA_WATCH_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/** kubectl's client-side apply annotation: a full copy of the applied object, a Secret's data included. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/** Page size of a LIST, as client-go's reflector (`limit=500` with `continue`). */
export const LIST_PAGE_SIZE = 500;

/** `group/version` as `apiVersion` spells it (`v1` for the core group). */
export function groupVersion(r: ResourceType): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

/** A stable name for a resource in logs and metric labels: `v1/secrets`, `apps/v1/deployments`. */
export function resourceName(r: ResourceType): string {
  return `${groupVersion(r)}/${r.plural}`;
}

/**
 * The collection path of a resource: `/api/v1/secrets`, `/apis/apps/v1/namespaces/ns/deployments`.
 * @param namespace restrict to one namespace (namespaced resources only); omitted: all namespaces.
 */
export function collectionPath(r: ResourceType, namespace?: string): string {
  const root = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  const ns = namespace && r.namespaced ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${root}${ns}/${r.plural}`;
}

/**
 * Cuts an object down to what the relay may hold: its resource's `apiVersion` and `kind` and its
 * `metadata` without `managedFields` and without the last-applied annotation. Never the body.
 */
export function stripToMetadata(obj: KubernetesObject, r: ResourceType): KubernetesObject {
  const { managedFields: _managedFields, ...metadata } = obj.metadata ?? {};
  if (metadata.annotations && LAST_APPLIED_ANNOTATION in metadata.annotations) {
    const { [LAST_APPLIED_ANNOTATION]: _lastApplied, ...annotations } = metadata.annotations;
    metadata.annotations = annotations;
  }
  return { apiVersion: groupVersion(r), kind: r.kind, metadata };
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
  readonly #onWholeObject: ((kind: string) => void) | undefined;
  /**
   * @param onWholeObject called for each event whose object is not a `PartialObjectMetadata` (a
   *   server that ignores the metadata Accept header); the object is stripped all the same.
   */
  constructor(kubeConfig: KubeConfig, resource: ResourceType, onWholeObject?: (kind: string) => void) {
    super(new AcceptKubeConfig(kubeConfig, METADATA_WATCH_ACCEPT));
    this.#resource = resource;
    this.#onWholeObject = onWholeObject;
  }
  override watch(
    path: string,
    queryParams: Parameters<Watch['watch']>[1],
    callback: Parameters<Watch['watch']>[2],
    done: Parameters<Watch['watch']>[3],
  ): Promise<AbortController> {
    return super.watch(
      path,
      { ...queryParams, allowWatchBookmarks: true },
      (phase, apiObj) => {
        // ERROR carries a Status, BOOKMARK only a resourceVersion: both pass as they are.
        if (phase === 'ERROR' || phase === 'BOOKMARK' || !apiObj?.metadata) {
          callback(phase, apiObj);
          return;
        }
        if (apiObj.kind !== 'PartialObjectMetadata') this.#onWholeObject?.(String(apiObj.kind));
        callback(phase, stripToMetadata(apiObj, this.#resource));
      },
      done,
    );
  }
}

/** An API server answer other than 2xx. `statusCode` as client-node's Watch sets it (the informer reads it). */
export class ApiStatusError extends Error {
  override readonly name = 'ApiStatusError';
  readonly statusCode: number;
  readonly code: number;
  constructor(statusCode: number, method: string, path: string, body: string) {
    super(`${method} ${path}: HTTP ${statusCode}${body ? `: ${body.slice(0, 300)}` : ''}`);
    this.statusCode = statusCode;
    this.code = statusCode;
  }
}

const http = new IsomorphicFetchHttpLibrary();

async function getJson(
  kc: KubeConfig,
  path: string,
  query: Record<string, string>,
  accept: string,
): Promise<unknown> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no current cluster in the KubeConfig');
  const url = new URL(cluster.server + path);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const ctx = new RequestContext(url.toString(), HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  ctx.setHeaderParam('Accept', accept);
  const response = await http.send(ctx).toPromise();
  const text = await response.body.text();
  if (response.httpStatusCode < 200 || response.httpStatusCode > 299) {
    throw new ApiStatusError(response.httpStatusCode, 'GET', path, text);
  }
  return JSON.parse(text);
}

/**
 * Metadata-only paginated LIST of a resource (`limit`/`continue`, one consistent snapshot).
 * @returns the items cut down by {@link stripToMetadata}, and the list's resourceVersion.
 * @throws {ApiStatusError} on a non-2xx answer (410 when a continue token expired);
 *   {@link Error} when the server ignored the metadata Accept header (it would send object bodies).
 */
export async function listMetadata(
  kc: KubeConfig,
  r: ResourceType,
  options: { namespace?: string; labelSelector?: string; pageSize?: number } = {},
): Promise<KubernetesListObject<KubernetesObject>> {
  const path = collectionPath(r, options.namespace);
  const items: KubernetesObject[] = [];
  let resourceVersion = '';
  let continueToken: string | undefined;
  do {
    const query: Record<string, string> = { limit: String(options.pageSize ?? LIST_PAGE_SIZE) };
    if (options.labelSelector) query.labelSelector = options.labelSelector;
    if (continueToken) query.continue = continueToken;
    const page = (await getJson(
      kc,
      path,
      query,
      METADATA_LIST_ACCEPT,
    )) as KubernetesListObject<KubernetesObject>;
    if (page.kind !== 'PartialObjectMetadataList') {
      throw new Error(
        `GET ${path} answered ${String(page.kind)}, not PartialObjectMetadataList: the API server does not serve metadata-only lists`,
      );
    }
    for (const item of page.items ?? []) items.push(stripToMetadata(item, r));
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
