/**
 * `levelset dev` (what `npm start` runs): the whole pipeline on this machine (local/start.ts).
 * Flags default to the environment variables README "Configuration" lists.
 */

import type { KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { parse } from 'yaml';
import type { CommandModule } from 'yargs';
import { findProject, isLevelsetRepository, loadRegistry, registryPath } from '../../core/project.ts';
import { stateDirectory } from '../../local/state.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';

interface DevArgs {
  cluster: string;
  clusters: number;
  demo: boolean;
  'source-namespace': string;
  'resync-interval-ms': number;
  'collapse-ms'?: number;
  'log-format': string;
  'log-level': string;
}

const intFromEnv = (name: string): number | undefined => {
  const value = process.env[name];
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new CliError(`${name} must be a whole number of ms, not "${value}"`, EXIT_USAGE);
  return n;
};

export const devCommand: CommandModule<object, DevArgs> = {
  command: 'dev',
  describe: 'run the whole pipeline locally: Pub/Sub emulator, both functions, the relay, a resync timer',
  builder: (y) =>
    y
      .option('cluster', {
        choices: ['auto', 'embedded', 'kubeconfig'],
        default: 'auto',
        describe: 'auto: the cluster in KUBECONFIG when it answers, else the embedded local API server',
      })
      .option('clusters', {
        type: 'number',
        default: 1,
        describe:
          'clusters to serve: 2 or more starts that many embedded API servers (cluster-1, cluster-2, …), a relay in each, one set of functions for all',
      })
      .option('demo', {
        type: 'boolean',
        default: true,
        describe: 'seed the embedded cluster with demo objects (--no-demo: none)',
      })
      .option('source-namespace', {
        type: 'string',
        default: process.env.LEVELSET_SOURCE_NAMESPACE || 'levelset-system',
        describe: "secret-replicator's source namespace (LEVELSET_SOURCE_NAMESPACE)",
      })
      .option('resync-interval-ms', {
        type: 'number',
        default: intFromEnv('LEVELSET_RESYNC_INTERVAL_MS') ?? 60_000,
        describe: 'period of the resync timer in ms, 0 = none (LEVELSET_RESYNC_INTERVAL_MS)',
      })
      .option('collapse-ms', {
        type: 'number',
        default: intFromEnv('RELAY_COLLAPSE_MS'),
        describe: "the relay's collapse window in ms (RELAY_COLLAPSE_MS; default the relay's 250)",
      })
      .option('log-format', {
        choices: ['pretty', 'json'],
        default: process.env.LEVELSET_LOG_FORMAT || 'pretty',
        describe:
          "pretty: one line per reconcile, the key's own log lines under it; json: every process's Cloud Logging line (LEVELSET_LOG_FORMAT)",
      })
      .option('log-level', {
        choices: Object.keys(pino.levels.values),
        default: process.env.LOG_LEVEL || 'info',
        describe:
          "the processes' pino level; the pretty view shows a key's own lines from it up, under its outcome line (LOG_LEVEL)",
      })
      .check((argv) => {
        if (!Number.isInteger(argv.clusters) || argv.clusters < 1 || argv.clusters > 9)
          throw new Error('--clusters must be a whole number from 1 to 9');
        for (const name of ['resync-interval-ms', 'collapse-ms'] as const) {
          const v = argv[name];
          if (v !== undefined && (!Number.isInteger(v) || v < 0))
            throw new Error(`--${name} must be a whole number ≥ 0`);
        }
        return true;
      }),
  handler: async (argv) => {
    // The project's registry (core/project.ts): its controllers run; one line when there is none.
    const project = findProject();
    const registry = registryPath();
    const { controllers, policies, webhooks } = await loadRegistry(registry);
    const [{ runDev }, { projectCrdSources }] = await Promise.all([
      import('../../local/start.ts'),
      import('../build/generate-manifests.ts'),
    ]);
    await runDev({
      registry,
      controllers: controllers.map((c) => c.name),
      // The project's CRDs, as `levelset build` deploys them (its own and the shipped ones it registers).
      crds: projectCrdSources({ ...project, registry }, controllers).map((s) => parse(s.text)),
      // Its admission policies (definePolicy), which the embedded API server evaluates.
      policies: policies.flatMap((p) => [p.policy, p.binding] as KubernetesObject[]),
      // The demo plays Levelset's own controllers' examples: in its own repository only.
      cluster: argv.cluster as 'auto' | 'embedded' | 'kubeconfig',
      clusters: argv.clusters,
      demo: argv.demo && isLevelsetRepository(project),
      sourceNamespace: argv['source-namespace'],
      resyncIntervalMs: argv['resync-interval-ms'],
      collapseMs: argv['collapse-ms'],
      logFormat: argv['log-format'] as 'pretty' | 'json',
      logLevel: argv['log-level'] as pino.Level,
      stateDir: stateDirectory(),
      kubeconfig: process.env.KUBECONFIG || undefined,
      webhooks,
    });
  },
};
