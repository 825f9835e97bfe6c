/**
 * Raw REST access to the Kubernetes API, for every request Levelset makes outside client-node's
 * generated clients (the kit's resource client, the metadata-only LISTs of the resync and of the
 * relay's informers, discovery): paths and media types as kube-apiserver serves them, and one JSON
 * request function. Requests go through the KubeConfig's authentication, as client-node's generated
 * clients' do, so they are authenticated, TLS-verified, pooled (core/pooled-kubeconfig.ts) and
 * counted the same way.
 */
import {
  ApiException,
  type HttpMethod,
  type KubeConfig,
  type RequestContext,
  ServerConfiguration,
} from '@kubernetes/client-node';
import { type Dispatcher, getGlobalDispatcher } from 'undici';
import type { ResourceType } from '../contract/controller.ts';
import { rejectedWrites } from '../metrics.ts';
import { apiStatusBodyOf, isNamespaceTerminating } from './errors.ts';

/**
 * Accept header of a metadata-only LIST: a `PartialObjectMetadataList` (Kubernetes API concepts:
 * "Receiving resources as Tables or metadata only"; client-go's metadata client).
 */
export const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

/** Accept header of a metadata-only WATCH: each event's object is a `PartialObjectMetadata`. */
export const METADATA_WATCH_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/** `group/version`, or `version` for the core group (an object's `apiVersion`). */
export function apiVersionOf(resource: Pick<ResourceType, 'group' | 'version'>): string {
  return resource.group ? `${resource.group}/${resource.version}` : resource.version;
}

/**
 * The REST path of `resource`, as kube-apiserver serves it: `/api/v1/...` for core,
 * `/apis/<group>/<version>/...` otherwise; the collection when `name` is omitted, across all
 * namespaces when `namespace` is omitted (or the resource is cluster-scoped).
 * E.g. `/api/v1/secrets`, `/apis/apps/v1/namespaces/team-a/deployments/web/status`.
 */
export function resourcePath(
  resource: ResourceType,
  namespace: string | undefined,
  name?: string,
  subresource?: string,
): string {
  const parts = [resource.group ? `/apis/${resource.group}/${resource.version}` : `/api/${resource.version}`];
  if (resource.namespaced && namespace) parts.push('namespaces', encodeURIComponent(namespace));
  parts.push(resource.plural);
  if (name !== undefined) parts.push(encodeURIComponent(name));
  if (subresource) parts.push(subresource);
  return parts.join('/');
}

/** What a {@link JsonRequester} sends besides its method and path. */
export interface RequestOptions {
  /** Query parameters; `undefined` values are left out. */
  query?: Record<string, string | undefined>;
  /** Sent as JSON. */
  body?: unknown;
  /** Content type of `body`; default `application/json`. */
  contentType?: string;
  /** Accept header; default `application/json`. */
  accept?: string;
}

/** A 2xx answer: its decoded JSON body (`undefined` when empty) and the request's context. */
export interface JsonResponse {
  body: unknown;
  /** The request as sent, authentication applied (what a dry-run KubeConfig records on it). */
  context: RequestContext;
}

/**
 * One API request to the KubeConfig's current cluster, as its current user.
 * @throws {ApiException} for an answer outside 2xx: `code` the HTTP status, `body` the `Status` text,
 *   `headers` the answer's (e.g. `retry-after`), as client-node's generated clients throw it.
 */
export type JsonRequester = (
  method: HttpMethod,
  path: string,
  options?: RequestOptions,
) => Promise<JsonResponse>;

/** The API server's verb of a write method (kube-apiserver's `verb` label); `undefined` for a read. */
const WRITE_VERBS: Readonly<Record<string, string>> = {
  POST: 'create',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

/**
 * The resource an API path names, as kube-apiserver's `resource` label with its group:
 * `/apis/apps/v1/namespaces/ns/deployments/web` → `deployments.apps`, `/api/v1/namespaces/ns` →
 * `namespaces`; `unknown` for a path outside `/api` and `/apis`.
 */
export function resourceOfPath(path: string): string {
  const parts = (path.split('?')[0] ?? '').split('/').filter(Boolean);
  let at: number;
  let group = '';
  if (parts[0] === 'api') at = 2;
  else if (parts[0] === 'apis') {
    group = parts[1] ?? '';
    at = 3;
  } else return 'unknown';
  if (parts[at] === 'namespaces' && parts.length > at + 2) at += 2;
  const plural = parts[at] ?? 'unknown';
  return group ? `${plural}.${group}` : plural;
}

/** Counts a refused write in {@link rejectedWrites} (core/metrics.ts says which refusals). */
function countRejectedWrite(method: HttpMethod, path: string, err: ApiException<unknown>): void {
  const verb = WRITE_VERBS[method];
  if (!verb) return;
  let reason: string | undefined;
  if (err.code === 409 || err.code === 422) reason = apiStatusBodyOf(err)?.reason ?? 'Unknown';
  else if (isNamespaceTerminating(err)) reason = 'NamespaceTerminating';
  if (reason === undefined) return;
  rejectedWrites.inc({ verb, resource: resourceOfPath(path), code: String(err.code), reason });
}

/**
 * A {@link JsonRequester} over `kubeConfig`'s current cluster and user (read once, here).
 * @throws {Error} `No active cluster!` without a current cluster (client-node's message)
 */
export function jsonRequester(kubeConfig: KubeConfig): JsonRequester {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('No active cluster!');
  // The server alone makes request contexts: not client-node's `createConfiguration`, whose default
  // HTTP library is `fetch` (all of undici in a bundle, decision 83).
  const server = new ServerConfiguration(cluster.server, {});
  return async (method, path, options = {}) => {
    const context = server.makeRequestContext(path, method);
    context.setHeaderParam('Accept', options.accept ?? 'application/json');
    for (const [k, v] of Object.entries(options.query ?? {}))
      if (v !== undefined) context.setQueryParam(k, v);
    if (options.body !== undefined) {
      context.setHeaderParam('Content-Type', options.contentType ?? 'application/json');
      context.setBody(JSON.stringify(options.body));
    }
    await kubeConfig.applySecurityAuthentication(context);
    // The dispatcher's `request` (undici's Dispatcher API; what undici's `request` calls), not the
    // `fetch` client-node's generated clients send with: the same dispatcher (connection pool, TLS;
    // undici's global one when client-node made none, as `fetch` uses) and headers, without WHATWG
    // fetch's streams and Request and Response objects, which cost a request about twice the CPU
    // (decision 69); and in a bundle, without the rest of undici (cli/build/bundle.ts, decision 83).
    const url = new URL(context.getUrl());
    const dispatcher = (context.getDispatcher() as Dispatcher | undefined) ?? getGlobalDispatcher();
    const response = await dispatcher.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method,
      headers: context.getHeaders(),
      body: context.getBody() as string | undefined,
    });
    const text = await response.body.text();
    if (response.statusCode < 200 || response.statusCode > 299) {
      // ApiException's own message is `HTTP-Code: <code>\nMessage: <message>\nBody: …\nHeaders: …`.
      const err = new ApiException(
        response.statusCode,
        `${method} ${path}`,
        text,
        headersOf(response.headers),
      );
      countRejectedWrite(method, path, err);
      throw err;
    }
    return { body: text ? JSON.parse(text) : undefined, context };
  };
}

/** An answer's headers as client-node's `ResponseContext` gives them: one string per name (repeats joined by `, `). */
function headersOf(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  return out;
}
