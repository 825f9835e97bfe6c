/**
 * The reconcile's reads through the in-process mode's informer cache ({@link ObjectCache},
 * functions/runtime/object-cache.ts; docs/architecture.md decision 56): {@link cachedReader} answers the
 * kit's GET of the primary and LIST of its children from the cache when it can and reads live when
 * it cannot; {@link recordingWrites} tells the cache of every write, so that a read of an object
 * the reconcile wrote waits for the informer to have seen it (read-your-writes). Without a cache
 * (the serverless mode, a plan, tests) neither is used: every read is live.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ObjectCache } from '../../core/contract/controller.ts';
import type { ResourceClient } from './client.ts';

/** The 404 a cached GET answers for an object the informer does not hold (as the API server's, for `isNotFound`). */
function notFound(kind: string, name: string): Error {
  return Object.assign(new Error(`${kind} "${name}" not found (informer cache)`), { code: 404 });
}

/**
 * `client` with `get` and `list` answered by `cache` when it can: a GET by namespace and name, a
 * LIST in one namespace by label selector (no field selector); anything else, or what the cache
 * does not answer, goes to `client`. For the reads that may be as old as the informer (the
 * primary's GET, the children's LIST), not for a read after a conflict.
 */
export function cachedReader(client: ResourceClient, cache: ObjectCache): ResourceClient {
  return {
    ...client,
    async get(resource, namespace, name, options) {
      const cached = cache.get(resource, namespace, name);
      if (!cached) return client.get(resource, namespace, name, options);
      if (!cached.object) throw notFound(resource.kind, name);
      return cached.object;
    },
    async list(resource, namespace, query = {}) {
      const cached =
        namespace !== undefined && !query.fieldSelector
          ? cache.list(resource, namespace, query.labelSelector)
          : undefined;
      return cached ?? client.list(resource, namespace, query);
    },
  };
}

/**
 * `client` telling `cache` of each write it makes: the object a create, apply, update, patch or
 * status patch answered ({@link ObjectCache.wrote}), and the object a delete removed
 * ({@link ObjectCache.deleted}). Errors are thrown as `client` throws them.
 */
export function recordingWrites(client: ResourceClient, cache: ObjectCache): ResourceClient {
  const wrote = (resource: Parameters<ObjectCache['wrote']>[0], object: KubernetesObject) => {
    cache.wrote(resource, object);
    return object;
  };
  return {
    ...client,
    create: async (resource, object) => wrote(resource, await client.create(resource, object)),
    apply: async (resource, object) => wrote(resource, await client.apply(resource, object)),
    replace: async (resource, object) => wrote(resource, await client.replace(resource, object)),
    patch: async (resource, namespace, name, patch, type) =>
      wrote(resource, await client.patch(resource, namespace, name, patch, type)),
    patchStatus: async (resource, namespace, name, status) =>
      wrote(resource, await client.patchStatus(resource, namespace, name, status)),
    async delete(resource, object, preconditions) {
      const deleted = await client.delete(resource, object, preconditions);
      if (deleted) cache.deleted(resource, object);
      return deleted;
    },
  };
}
