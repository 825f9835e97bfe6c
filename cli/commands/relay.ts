/**
 * `levelset relay`: the relay process (relay/main.ts) of the project's registry (core/project.ts).
 * Configured by the environment only (`KUBECONFIG`, `GOOGLE_CLOUD_PROJECT`, `LEVELSET_TOPIC`, `RELAY_COLLAPSE_MS`,
 * `RELAY_PORT`, `LOG_LEVEL`, `PUBSUB_EMULATOR_HOST`), as a Deployment sets it.
 */
import type { CommandModule } from 'yargs';

export const relayCommand: CommandModule = {
  command: 'relay',
  describe:
    'run the relay: list+watch, map to keys, collapse, publish (env: KUBECONFIG, GOOGLE_CLOUD_PROJECT, LEVELSET_TOPIC, RELAY_COLLAPSE_MS, RELAY_PORT)',
  handler: async () => {
    // The relay runs until SIGTERM/SIGINT.
    const { loadRegistry } = await import('../../core/project.ts');
    const { controllers } = await loadRegistry();
    const { runRelay } = await import('../../relay/main.ts');
    await runRelay(controllers);
  },
};
