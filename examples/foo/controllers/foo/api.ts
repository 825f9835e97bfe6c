/**
 * The Foo API of kubernetes/sample-controller (`samplecontroller.k8s.io/v1alpha1`), as the CRD in
 * `crd.yaml` serves it, and the zod schema a reconcile validates its spec with (defence in depth:
 * the CRD's openAPIV3Schema already rejects most invalid specs with 422).
 */

import {
  customResource,
  dns1123Subdomain,
  type PrimaryObject,
  messageResourceExists as resourceExists,
} from 'levelset/kit';
import * as z from 'zod';

export const GROUP = 'samplecontroller.k8s.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'Foo';

/** The primary resource: `foos.samplecontroller.k8s.io`, namespaced. */
export const fooResource = customResource({ group: GROUP, version: VERSION, kind: KIND, plural: 'foos' });

/** `Resource %q already exists and is not managed by Foo`, as sample-controller's `controller.go`. */
export function messageResourceExists(deploymentName: string): string {
  return resourceExists(deploymentName, KIND);
}

/**
 * `spec` as the CRD allows it: both fields optional, as upstream's `FooSpec` (`Replicas *int32`).
 * A missing `deploymentName` is valid here and handled by the reconcile as upstream does (absorbed).
 */
export const fooSpecSchema = z
  .object({
    deploymentName: dns1123Subdomain
      .describe(
        "Name of the Deployment in the Foo's namespace that the Foo controls. Without it nothing is created (a Warning Event and a Ready=False condition say so).",
      )
      .optional(),
    replicas: z
      .int32()
      .min(1)
      .max(10)
      .describe(
        "Desired replicas of the Deployment (upstream bounds, 1 to 10). Omitted, the Deployment's own default applies and is left alone.",
      )
      .optional(),
  })
  .describe('The desired state.');
export type FooSpec = z.infer<typeof fooSpecSchema>;

/** `status` as the reconcile returns it (upstream's `FooStatus`). */
export const fooStatusSchema = z.object({
  availableReplicas: z
    .int32()
    .min(0)
    .describe("Copied from the Deployment's status.availableReplicas.")
    .optional(),
});

/** A Foo as the reconcile reads it. */
export type Foo = PrimaryObject;
