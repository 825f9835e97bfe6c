/**
 * `icecream`: the Icecream controller (`controller.nicoleh.io/v1alpha1`), on the Levelset controller kit
 * (docs/writing-a-controller.md).
 */
import { defineController } from '../../kit/index.ts';
import { icecreamResource, icecreamSpecSchema } from './api.ts';

/** The `icecream` controller module (registered in `functions/controllers/index.ts`). */
export const icecreamController = defineController({
  name: 'icecream',
  primary: icecreamResource,
  spec: icecreamSpecSchema,
  owns: [],
  watches: [],
  reconcile({ object }) {
    // Return the desired children (of the owned types), the status fields and the Ready condition.
    return { ready: { status: true, reason: 'Reconciled', message: `${object.metadata.name} reconciled` } };
  },
});
