/**
 * The registry: the one list of this project's controllers. The relay reads it to know what to
 * watch, the functions to know what to run, `levelset build` to know what to grant (package.json's
 * "levelset.registry" names this file). `levelset new controller` adds a line.
 */
import type { AdmissionWebhook, Controller } from 'levelset/kit';
import { fooController } from './foo/index.ts';
import { fooDefaults, fooScale } from './foo/webhooks.ts';

export const controllers: readonly Controller[] = [
  fooController, // kubernetes/sample-controller's Foo (samplecontroller.k8s.io/v1alpha1)
];

/** The project's admission webhooks: served by the `admission` function, registered by `levelset build`. */
export const webhooks: readonly AdmissionWebhook[] = [
  fooDefaults, // a Foo without spec.deploymentName gets its own name
  fooScale, // more than 3 replicas only for the group foo-scalers
];
