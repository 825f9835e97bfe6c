/**
 * `levelset status`: relay health, backlog, dead letters. Implementation: cli/impl/status.ts.
 */
import type { CommandModule } from 'yargs';
import type { StatusArgs } from '../impl/status.ts';
import { clusterOption, targetOptions } from './options.ts';

export const statusCommand: CommandModule<object, StatusArgs> = {
  command: 'status',
  describe:
    'relay health, subscription backlog and oldest unacked age, dead-letter count (exit 1 if unhealthy)',
  builder: (y) =>
    clusterOption(
      targetOptions(y),
      "whose relay to check in a multi-cluster local stack (default: the first cluster's)",
    )
      .option('relay-url', {
        type: 'string',
        describe:
          "the relay's health port (default: the local stack's relay; on GKE: kubectl -n levelset-system port-forward deploy/levelset-relay 8080, then http://127.0.0.1:8080)",
      })
      .option('output', { alias: 'o', choices: ['text', 'json'], default: 'text' }),
  handler: async (argv) => (await import('../impl/status.ts')).runStatus(argv),
};
