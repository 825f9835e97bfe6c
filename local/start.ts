/**
 * `levelset dev` (`npm start`): the whole Levelset pipeline on this machine.
 *
 * Uses the cluster in `KUBECONFIG` (or ~/.kube/config) when it answers, else the embedded local
 * Kubernetes API server, in which it creates demo namespaces and a source Secret so replication is
 * visible. Prints what it started and where, then one readable line per reconcile; Ctrl-C stops
 * everything. `--log-format json` prints the processes' JSON log lines instead. Writes the stack's
 * state file and log files (local/state.ts) so that the other `levelset` commands find it.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type KubernetesObject, VersionApi } from '@kubernetes/client-node';
import { startLocalApiServer } from '@levelset/apiserver';
import type { pino } from 'pino';
import type { AdmissionWebhook } from '../core/contract/admission.ts';
import { createLogger } from '../core/log.ts';
import { PooledKubeConfig } from '../core/pooled-kubeconfig.ts';
import { isLoopbackServer, startLocalAdmission } from './admission.ts';
import { AUDIT_LOG_TOPIC } from './audit-log.ts';
import { Composition } from './composition.ts';
import { crossClusterDemo, installCrds, seedDemo } from './demo.ts';
import { startGrpcProxy } from './grpc-proxy.ts';
import { watchParent } from './parent-watch.ts';
import { createPrettyLog } from './progress.ts';
import { startSimulatedNode } from './simulated-node.ts';
import { startLocalStack } from './stack.ts';
import {
  readStackState,
  removeStackState,
  stackProcessAlive,
  stackStatePath,
  traceFilePath,
} from './state.ts';
import { topicDemo } from './topic-demo.ts';

/** Options of {@link runDev} (`levelset dev` flags). */
export interface DevOptions {
  /** `auto`: the cluster in `KUBECONFIG` when it answers, else the embedded one. */
  cluster: 'auto' | 'embedded' | 'kubeconfig';
  /** The registry module whose controllers run (absolute path; core/project.ts). */
  registry: string;
  /** The names of its controllers: the banner says what runs, and the secret replicator's lines only when it does. */
  controllers: readonly string[];
  /**
   * The CRDs of the registry's controllers (cli/build/generate-manifests.ts `projectCrdSources`),
   * created in an embedded cluster at start.
   */
  crds: readonly KubernetesObject[];
  /**
   * The registry's admission policies and their bindings (`policies`, the kit's `definePolicy`),
   * created in an embedded cluster at start, which evaluates them as kube-apiserver does.
   */
  policies?: readonly KubernetesObject[];
  /**
   * Seed the embedded cluster with demo objects: Levelset's own repository only (its controllers'
   * examples); a project's `levelset dev` has none.
   */
  demo: boolean;
  /** Namespace whose Secrets secret-replicator copies. */
  sourceNamespace: string;
  /** Period of the resync timer in ms; 0 = none. */
  resyncIntervalMs: number;
  /** The relay's collapse window in ms; default the relay's own. */
  collapseMs?: number;
  /** `pretty`: one readable line per reconcile, the key's own log lines under it; `json`: every process's raw log line. */
  logFormat: 'pretty' | 'json';
  /** The processes' `LOG_LEVEL`, and the lowest level the pretty view shows; default `info`. */
  logLevel?: pino.Level;
  /** Where `stack.json` and `logs/` go (local/state.ts). */
  stateDir: string;
  /** `KUBECONFIG`. */
  kubeconfig?: string;
  /**
   * Clusters to serve, default 1. More than one: that many embedded API servers (`cluster-1`,
   * `cluster-2`, …), a relay in each, one set of functions for all (functions/runtime/clusters.ts).
   */
  clusters?: number;
  /**
   * The registry's admission webhooks: the `admission` function runs behind HTTPS with the local CA
   * and each embedded API server calls them, or KUBECONFIG's when its API server runs on this machine
   * (a loopback server: registered for the stack's life, removed on stop; local/admission.ts).
   */
  webhooks?: readonly AdmissionWebhook[];
}

