/**
 * The Foo's admission webhooks, for what its CRD's schema cannot say (served by the project's
 * `admission` function, registered by `levelset build`; docs/writing-a-controller.md "Admission
 * webhooks"):
 *
 * - `foo-defaults` (mutating): a Foo created without `spec.deploymentName` gets its own name, so
 *   the reconcile never meets the missing name (which it answers with `Ready=False/InvalidSpec`).
 *   A default computed from another field is beyond an OpenAPI `default`.
 * - `foo-scale` (validating): more than {@link FREE_REPLICAS} replicas only from a member of the
 *   group {@link SCALERS_GROUP}. Who asks is in the request's `userInfo`, which neither the zod
 *   schema nor a CRD's CEL rule can see.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { defineMutatingWebhook, defineValidatingWebhook } from 'levelset/kit';
import { type FooSpec, fooResource } from './api.ts';

/** A Foo as an AdmissionReview carries it: not yet validated (its spec may be anything the CRD allows). */
export type FooObject = KubernetesObject & { spec?: FooSpec };

/** Replicas any user may ask for. */
export const FREE_REPLICAS = 3;
/** The group whose members may ask for more. */
export const SCALERS_GROUP = 'foo-scalers';

export const fooDefaults = defineMutatingWebhook<FooObject>({
  name: 'foo-defaults',
  rules: [{ resource: fooResource, operations: ['CREATE'] }],
  mutate({ object: foo }) {
    // A name the server generates (generateName) is not known yet: leave the Foo alone.
    const name = foo?.metadata?.name;
    if (!foo || foo.spec?.deploymentName || !name) return undefined;
    foo.spec = { ...foo.spec, deploymentName: name };
    return foo;
  },
});

export const fooScale = defineValidatingWebhook<FooObject>({
  name: 'foo-scale',
  rules: [{ resource: fooResource, operations: ['CREATE', 'UPDATE'] }],
  validate({ object: foo, oldObject: old, userInfo }) {
    const replicas = foo?.spec?.replicas ?? 1;
    const before = old?.spec?.replicas ?? 1;
    if (replicas <= FREE_REPLICAS || replicas <= before) return undefined;
    if (userInfo.groups?.includes(SCALERS_GROUP))
      return {
        allowed: true,
        warnings: [
          `spec.replicas ${replicas}: more than ${FREE_REPLICAS}, allowed to ${userInfo.username} (${SCALERS_GROUP})`,
        ],
      };
    return {
      allowed: false,
      message: `spec.replicas ${replicas}: more than ${FREE_REPLICAS} replicas only for members of the group ${SCALERS_GROUP}`,
    };
  },
});
