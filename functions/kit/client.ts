/**
 * A small REST client over {@link ResourceType}s: the handful of calls the kit makes (LIST by label
 * or field selector, whole or metadata only; GET; create; server-side apply; update (PUT); delete
 * with a UID, or UID and resourceVersion, precondition; status merge patch) for any
 * resource, core or custom, without API discovery (the resource types are declared, so no request
 * is spent resolving a kind to a path). Requests go through the KubeConfig's authentication like
 * every generated client of `@kubernetes/client-node`, so they are counted, authenticated and
 * TLS-verified the same way; errors are `ApiException`s carrying the HTTP status and the `Status`
 * body, as the generated clients throw them.
 */
import { HttpMethod, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { ResourceType } from '../../core/contract/controller.ts';
import { FIELD_MANAGER } from '../../core/k8s/custom-resource.ts';
import { dryRunWriteOf, isDryRun } from '../../core/k8s/dry-run.ts';
import { apiStatusOf } from '../../core/k8s/errors.ts';
import {
  apiVersionOf,
  jsonRequester,
  METADATA_LIST_ACCEPT,
  type RequestOptions,
  resourcePath,
} from '../../core/k8s/rest.ts';

export { type RequestOptions, resourcePath } from '../../core/k8s/rest.ts';

/** One API request; resolves with the decoded JSON body. @throws {ApiException} for a status outside 2xx */
export type Requester = (method: HttpMethod, path: string, options?: RequestOptions) => Promise<unknown>;

/**
 * A {@link Requester} over `kubeConfig`'s current cluster and user (core/k8s/rest.ts). With a
 * dry-run KubeConfig (core/k8s/dry-run.ts) every write is a server-side dry-run, and its logged
 * write gets the object before (one GET of it first; a create has none) and the API server's answer.
 * @throws {Error} without a current cluster
 */
export function requester(kubeConfig: KubeConfig): Requester {
  const json = jsonRequester(kubeConfig);
  if (!isDryRun(kubeConfig)) return async (method, path, options) => (await json(method, path, options)).body;
  const request = async (
    method: HttpMethod,
    path: string,
    options?: RequestOptions,
    before?: KubernetesObject,
  ): Promise<unknown> => {
    const { body, context } = await json(method, path, options);
    const write = dryRunWriteOf(context);
    if (write) {
      if (before) write.before = before;
      if (method !== HttpMethod.DELETE) write.after = body as KubernetesObject;
    }
    return body;
  };
  return async (method, path, options) => {
    if (method === HttpMethod.GET || method === HttpMethod.POST) return request(method, path, options);
    // The object as it is (a subresource's path answers its whole object, as kube-apiserver's does).
    const before = (await request(HttpMethod.GET, path.replace(/\/status$/, '')).catch((err) => {
      if (apiStatusOf(err) === 404) return undefined;
      throw err;
    })) as KubernetesObject | undefined;
    return request(method, path, options, before);
  };
}

/** What a LIST selects, and how much of each object it returns. */
export interface ListQuery {
  /** Kubernetes label selector (`k=v,k`), applied by the API server. */
  labelSelector?: string;
  /** Kubernetes field selector (`metadata.name=x`), applied by the API server. */
  fieldSelector?: string;
  /**
   * Metadata only (a `PartialObjectMetadataList`: no `data`, no `spec`), for a LIST whose objects are
   * only deleted or mapped: a LIST of Secrets then carries none of their data.
   */
  metadataOnly?: boolean;
}

/** A GET's options, as Kubernetes' `GetOptions`. */
export interface GetOptions {
  /**
   * A state not older than this `resourceVersion`, which kube-apiserver answers from its watch
   * cache instead of reading etcd (Kubernetes API concepts, "Resource versions": semantics for get).
   * Omitted: the latest state.
   */
  resourceVersion?: string;
}

/** What {@link ResourceClient.delete} requires of the object it deletes (DeleteOptions `preconditions`). */
export interface DeletePreconditions {
  /**
   * Also require the object's `metadata.resourceVersion`: an object changed since it was read is
   * not deleted, and the 409 Conflict is thrown (the caller re-reads). Default: the UID alone.
   */
  resourceVersion?: boolean;
}

/** The calls the kit makes, over any declared resource type. */
export interface ResourceClient {
  /**
   * `true` when every write is a server-side dry-run (`levelset plan`: a dry-run KubeConfig,
   * core/k8s/dry-run.ts): nothing is persisted, so a write that needs an earlier one's result
   * (the managedFields patch after a create) is not sent.
   */
  readonly dryRun: boolean;
  /**
   * LIST in `namespace` (all namespaces when omitted), one request (no paging). Items get the type's
   * `apiVersion` and `kind` (a LIST's items carry none).
   */
  list(resource: ResourceType, namespace: string | undefined, query?: ListQuery): Promise<KubernetesObject[]>;
  /**
   * GET one object: the latest state (a consistent read, from etcd), or with
   * {@link GetOptions.resourceVersion} a state not older than that version.
   * @throws {ApiException} 404 when it does not exist; 504 (`ResourceVersionTooLarge`, transient)
   *   when the API server's watch cache has not reached that version within its wait
   */
  get(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
    options?: GetOptions,
  ): Promise<KubernetesObject>;
  /** POST with field manager {@link FIELD_MANAGER}; fails with 409 AlreadyExists when the name is taken. */
  create(resource: ResourceType, object: KubernetesObject): Promise<KubernetesObject>;
  /**
   * Server-side apply (`PATCH application/apply-patch+yaml`, `fieldManager=levelset`, `force=true`:
   * a controller owns its fields, as controller-runtime recommends). A `metadata.resourceVersion`
   * in `object` makes it conditional (409 Conflict when the object changed).
   */
  apply(resource: ResourceType, object: KubernetesObject): Promise<KubernetesObject>;
  /**
   * PUT (update) with field manager {@link FIELD_MANAGER}: `object` replaces the stored one. Its
   * `metadata.resourceVersion` makes it conditional (409 Conflict when the object changed since).
   * For objects the kit writes whole (children in other namespaces, children.ts's cross-namespace rule).
   */
  replace(resource: ResourceType, object: KubernetesObject): Promise<KubernetesObject>;
  /**
   * DELETE with a UID precondition (and the resourceVersion's with `preconditions.resourceVersion`):
   * an object re-created under the same name is not deleted.
   * @returns false when there was nothing of ours to delete: already gone (404), or, with the UID
   *   precondition alone, another object under that name now (409)
   * @throws {ApiException} 409 with `preconditions.resourceVersion` when the object changed since it
   *   was read; other API errors as thrown
   */
  delete(
    resource: ResourceType,
    object: KubernetesObject,
    preconditions?: DeletePreconditions,
  ): Promise<boolean>;
  /**
   * PATCH `name` with `patch` (a JSON patch, RFC 6902, or a JSON merge patch, RFC 7386), field
   * manager {@link FIELD_MANAGER}.
   * @returns the object as written
   */
  patch(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type: 'json' | 'merge',
  ): Promise<KubernetesObject>;
  /**
   * Merge-patches `status` through the `status` subresource, field manager {@link FIELD_MANAGER}.
   * @returns the object as written
   */
  patchStatus(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
    status: Record<string, unknown>,
  ): Promise<KubernetesObject>;
}

/** A {@link ResourceClient} over `kubeConfig`. */
export function resourceClient(kubeConfig: KubeConfig): ResourceClient {
  const request = requester(kubeConfig);
  const md = (o: KubernetesObject) => ({ namespace: o.metadata?.namespace, name: o.metadata?.name ?? '' });
  return {
    dryRun: isDryRun(kubeConfig),
    async list(resource, namespace, query = {}) {
      const list = (await request(HttpMethod.GET, resourcePath(resource, namespace), {
        query: { labelSelector: query.labelSelector, fieldSelector: query.fieldSelector },
        ...(query.metadataOnly ? { accept: METADATA_LIST_ACCEPT } : {}),
      })) as { items?: KubernetesObject[] };
      // A LIST's items carry no apiVersion/kind (the list's do); restore them for the caller.
      return (list.items ?? []).map((o) => ({
        apiVersion: apiVersionOf(resource),
        kind: resource.kind,
        ...o,
      }));
    },
    async get(resource, namespace, name, options = {}) {
      return (await request(HttpMethod.GET, resourcePath(resource, namespace, name), {
        query: { resourceVersion: options.resourceVersion },
      })) as KubernetesObject;
    },
    async create(resource, object) {
      return (await request(HttpMethod.POST, resourcePath(resource, md(object).namespace), {
        query: { fieldManager: FIELD_MANAGER },
        body: object,
      })) as KubernetesObject;
    },
    async apply(resource, object) {
      const { namespace, name } = md(object);
      return (await request(HttpMethod.PATCH, resourcePath(resource, namespace, name), {
        query: { fieldManager: FIELD_MANAGER, force: 'true' },
        body: object,
        contentType: 'application/apply-patch+yaml',
      })) as KubernetesObject;
    },
    async replace(resource, object) {
      const { namespace, name } = md(object);
      return (await request(HttpMethod.PUT, resourcePath(resource, namespace, name), {
        query: { fieldManager: FIELD_MANAGER },
        body: object,
      })) as KubernetesObject;
    },
    async delete(resource, object, preconditions = {}) {
      const { namespace, name } = md(object);
      const { uid, resourceVersion } = object.metadata ?? {};
      try {
        await request(HttpMethod.DELETE, resourcePath(resource, namespace, name), {
          body: {
            apiVersion: 'v1',
            kind: 'DeleteOptions',
            preconditions: preconditions.resourceVersion ? { uid, resourceVersion } : { uid },
          },
        });
        return true;
      } catch (err) {
        const status = apiStatusOf(err);
        if (status === 404 || (status === 409 && !preconditions.resourceVersion)) return false;
        throw err;
      }
    },
    async patch(resource, namespace, name, patch, type) {
      return (await request(HttpMethod.PATCH, resourcePath(resource, namespace, name), {
        query: { fieldManager: FIELD_MANAGER },
        body: patch,
        contentType: type === 'json' ? 'application/json-patch+json' : 'application/merge-patch+json',
      })) as KubernetesObject;
    },
    async patchStatus(resource, namespace, name, status) {
      return (await request(HttpMethod.PATCH, resourcePath(resource, namespace, name, 'status'), {
        query: { fieldManager: FIELD_MANAGER },
        body: { status },
        contentType: 'application/merge-patch+json',
      })) as KubernetesObject;
    },
  };
}
