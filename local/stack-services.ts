/**
 * The local stack's services (local/stack.ts): the `reconcile`, `resync` and `auditLog` functions
 * under functions-framework, a relay per cluster, and the push subscriptions to the functions through
 * a push proxy each; with the V8 flags and environment Terraform and the relay's image give them.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { DEFAULT_CLUSTER } from '../core/contract/key.ts';
import { DEFAULT_MAX_DELIVERY_ATTEMPTS } from '../functions/runtime/retry.ts';
import { LOCAL_FUNCTIONS_SERVICE_ACCOUNT } from './audit-log.ts';
import { Launcher } from './composition.ts';
import { levelsetModule } from './module-path.ts';
import { ensureKeysTopology, freePort, keysTopologyNames, type PubSubEmulator } from './pubsub-emulator.ts';
import { type PushProxy, type PushProxyOptions, startPushProxy } from './push-proxy.ts';
import { type LogLine, onFreePort, type Service, serviceUrl, startService } from './service.ts';
import type { createStackFiles } from './state.ts';

/** What the services read of the stack's options (local/stack.ts `LocalStackOptions`, which describes each). */
interface ServiceOptions {
  kubeconfigPath: string;
  clusters?: readonly { id: string; kubeconfigPath: string }[];
  relayKubeconfigPath?: string;
  functionsKubeconfigPath?: string;
  maxDeliveryAttempts?: number;
  auditLog?: boolean;
}

/**
 * V8 heap limit (MiB) of the local function processes: what Terraform gives a function at its
 * default 512Mi (`--max-old-space-size`, half the instance's memory; terraform/functions.tf), so a
 * function that would not fit on Cloud Run does not pass locally either.
 */
export const FUNCTION_HEAP_MIB = 256;

/**
 * The functions' V8 flags, as Terraform sets them in NODE_OPTIONS (terraform/functions.tf): the
 * heap limit {@link FUNCTION_HEAP_MIB}, and 8 MiB semi-spaces, which V8 otherwise grows during a
 * resync and keeps (docs/architecture.md, decision 35).
 */
export const FUNCTION_NODE_OPTIONS = [
  `--max-old-space-size=${FUNCTION_HEAP_MIB}`,
  '--max-semi-space-size=8',
] as const;

/**
 * The relay's V8 flags, as Terraform sets them in its container's NODE_OPTIONS (terraform/kubernetes.tf
 * `relay_node_env`): half the 512Mi memory limit as heap, and 4 MiB semi-spaces, which V8 otherwise
 * grows during a large LIST and keeps (docs/architecture.md, decision 1).
 */
export const RELAY_NODE_OPTIONS = ['--max-old-space-size=256', '--max-semi-space-size=4'] as const;

/**
 * Requests the local `reconcile` serves at once, live and resync pushes together: Terraform's
 * `reconcile_concurrency` default (`max_instance_request_concurrency` of each instance,
 * terraform/variables.tf). Locally one process stands for one instance, so its memory and CPU are
 * an instance's at the deployed concurrency; in the cloud more instances serve the rest.
 */
export const FUNCTION_CONCURRENCY = 8;

/** The functions' entry for functions-framework's `--source` (functions/runtime/main.ts: the registry of `LEVELSET_REGISTRY`). */
export const functionsMain = levelsetModule('functions/runtime/main.ts');

/** The functions-framework CLI (`functions-framework --target=… --port=…`). */
export const functionsCli = join(
  dirname(createRequire(import.meta.url).resolve('@google-cloud/functions-framework')),
  'main.js',
);

/**
 * A relay's process (the in-process mode's too), on a new port at each start (`RELAY_PORT`; another
 * when some other process took it first, local/service.ts `onFreePort`), ready once `/readyz`
 * answers; `env(extra)` is its environment at each start.
 */
export function relayProcess(
  name: string,
  args: string[],
  env: (extra: Record<string, string>) => Record<string, string>,
  onLog: (line: LogLine) => void,
): Launcher<Service, [extra?: Record<string, string>]> {
  return new Launcher((extra = {}) =>
    onFreePort((port) => {
      const ownEnv = { ...env(extra), RELAY_PORT: String(port) };
      return startService({ name, args, port, env: ownEnv, readyPath: '/readyz', onLog });
    }),
  );
}

/** The stack's log, trace and state files (local/state.ts). */
export type StackFiles = ReturnType<typeof createStackFiles>;

