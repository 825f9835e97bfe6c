/**
 * What a reconcile may read and touch besides its children, each call checked against the
 * controller's declared RBAC before any request (so a missing rule fails the first test, not with a
 * `403` in production): `get` and `list` of any declared resource in any namespace (the primary's by
 * default), and a metadata patch (labels, annotations) of an object the controller does not own —
 * controller-runtime's `client.Reader` and a `client.MergeFrom` patch of `ObjectMeta`, narrowed to
 * what the RBAC grants.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { PolicyRule, ResourceType, Verb } from '../../core/contract/controller.ts';
import { isNotFound } from '../../core/k8s/errors.ts';
import type { ResourceClient } from './client.ts';

/** Where a read looks: the primary's namespace unless told. */
export interface ReadOptions {
  /** Another namespace than the primary's (ignored for a cluster-scoped resource). */
  namespace?: string;
}

export interface ListOptions extends ReadOptions {
  /** Every namespace (a cluster-wide LIST); `namespace` is then ignored. */
  allNamespaces?: boolean;
  /** Kubernetes label selector, applied by the API server. */
  labelSelector?: string;
  /** Kubernetes field selector (`metadata.name=x`), applied by the API server. */
  fieldSelector?: string;
}

/** The metadata a reconcile may set on an object it does not own; `null` removes a key. */
export interface MetadataPatch {
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
}

/** The reads and the metadata patch a reconcile receives (see the module comment). */
export interface Reads {
  /**
   * GETs `name` (one request). Needs `get` on the resource in the RBAC (owned types have it; add
   * an `rbac` rule for a watched one).
   * @returns the object, or `undefined` when it does not exist (404)
   * @throws {Error} when the RBAC does not grant `get`; API errors as thrown (retried)
   */
  get<T extends KubernetesObject>(
    resource: ResourceType<T>,
    name: string,
    options?: ReadOptions,
  ): Promise<T | undefined>;
  /**
   * LISTs a resource (one request, no paging). Needs `list` (owned and watched types have it).
   * @throws {Error} when the RBAC does not grant `list`
   */
  list<T extends KubernetesObject>(resource: ResourceType<T>, options?: ListOptions): Promise<T[]>;
  /**
   * Merge-patches only `metadata.labels`/`metadata.annotations` of `name` (field manager
   * `levelset`), e.g. a label on a Secret the controller reads. For objects the controller does
   * not own: an owned child's labels belong in its desired state (an apply would take them back). `resourceVersion` makes it
   * conditional (409 Conflict, retried, when the object changed). Needs `patch` in the RBAC.
   * @returns the patched object, or `undefined` when it does not exist (404)
   * @throws {Error} when the RBAC does not grant `patch`, or the patch holds anything but labels and annotations
   */
  patchMetadata(
    resource: ResourceType,
    name: string,
    patch: MetadataPatch,
    options?: ReadOptions & { resourceVersion?: string },
  ): Promise<KubernetesObject | undefined>;
}

/** Whether `rules` grant `verb` on `resource` (its group and plural; `*` matches any). */
export function grants(rules: readonly PolicyRule[], resource: ResourceType, verb: Verb): boolean {
  return rules.some(
    (r) =>
      (r.apiGroups.includes(resource.group) || r.apiGroups.includes('*')) &&
      (r.resources.includes(resource.plural) || r.resources.includes('*')) &&
      (r.verbs.includes(verb) || (r.verbs as string[]).includes('*')),
  );
}

/**
 * The {@link Reads} of `controller` over `client`, for a primary in `namespace`.
 * @param rbac the controller's RBAC (derived by `defineController`)
 */
export function readsFor(
  controller: string,
  rbac: readonly PolicyRule[],
  client: ResourceClient,
  namespace: string,
): Reads {
  const require = (resource: ResourceType, verb: Verb) => {
    if (!grants(rbac, resource, verb))
      throw new Error(
        `${controller}: ${verb} ${resource.plural}${resource.group ? `.${resource.group}` : ''} is not in its RBAC (declare the type in owns or watches, or add an rbac rule)`,
      );
  };
  const orNotFound = async <T>(request: Promise<T>): Promise<T | undefined> => {
    try {
      return await request;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  return {
    // The objects are as the API server sent them: typed by the resource's model (`objectType`).
    async get<T extends KubernetesObject>(
      resource: ResourceType<T>,
      name: string,
      options: ReadOptions = {},
    ) {
      require(resource, 'get');
      return orNotFound(client.get(resource, options.namespace ?? namespace, name)) as Promise<T | undefined>;
    },
    async list<T extends KubernetesObject>(resource: ResourceType<T>, options: ListOptions = {}) {
      require(resource, 'list');
      const where = options.allNamespaces ? undefined : (options.namespace ?? namespace);
      const { labelSelector, fieldSelector } = options;
      return client.list(resource, where, { labelSelector, fieldSelector }) as Promise<T[]>;
    },
    async patchMetadata(resource, name, patch, options = {}) {
      require(resource, 'patch');
      const extra = Object.keys(patch).filter((k) => k !== 'labels' && k !== 'annotations');
      if (extra.length > 0)
        throw new Error(
          `${controller}: patchMetadata sets labels and annotations only, not ${extra.join(', ')}`,
        );
      const metadata = {
        ...(patch.labels ? { labels: patch.labels } : {}),
        ...(patch.annotations ? { annotations: patch.annotations } : {}),
        ...(options.resourceVersion ? { resourceVersion: options.resourceVersion } : {}),
      };
      return orNotFound(client.patch(resource, options.namespace ?? namespace, name, { metadata }, 'merge'));
    },
  };
}
