/**
 * `topic`: the Topic controller (`pubsub.levelset.dev/v1alpha1`), on the Levelset controller kit
 * (docs/writing-a-controller.md).
 */
import { defineController } from '../../kit/index.ts';
import { topicResource, topicSpecSchema } from './api.ts';

/** The `topic` controller module (registered in `functions/controllers/index.ts`). */
export const topicController = defineController({
  name: 'topic',
  primary: topicResource,
  spec: topicSpecSchema,
  owns: [],
  watches: [],
  reconcile({ object }) {
    // Return the desired children (of the owned types), the status fields and the Ready condition.
    return { ready: { status: true, reason: 'Reconciled', message: `${object.metadata.name} reconciled` } };
  },
});
