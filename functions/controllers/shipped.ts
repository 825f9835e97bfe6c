/**
 * Levelset's own controllers, shipped for a project's registry (`levelset/controllers`): add one
 * to the project's `controllers` list in one line. Their CRDs are in `deploy/crds/` of Levelset's
 * repository (the Topic's and the Subscription's); the secret replicator's primary is the Secret.
 *
 *   import { topicController } from 'levelset/controllers';
 *   export const controllers = [widgetController, topicController];
 */
export { secretReplicator } from './secret-replicator/index.ts';
export { subscriptionController } from './subscription/index.ts';
export { topicController } from './topic/index.ts';
