/**
 * What every custom-resource controller reads the same way: the metadata schema of a namespaced
 * custom object, and Levelset's field manager. The kit (functions/kit/) reads and writes with them.
 */
import * as z from 'zod';

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
