/**
 * The registry: the one list of controllers. The relay reads it to know what to watch, the
 * functions to know what to run, the Terraform RBAC generator to know what to grant.
 * Adding a controller is one folder under `functions/controllers/` and one line here.
 */

import type { Controller } from '../contract/controller.ts';
import { configmapBundleController } from './configmap-bundle/index.ts';
import { customclusterController } from './customcluster/index.ts';
import { fooController } from './foo/index.ts';
import { icecreamController } from './icecream/index.ts';
import { secretReplicator } from './secret-replicator/index.ts';
import { subscriptionController } from './subscription/index.ts';
import { topicController } from './topic/index.ts';

export const controllers: readonly Controller[] = [
  secretReplicator, // one line per controller
  fooController, // kubernetes/sample-controller's Foo
  customclusterController, // the Customcluster tutorial
  icecreamController, // Icecream (controller.nicoleh.io/v1alpha1)
  configmapBundleController, // ConfigMapBundle (examples.levelset.dev/v1alpha1)
  topicController, // Topic (pubsub.levelset.dev/v1alpha1)
  subscriptionController, // Subscription (pubsub.levelset.dev/v1alpha1)
];

/** The registered controller called `name`, or `undefined`. */
export function controllerByName(name: string): Controller | undefined {
  return controllers.find((c) => c.name === name);
}
