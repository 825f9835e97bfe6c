/**
 * Reading a namespaced custom resource and writing its status: the two API calls every
 * custom-resource controller makes the same way.
 */
import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { z } from 'zod';
import type { Key, ResourceType } from '../controllers/types.ts';
import { statusChanged } from './conditions.ts';
import { isNotFound } from './errors.ts';

/**
 * The parts of a namespaced custom object a reconcile reads (apimachinery `ObjectMeta` subset);
 * the rest passes through. `spec` is validated by each controller's own schema.
 */
export const namespacedCustomObjectSchema = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({
    name: z.string(),
    namespace: z.string(),
    uid: z.string(),
    generation: z.number().int().optional(),
    resourceVersion: z.string().optional(),
    deletionTimestamp: z.unknown().optional(),
  }),
  spec: z.unknown().optional(),
  status: z.looseObject({}).optional(),
});

/** The field manager of every Levelset write (`kubectl get --show-managed-fields`). */
export const FIELD_MANAGER = 'levelset';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * GETs the custom object of `key`, unparsed (the caller validates it with zod).
 * @returns the object, or `undefined` when it no longer exists (404)
 * @throws other API errors as thrown by the client (retried by the runtime)
 */
export async function getCustomObject(
  kubeConfig: KubeConfig,
  resource: ResourceType,
  key: Key,
): Promise<unknown> {
  try {
    return await kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: resource.group,
      version: resource.version,
      plural: resource.plural,
      namespace: key.namespace,
      name: key.name,
    });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * Merge-patches `status` through the `status` subresource when it differs from `object.status`
 * (conditions compared without their timestamps), with field manager {@link FIELD_MANAGER}.
 * @returns whether a write happened (`false`: unchanged, or the object is gone)
 * @throws the API error of the write (transient errors are retried by Pub/Sub)
 */
export async function writeCustomObjectStatus(
  kubeConfig: KubeConfig,
  resource: ResourceType,
  object: { metadata: { name: string; namespace: string }; status?: unknown },
  status: Record<string, unknown>,
): Promise<boolean> {
  if (!statusChanged(object.status as Record<string, unknown> | undefined, status)) return false;
  try {
    await kubeConfig.makeApiClient(CustomObjectsApi).patchNamespacedCustomObjectStatus(
      {
        group: resource.group,
        version: resource.version,
        plural: resource.plural,
        namespace: object.metadata.namespace,
        name: object.metadata.name,
        body: { status },
        fieldManager: FIELD_MANAGER,
      },
      mergePatch,
    );
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}