/** The `reconcile` and `resync` functions under functions-framework, each on a port of its own for good. */
export async function functionServices(
  options: ServiceOptions,
  env: Record<string, string>,
  files: StackFiles,
) {
  const ports = { reconcile: await freePort(), resync: await freePort(), auditLog: await freePort() };
  // The reconcile's and the resync's Prometheus metrics (core/metrics.ts) each on a port of its own,
  // kept across restarts of the function: `levelset status --watch` reads the reconcile's, `npm run
  // soak` both (the process's heap over time).
  const metricsPorts = { reconcile: await freePort(), resync: await freePort() };
  const urls = {
    get reconcile() {
      return serviceUrl(ports.reconcile);
    },
    get resync() {
      return serviceUrl(ports.resync);
    },
    get auditLog() {
      return serviceUrl(ports.auditLog);
    },
    get reconcileMetrics() {
      return `${serviceUrl(metricsPorts.reconcile)}metrics`;
    },
    get resyncMetrics() {
      return `${serviceUrl(metricsPorts.resync)}metrics`;
    },
  };
  const clusters = options.clusters?.map((c) => ({ id: c.id, kubeconfig: c.kubeconfigPath }));
  const functionsEnv = {
    // Requeues and retries (functions/runtime/requeue.ts, functions/runtime/retry.ts) come back through a timer in
    // reconcile's process that publishes the key to the keys topic, as Cloud Tasks does in the cloud.
    LEVELSET_REQUEUE: 'local',
    // The attempts before a failing key is dead-lettered: the push proxy's (Terraform's dead-letter policy's).
    LEVELSET_MAX_DELIVERY_ATTEMPTS: String(options.maxDeliveryAttempts ?? DEFAULT_MAX_DELIVERY_ATTEMPTS),
    // The principal Levelset's own writes carry in an audit log entry (local/audit-log.ts).
    LEVELSET_FUNCTIONS_SERVICE_ACCOUNT: LOCAL_FUNCTIONS_SERVICE_ACCOUNT,
    ...env,
    KUBECONFIG: options.functionsKubeconfigPath ?? options.kubeconfigPath,
    ...(clusters?.length ? { LEVELSET_CLUSTERS: JSON.stringify(clusters) } : {}),
  };
  // The functions' entry that loads the registry named by LEVELSET_REGISTRY (functions/runtime/main.ts).
  const source = `--source=${functionsMain}`;
  const functionService = (name: 'reconcile' | 'resync' | 'auditLog') => {
    const onLog = files.log(name);
    const launch = (port: number) => {
      const metrics = name === 'auditLog' ? {} : { LEVELSET_METRICS_PORT: String(metricsPorts[name]) };
      const ownEnv = { ...functionsEnv, ...files.traceEnv(name), ...metrics };
      const args = [...FUNCTION_NODE_OPTIONS, functionsCli, `--target=${name}`, `--port=${port}`, source];
      return startService({ name, args, port, env: ownEnv, onLog });
    };
    let started = false;
    return new Launcher(async () => {
      // Its first start moves to fresh ports when another process took a chosen one meanwhile (the
      // function's or its metrics', both answered EADDRINUSE); from then on the ports are its own for
      // good (a restart keeps every address of it valid).
      let attempts = 0;
      const service = started
        ? await launch(ports[name])
        : await onFreePort(async (port) => {
            if (attempts++ > 0 && name !== 'auditLog') metricsPorts[name] = await freePort();
            return launch(port);
          }, ports[name]);
      ports[name] = service.port;
      started = true;
      return service;
    });
  };
  return {
    reconcile: functionService('reconcile'),
    resync: functionService('resync'),
    // Its log file and trace file exist only when it runs.
    auditLog: options.auditLog ? functionService('auditLog') : undefined,
    urls,
  };
}

/**
 * A push subscription of `topic` to `reconcile` through a push proxy of its own (local/push-proxy.ts):
 * `start` starts the proxy unless it runs, then creates what is missing of the topic and the
 * subscription pushing to it (all of it, after the emulator's restart); with `pushWindow`, a pull
 * subscription the proxy pulls from (again).
 */
export function pushSubscription(
  { host: emulatorHost, projectId }: PubSubEmulator,
  topic: string,
  proxy: Pick<
    PushProxyOptions,
    'target' | 'maxDeliveryAttempts' | 'maxConcurrentPushes' | 'instanceSlots' | 'pushBackoff' | 'pushWindow'
  >,
  messageOrdering?: boolean,
  subscriptionId?: string,
) {
  const topology = keysTopologyNames(projectId, topic, subscriptionId);
  const { deadLetterTopic, subscription } = topology;
  const topologyOptions = { projectId, emulatorHost, topic, messageOrdering, subscription: subscriptionId };
  const proxyService = new Launcher(() =>
    startPushProxy({ ...proxy, emulatorHost, projectId, deadLetterTopic, subscription }),
  );
  return {
    topology,
    /** Starts the proxy and creates the topology, through `through` (`host:port`; default the emulator's). */
    async start(through = emulatorHost): Promise<PushProxy> {
      const running = await proxyService.start();
      // With a push window the proxy pulls a pull subscription and pushes itself (the `cloud` push model).
      const pushEndpoint = proxy.pushWindow ? undefined : running.url;
      await ensureKeysTopology({ ...topologyOptions, emulatorHost: through, pushEndpoint });
      await running.startPulling();
      return running;
    },
    stop: () => proxyService.stop(),
  };
}

/**
 * A relay per cluster, each with its id and kubeconfig. Without `clusters`,
 * the one relay `relay` of the `default` cluster, with the relay's identity.
 */
export function relayServices(options: ServiceOptions, env: Record<string, string>, files: StackFiles) {
  const kubeconfigPath = options.relayKubeconfigPath ?? options.kubeconfigPath;
  const clusters = options.clusters?.length
    ? options.clusters.map((c) => ({ ...c, name: `relay-${c.id}`, env: { RELAY_CLUSTER: c.id } }))
    : [{ id: DEFAULT_CLUSTER, kubeconfigPath, name: 'relay', env: {} }];
  const args = [...RELAY_NODE_OPTIONS, levelsetModule('cli/levelset.ts'), 'relay'];
  return clusters.map((c) => {
    const relayEnv = (extra: Record<string, string>) => {
      const own = { ...extra, KUBECONFIG: c.kubeconfigPath, ...c.env };
      // glibc's malloc settings (relay/Dockerfile's ENV) come from startService (ALLOCATOR_ENV).
      return { ...env, ...files.traceEnv('relay'), ...own };
    };
    return { ...c, service: relayProcess(c.name, args, relayEnv, files.log(c.name)) };
  });
}
