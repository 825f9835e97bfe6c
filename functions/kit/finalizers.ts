/**
 * Finalizers, the way controller-runtime's `controllerutil.AddFinalizer`/`RemoveFinalizer` and Kopf
 * use them: a controller that holds something outside the cluster puts its finalizer on the primary
 * before it creates anything, so that a delete only sets `deletionTimestamp`; it then releases what it
 * holds and removes its own finalizer, and the API server deletes the object once no finalizer is
 * left (Kubernetes API conventions: "Finalizers"; kube-apiserver `genericregistry.Store.Delete`).
 *
 * Both writes are JSON patches (RFC 6902) with a `test` operation as precondition, so neither can
 * overwrite a change it did not see: adding tests the finalizer list (or, when there is none, the
 * `resourceVersion`) it was computed from; removing tests that the element it removes is this
 * controller's finalizer, so another party's finalizer is never dropped, whatever else changed. A
 * failed `test` is kube-apiserver's `422` (`patcher.applyJSPatch`); it is thrown as a `409 Conflict`,
 * so that the reconcile runs again from a fresh read (client-go's `RetryOnConflict`).
 */
import { ApiException, HttpMethod, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { ResourceType } from '../../core/contract/controller.ts';
import { apiStatusOf } from '../../core/k8s/errors.ts';
import { requester, resourcePath } from './client.ts';

/** The finalizer of controller `controller`: `levelset.dev/<controller>` (a qualified name, as finalizers must be). */
export function finalizerName(controller: string): string {
  return `levelset.dev/${controller}`;
}

/** Whether `object` carries `finalizer`. */
export function hasFinalizer(object: KubernetesObject, finalizer: string): boolean {
  return (object.metadata?.finalizers ?? []).includes(finalizer);
}

/** One RFC 6902 operation, as the finalizer patches use them. */
type JsonPatchOperation =
  | { op: 'test'; path: string; value: unknown }
  | { op: 'add'; path: string; value: unknown }
  | { op: 'remove'; path: string };

async function jsonPatch(
  kubeConfig: KubeConfig,
  resource: ResourceType,
  object: KubernetesObject,
  operations: JsonPatchOperation[],
): Promise<KubernetesObject> {
  const path = resourcePath(resource, object.metadata?.namespace, object.metadata?.name ?? '');
  try {
    return (await requester(kubeConfig)(HttpMethod.PATCH, path, {
      body: operations,
      contentType: 'application/json-patch+json',
    })) as KubernetesObject;
  } catch (err) {
    if (apiStatusOf(err) !== 422) throw err;
    const body = err instanceof ApiException ? String(err.body) : '';
    throw new ApiException(
      409,
      `the finalizers of ${path} changed meanwhile (a test operation failed)`,
      body,
      {},
    );
  }
}

/**
 * Adds `finalizer` to `object` unless it is there already (then no request).
 * @param object as just read: the patch is conditional on its finalizers (or resourceVersion)
 * @returns the object as the API server answered (or `object` when nothing was written)
 * @throws {ApiException} 409 when the object changed since it was read (retry from a fresh read);
 *   422 when the object is being deleted (kube-apiserver refuses new finalizers then); others as thrown
 */
export async function addFinalizer(
  kubeConfig: KubeConfig,
  resource: ResourceType,
  object: KubernetesObject,
  finalizer: string,
): Promise<KubernetesObject> {
  if (hasFinalizer(object, finalizer)) return object;
  const current = object.metadata?.finalizers;
  const operations: JsonPatchOperation[] = current?.length
    ? [
        { op: 'test', path: '/metadata/finalizers', value: current },
        { op: 'add', path: '/metadata/finalizers/-', value: finalizer },
      ]
    : [
        { op: 'test', path: '/metadata/resourceVersion', value: object.metadata?.resourceVersion },
        { op: 'add', path: '/metadata/finalizers', value: [finalizer] },
      ];
  return jsonPatch(kubeConfig, resource, object, operations);
}

/**
 * Removes `finalizer`, and only it, from `object`: `test` that the element at its index is
 * `finalizer`, then `remove` that index. Another party's finalizer is never dropped, even one added
 * meanwhile; an index that moved makes the `test` fail (thrown as 409: read again and retry).
 * @returns `false` when `object` does not carry it (no request); `true` once removed. A `404` (the
 *   object is gone already) counts as removed.
 * @throws {ApiException} 409 when the finalizers changed since `object` was read; others as thrown
 */
export async function removeFinalizer(
  kubeConfig: KubeConfig,
  resource: ResourceType,
  object: KubernetesObject,
  finalizer: string,
): Promise<boolean> {
  const index = (object.metadata?.finalizers ?? []).indexOf(finalizer);
  if (index < 0) return false;
  try {
    await jsonPatch(kubeConfig, resource, object, [
      { op: 'test', path: `/metadata/finalizers/${index}`, value: finalizer },
      { op: 'remove', path: `/metadata/finalizers/${index}` },
    ]);
  } catch (err) {
    if (apiStatusOf(err) !== 404) throw err;
  }
  return true;
}
