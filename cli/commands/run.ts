/**
 * `levelset run --in-process`: the project's registered controllers (core/project.ts) the classic way, in one process
 * (functions/runtime/in-process-main.ts: shared informers → client-go workqueue → workers), the entry point of
 * `deploy/in-process/`. Configured by the environment (`KUBECONFIG`, `RELAY_PORT`,
 * `RELAY_COLLAPSE_MS`, `LEVELSET_WORKERS`, `LEVELSET_RESYNC_INTERVAL_MS`, `LOG_LEVEL`).
 */
import type { CommandModule } from 'yargs';
import { CliError, EXIT_USAGE } from '../errors.ts';

export const runCommand: CommandModule<object, { 'in-process': boolean }> = {
  command: 'run',
  describe:
    'run the controllers in this process without Google Cloud: --in-process (informers → workqueue → workers)',
  builder: (y) =>
    y.option('in-process', {
      type: 'boolean',
      default: false,
      describe: 'run every registered controller here, as a classic controller manager',
    }),
  handler: async (argv) => {
    if (!argv['in-process'])
      throw new CliError(
        'levelset run needs --in-process (the serverless path is levelset relay plus the functions)',
        EXIT_USAGE,
      );
    // The controllers run until SIGTERM/SIGINT.
    const { loadRegistry } = await import('../../core/project.ts');
    const { controllers } = await loadRegistry();
    const { runInProcess } = await import('../../functions/runtime/in-process-main.ts');
    await runInProcess(controllers);
  },
};
