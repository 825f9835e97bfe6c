/**
 * The cluster a conformance test runs against: the real cluster named by `TEST_KUBECONFIG` when
 * set, else a fresh local API server. The package's own helper (it imports nothing of Levelset, so
 * not Levelset's test/support/cluster.ts): plain client-node `KubeConfig`, no CRD helper.
 */
import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { type LocalApiServer, type LocalApiServerOptions, startLocalApiServer } from '../index.ts';
import { waitFor } from './wait.ts';

export interface TestCluster {
  /** Client configuration for the cluster (cluster-admin on the local server). */
  kubeConfig: KubeConfig;
  /** A kubeconfig file for it (for kubectl). */
  kubeconfigPath: string;
  /** The local API server, when the test runs against it; `undefined` on a real cluster. */
  local?: LocalApiServer;
  /** Deletes the namespaces made by {@link TestCluster.createNamespace}, stops a local server. */
  stop(): Promise<void>;
  /**
   * Creates a namespace with a unique name (`<prefix>-<random>`) labelled `levelset.dev/test=true`;
   * on a real cluster, waits (deadline) for its `default` ServiceAccount.
   * @returns its name
   */
  createNamespace(prefix: string, labels?: Record<string, string>): Promise<string>;
}

/** A short random suffix (6 hex characters) for names that must not collide on a shared cluster. */
export function uniqueSuffix(): string {
  return randomBytes(3).toString('hex');
}

/**
 * Starts (or connects to) the cluster for one test file.
 * @param localOptions options of the local API server (ignored on a real cluster).
 */
export async function startTestCluster(localOptions: LocalApiServerOptions = {}): Promise<TestCluster> {
  const external = process.env.TEST_KUBECONFIG;
  const local = external ? undefined : await startLocalApiServer(localOptions);
  const kubeconfigPath = external ?? (local as LocalApiServer).kubeconfigPath;
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const created: string[] = [];
  return {
    kubeConfig,
    kubeconfigPath,
    local,
    async createNamespace(prefix, labels = {}) {
      const name = `${prefix}-${uniqueSuffix()}`;
      await core.createNamespace({
        body: { metadata: { name, labels: { 'levelset.dev/test': 'true', ...labels } } },
      });
      created.push(name);
      // kube-controller-manager creates the `default` ServiceAccount shortly after; until then the
      // ServiceAccount admission plugin refuses Pods. Wait, as the Kubernetes e2e framework does
      // (WaitForDefaultServiceAccountInNamespace).
      if (!local)
        await waitFor(
          () =>
            core.readNamespacedServiceAccount({ name: 'default', namespace: name }).then(
              () => true,
              () => false,
            ),
          { message: `ServiceAccount ${name}/default` },
        );
      return name;
    },
    async stop() {
      if (local) {
        await local.stop();
        return;
      }
      await Promise.allSettled(created.map((name) => core.deleteNamespace({ name })));
      // Test files run one after the other on a real cluster: the next one must not see these go.
      await waitFor(
        async () =>
          (
            await Promise.all(
              created.map((name) =>
                core.readNamespace({ name }).then(
                  () => false,
                  (err: { code?: number }) => err.code === 404,
                ),
              ),
            )
          ).every(Boolean),
        { timeoutMs: 120_000, intervalMs: 250, message: `namespaces ${created.join(', ')} to be deleted` },
      );
    },
  };
}
