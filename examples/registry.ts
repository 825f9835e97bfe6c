/**
 * The registry of Levelset's own repository (root package.json's "levelset.registry"): what
 * `npm start`, the bench and the integration tests run. Levelset's shipped controllers
 * (`levelset/controllers`) and the example projects' controllers, from each example's own registry.
 */

import { secretReplicator, subscriptionController, topicController } from 'levelset/controllers';
import type { AdmissionPolicy, AdmissionWebhook, Controller } from 'levelset/kit';
import { controllers as configmapBundle } from './configmap-bundle/controllers/index.ts';
import { controllers as customcluster } from './customcluster/controllers/index.ts';
import { controllers as foo, webhooks as fooWebhooks } from './foo/controllers/index.ts';
import { controllers as icecream } from './icecream/controllers/index.ts';
import { controllers as tenant, policies as tenantPolicies } from './tenant/controllers/index.ts';

export const controllers: readonly Controller[] = [
  secretReplicator,
  ...foo, // kubernetes/sample-controller's Foo
  ...customcluster, // the Customcluster tutorial
  ...icecream, // Icecream (controller.nicoleh.io/v1alpha1)
  ...configmapBundle, // ConfigMapBundle (examples.levelset.dev/v1alpha1)
  ...tenant, // Tenant (platform.levelset.dev/v1alpha1): Namespaces, ResourceQuotas, NetworkPolicies
  topicController, // Topic (pubsub.levelset.dev/v1alpha1)
  subscriptionController, // Subscription (pubsub.levelset.dev/v1alpha1)
];

/** The admission policies (ValidatingAdmissionPolicies) of the examples. */
export const policies: readonly AdmissionPolicy[] = [...tenantPolicies];

/** The example projects' admission webhooks (the `admission` function serves them). */
export const webhooks: readonly AdmissionWebhook[] = [...fooWebhooks];