/** The id of the `n`th (1-based) cluster of `levelset dev --clusters N`. */
export function devClusterId(n: number): string {
  return `cluster-${n}`;
}

/**
 * Runs the local pipeline until SIGINT/SIGTERM, then stops everything and exits the process.
 * On a start failure, prints one line and exits 1.
 */
export async function runDev(options: DevOptions): Promise<void> {
  process.env.METADATA_SERVER_DETECTION ??= 'none';
  const logLevel = options.logLevel ?? 'info';
  const kubeconfigFile = options.kubeconfig ?? join(homedir(), '.kube', 'config');
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const replicates = options.controllers.includes('secret-replicator');

  /** The kubeconfig of a cluster that answers `/version` within 3 s, or undefined. */
  async function reachableCluster(): Promise<{ path: string; server: string; version: string } | undefined> {
    if (!existsSync(kubeconfigFile)) return undefined;
    try {
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfigFile);
      const version = await Promise.race([
        kc.makeApiClient(VersionApi).getCode(),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 3000).unref()),
      ]);
      return {
        path: kubeconfigFile,
        server: kc.getCurrentCluster()?.server ?? '?',
        version: version.gitVersion,
      };
    } catch {
      return undefined;
    }
  }

  // Started in order, stopped in the reverse: the stack, the simulated nodes, the API servers.
  const services = new Composition();
  let stopping = false;
  async function shutdown(code: number) {
    if (stopping) return;
    stopping = true;
    say('\nstopping: relay (flushes pending keys), functions, Pub/Sub emulator, API server…');
    await services.stop((err) => say(`  ${err.message}`));
    say('stopped.');
    process.exit(code);
  }
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  // Gone with its parent too (`npm start`'s npm killed, the terminal closed): local/parent-watch.ts.
  watchParent(() => {
    say('levelset dev: its parent process is gone');
    void shutdown(0);
  });

  try {
    say('Levelset: Kubernetes controllers as serverless functions (local pipeline)');
    const previous = (() => {
      try {
        return readStackState(options.stateDir);
      } catch {
        return undefined; // not a state file: overwritten below
      }
    })();
    if (previous && stackProcessAlive(previous))
      throw new Error(
        `a local stack already runs (pid ${previous.pid}, started ${previous.startedAt}; ${stackStatePath(options.stateDir)}): stop it first, or set LEVELSET_STATE_DIR`,
      );
    if (previous) {
      removeStackState(options.stateDir);
      say(
        `  stale state      removed ${stackStatePath(options.stateDir)}: its stack (pid ${previous.pid}) was killed without stopping`,
      );
    }
    const clusterCount = options.clusters ?? 1;
    if (clusterCount > 1 && options.cluster === 'kubeconfig')
      throw new Error('--clusters 2 or more runs embedded API servers: use --cluster auto or embedded');
    const external =
      options.cluster === 'embedded' || clusterCount > 1 ? undefined : await reachableCluster();
    if (!external && options.cluster === 'kubeconfig')
      throw new Error(
        `no cluster answered in ${kubeconfigFile}: check KUBECONFIG, or use --cluster embedded`,
      );
    const kubeconfigOf = (n: number) =>
      join(options.stateDir, n === 1 ? 'kubeconfig' : `kubeconfig-${devClusterId(n)}`);
    const kubeconfigPath = external?.path ?? kubeconfigOf(1);
    /** The embedded clusters (none with `external`), each with a kubeconfig of its own. */
    const embedded: { id: string; kubeconfigPath: string; kubeConfig: PooledKubeConfig }[] = [];
    if (external) say(`  cluster          ${external.server} (${external.version}) from ${external.path}`);
    else mkdirSync(options.stateDir, { recursive: true });
    for (let n = 1; !external && n <= clusterCount; n++) {
      const [id, path] = [devClusterId(n), kubeconfigOf(n)];
      // Its request log is read by no one here: a few entries, not 100 000 that take hours to fill.
      const apiserver = await services.launch(() =>
        startLocalApiServer({ kubeconfigPath: path, requestLogEntries: 1000 }),
      );
      say(
        clusterCount > 1
          ? `  cluster          ${id}: embedded local API server at ${apiserver.url}`
          : `  cluster          embedded local API server at ${apiserver.url} (no cluster answered in KUBECONFIG)`,
      );
      const kubeConfig = new PooledKubeConfig();
      kubeConfig.loadFromFile(path);
      embedded.push({ id, kubeconfigPath: path, kubeConfig });
    }
    const clusters = clusterCount > 1 ? embedded : undefined;
    for (const c of clusters ?? [{ id: '', kubeconfigPath }])
      say(
        `  kubeconfig       ${c.id ? `${c.id}: ` : ''}${c.kubeconfigPath}    try: kubectl --kubeconfig ${c.kubeconfigPath} get ${replicates ? 'secrets' : 'all'} -A`,
      );
    const pretty = createPrettyLog({ level: logLevel });
    const kubeConfig = embedded[0]?.kubeConfig ?? new PooledKubeConfig();
    if (external) kubeConfig.loadFromFile(kubeconfigPath);
    // No kubelet, scheduler or Deployment/ReplicaSet controllers in an embedded cluster: simulate them.
    for (const cluster of embedded) {
      await services.launch(() => startSimulatedNode(cluster.kubeConfig, createLogger('local')));
      if (cluster === embedded[0])
        say(
          '  simulated node   Nodes node-1..3 (kubectl get nodes); Deployments → ReplicaSets → Pods, each bound to a node, Running (embedded cluster only)',
        );
      // The project's CRDs, so that its objects can be created at once (kubebuilder's `make install`).
      await installCrds(cluster.kubeConfig, options.crds);
      // Its admission policies, so that the embedded API server refuses what the real one would.
      await installCrds(cluster.kubeConfig, options.policies ?? []);
      if (options.demo) await seedDemo(cluster.kubeConfig, options.sourceNamespace, 'before');
    }
    // The controllers' own Pub/Sub calls go through the gRPC proxy, which answers topics' label
    // updates as Pub/Sub does (the emulator refuses them), as the tests' stack does (local/grpc-proxy.ts).
    let emulatorHost = '';
    const proxy = await services.launch(async () => {
      const started = await startGrpcProxy(() => emulatorHost, { topicLabels: true });
      return { ...started, stop: () => started.close() };
    });
    const stack = await services.launch(() =>
      startLocalStack({
        kubeconfigPath,
        registry: options.registry,
        clusters,
        env: {
          LEVELSET_SOURCE_NAMESPACE: options.sourceNamespace,
          LOG_LEVEL: logLevel,
          LEVELSET_CLOUD_EMULATOR_HOST: proxy.host,
        },
        collapseMs: options.collapseMs,
        resyncIntervalMs: options.resyncIntervalMs,
        auditLog: true,
        stateDir: options.stateDir,
        onLog: (service, line) => {
          if (options.logFormat === 'json') say(JSON.stringify({ service, ...line }));
          else for (const text of pretty.lines(service, line)) say(text);
        },
        onDeliveryStall: (report) =>
          say(
            `watchdog    ${report.republished} keys published but nothing delivered for ${Math.round(report.silentMs / 1000)} s while reconcile answers: re-created the push subscription and re-published them`,
          ),
        onResync: (report) => {
          if (stopping) return; // a resync cut short by the stop is no failure
          say(
            report instanceof Error
              ? `resync      failed: ${report.message}`
              : `resync      published ${report.published} keys (${Object.entries(report.controllers)
                  .map(([name, c]) => `${name}: ${c.published}`)
                  .join(', ')})`,
          );
        },
      }),
    );
    emulatorHost = stack.emulator.host;
    say(
      `  Pub/Sub emulator ${stack.emulator.host} (pid ${stack.emulator.pid}), topic ${stack.topology.topic}; the controllers' calls through ${proxy.host} (topics' labels as Pub/Sub keeps them)`,
    );
    say(
      `  reconcile        ${stack.reconcile.url} (functions-framework, push subscription ${stack.topology.subscription})`,
    );
    say(
      `  resync           ${stack.resync.url} (${options.resyncIntervalMs ? `every ${options.resyncIntervalMs / 1000} s` : 'no timer: levelset resync'})`,
    );
    say(
      `  auditLog         ${stack.auditLog?.url ?? '-'} (push subscription of topic ${AUDIT_LOG_TOPIC}: Cloud Audit Logs' entries, published locally by whoever changes a cloud resource out of band)`,
    );
    for (const id of clusters ? stack.clusters : [undefined])
      say(
        `  relay            ${id ? `${id}: ` : ''}${stack.relay(id)?.url ?? '-'} (/healthz, /readyz, /metrics)`,
      );
    // The webhooks, with the embedded API servers, or with KUBECONFIG's when it runs on this machine.
    const callsBack = external !== undefined && isLoopbackServer(external.server);
    if (options.webhooks?.length && (embedded.length > 0 || callsBack)) {
      const webhooks = options.webhooks;
      const admissionTraces = traceFilePath(options.stateDir, 'admission');
      rmSync(admissionTraces, { force: true }); // a previous stack's
      const admission = await services.launch(() =>
        startLocalAdmission({
          registry: options.registry,
          webhooks,
          clusters: external ? [kubeConfig] : embedded.map((c) => c.kubeConfig),
          removeOnStop: external !== undefined,
          // Its spans beside the stack's (levelset trace reads every file of traces/), every one kept.
          env: {
            LOG_LEVEL: logLevel,
            LEVELSET_TRACING: 'file',
            LEVELSET_TRACE_FILE: admissionTraces,
            LEVELSET_TRACE_SAMPLE_RATIO: '1',
          },
          onLog: (line) => {
            if (options.logFormat === 'json') say(JSON.stringify({ service: 'admission', ...line }));
            else for (const text of pretty.lines('admission', line)) say(text);
          },
        }),
      );
      say(
        `  admission        ${admission.url} (functions-framework ${admission.service.url} behind HTTPS, local CA): ${webhooks.map((w) => w.name).join(', ')} registered with ${external ? external.server : 'the embedded API server'}`,
      );
    } else if (options.webhooks?.length)
      say(
        `  admission        not registered: ${external?.server ?? 'the cluster'} is not on this machine, so it cannot be assumed to reach it (levelset build writes deploy/webhooks.yaml)`,
      );
    say(`  controllers      ${options.controllers.join(', ') || '(none registered)'}`);
    if (replicates)
      say(
        `  source namespace ${options.sourceNamespace}: every Secret there is copied to every other namespace`,
      );
    if (replicates && clusters)
      say(
        '  cross-cluster    a source annotated levelset.dev/replicate-to-clusters: <ids or globs> is copied into those clusters too',
      );
    say(`  state            ${options.stateDir} (levelset status, reconcile, resync, dead-letters use it)`);
    say('Ctrl-C stops everything.\n');
    if (embedded.length > 0 && options.demo) {
      await seedDemo(kubeConfig, options.sourceNamespace, 'after', say);
      await topicDemo(kubeConfig, stack.emulator, say);
      const [first, second] = clusters ? embedded : [];
      if (first && second) await crossClusterDemo(first, second, options.sourceNamespace, say);
    } else if (replicates) {
      const core = kubeConfig.makeApiClient(CoreV1Api);
      const sources = await core
        .listNamespacedSecret({ namespace: options.sourceNamespace })
        .catch(() => undefined);
      say(`watching: ${sources?.items.length ?? 0} source Secrets in ${options.sourceNamespace}`);
    }
  } catch (err) {
    // Ctrl-C during the start: the stop ends what was starting, which then fails; that is no error.
    if (stopping) return;
    say(`levelset: could not start: ${err instanceof Error ? err.message : String(err)}`);
    await shutdown(1);
  }
}
