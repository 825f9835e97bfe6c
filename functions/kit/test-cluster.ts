/**
 * The Kubernetes cluster a controller's test runs against (exported by the kit's testing module):
 * the real cluster named by `TEST_KUBECONFIG` when set, else a fresh local API server
 * (`@levelset/apiserver`). Tests talk to it only through the Kubernetes API, so they run unchanged
 * on both.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { type LocalApiServer, type LocalApiServerOptions, startLocalApiServer } from '@levelset/apiserver';
import { isConflict } from '../../core/k8s/errors.ts';
import { PooledKubeConfig } from '../../core/pooled-kubeconfig.ts';
import { resourceClient } from './client.ts';
import { resources } from './resources.ts';
import { waitFor } from './wait.ts';

export interface TestCluster {
  /** Client configuration for the cluster. */
  kubeConfig: KubeConfig;
  /** A kubeconfig file for it (for kubectl, child processes). */
  kubeconfigPath: string;
  /** The local API server, when the test runs against it; `undefined` on a real cluster. */
  local?: LocalApiServer;
  /**
   * On a real cluster, deletes the namespaces made by {@link TestCluster.createNamespace} and waits
   * (deadline 120 s) until the namespace controller has emptied and removed them; a no-op on a
   * local server, which {@link TestCluster.stop} discards whole. Call it while the controllers
   * under test still run when their objects carry finalizers: a finalizer nobody removes keeps its
   * namespace `Terminating` (Kubernetes API conventions: finalizers).
   */
  deleteNamespaces(): Promise<void>;
  /** {@link TestCluster.deleteNamespaces}, then stops a local server. */
  stop(): Promise<void>;
  /**
   * Creates a namespace with a unique name (`<prefix>-<random>`) labelled `levelset.dev/test=true`.
   * @returns its name
   */
  createNamespace(prefix: string, labels?: Record<string, string>): Promise<string>;
  /**
   * Applies the CRD manifest at `path` with `kubectl apply -f` (as a user would; idempotent) and
   * waits, with a deadline, until its resource is served in `namespace` (a LIST answers 200).
   * @throws {Error} when kubectl fails or the resource is not served in time.
   */
  applyCrd(
    path: string,
    resource: { group: string; version: string; plural: string },
    namespace: string,
  ): Promise<void>;
  /**
   * Creates a test's own CRD from its manifest (one that exists already, 409, is replaced by it: a
   * real cluster keeps the CRDs of the files and runs before, which may be older) and waits, with a deadline, until its
   * resource is served: a LIST in `namespace` answers 200, or a cluster-wide LIST without one.
   * @throws {Error} when the API refuses the CRD or the resource is not served in time.
   */
  createCrd(
    manifest: KubernetesObject,
    resource: { group: string; version: string; plural: string },
    namespace?: string,
  ): Promise<void>;
}

/** A short random suffix for names that must not collide across runs on a shared real cluster. */
export function uniqueSuffix(): string {
  return randomBytes(3).toString('hex');
}

/**
 * Starts (or connects to) the cluster for one test file.
 * @param localOptions options of the local API server (ignored on a real cluster).
 */
export async function startTestCluster(localOptions: LocalApiServerOptions = {}): Promise<TestCluster> {
  const external = process.env.TEST_KUBECONFIG;
  let local: LocalApiServer | undefined;
  const kubeConfig = new PooledKubeConfig();
  let kubeconfigPath: string;
  if (external) {
    kubeConfig.loadFromFile(external);
    kubeconfigPath = external;
  } else {
    local = await startLocalApiServer(localOptions);
    kubeconfigPath = local.kubeconfigPath;
    kubeConfig.loadFromFile(kubeconfigPath);
  }
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const created: string[] = [];
  const cluster: TestCluster = {
    kubeConfig,
    kubeconfigPath,
    local,
    async applyCrd(path, resource, namespace) {
      await promisify(execFile)('kubectl', ['--kubeconfig', kubeconfigPath, 'apply', '-f', path]);
      const custom = kubeConfig.makeApiClient(CustomObjectsApi);
      await waitFor(() => custom.listNamespacedCustomObject({ ...resource, namespace }).then(() => true), {
        message: `${resource.plural}.${resource.group} to be served`,
      });
    },
    async createCrd(manifest, resource, namespace) {
      // The kit's client sends the manifest as it is: client-node's typed clients serialize by their
      // model, which drops `x-kubernetes-*` members spelt as in YAML (the schema's
      // `x-kubernetes-preserve-unknown-fields`, whose loss prunes every spec).
      const client = resourceClient(kubeConfig);
      await client.create(resources.customresourcedefinitions, manifest).catch(async (err: unknown) => {
        if (!isConflict(err)) throw err;
        // A shared real cluster keeps the CRD an earlier run (of an older test) made: replace it,
        // or the API server prunes the fields this test's schema added.
        const live = await client.get(
          resources.customresourcedefinitions,
          undefined,
          manifest.metadata?.name ?? '',
        );
        await client.replace(resources.customresourcedefinitions, {
          ...manifest,
          metadata: { ...manifest.metadata, resourceVersion: live.metadata?.resourceVersion },
        });
      });
      const custom = kubeConfig.makeApiClient(CustomObjectsApi);
      const list = () =>
        namespace === undefined
          ? custom.listClusterCustomObject(resource)
          : custom.listNamespacedCustomObject({ ...resource, namespace });
      await waitFor(() => list().then(() => true), {
        message: `${resource.plural}.${resource.group} to be served`,
      });
    },
    async createNamespace(prefix, labels = {}) {
      const name = `${prefix}-${uniqueSuffix()}`;
      await core.createNamespace({
        body: { metadata: { name, labels: { 'levelset.dev/test': 'true', ...labels } } },
      });
      created.push(name);
      // kube-controller-manager creates the `default` ServiceAccount shortly after; until then the
      // ServiceAccount admission plugin refuses Pods (403 "error looking up service account"). Wait,
      // as the Kubernetes e2e framework does (WaitForDefaultServiceAccountInNamespace).
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
    async deleteNamespaces() {
      if (local) return;
      const names = created.splice(0);
      await Promise.allSettled(names.map((name) => core.deleteNamespace({ name })));
      // A real cluster is shared by the test files, which run one after the other there
      // (package.json's `test`: concurrency 1 with TEST_KUBECONFIG): the next file's relay and watches must not see this file's objects go,
      // so the namespaces are waited for until the namespace controller has emptied and removed them.
      await waitFor(
        async () => {
          const left = await Promise.all(
            names.map((name) =>
              core.readNamespace({ name }).then(
                () => name,
                (err: { code?: number }) => (err.code === 404 ? undefined : name),
              ),
            ),
          );
          return left.every((name) => name === undefined);
        },
        { timeoutMs: 120_000, intervalMs: 250, message: `namespaces ${names.join(', ')} to be deleted` },
      );
    },
    async stop() {
      await cluster.deleteNamespaces();
      await local?.stop();
    },
  };
  return cluster;
}

/**
 * Why a two-cluster test cannot run, or `false`: with `TEST_KUBECONFIG` (one real cluster) set,
 * `TEST_KUBECONFIG_2` must name the second.
 */
export const secondClusterSkip: string | false =
  process.env.TEST_KUBECONFIG && !process.env.TEST_KUBECONFIG_2
    ? 'TEST_KUBECONFIG names one cluster: set TEST_KUBECONFIG_2 to a second one'
    : false;

/** A second cluster for a two-cluster test: `TEST_KUBECONFIG_2`'s, else a local API server of its own. */
export async function startSecondTestCluster(): Promise<TestCluster> {
  // startTestCluster starts a local API server when TEST_KUBECONFIG is unset: a second one.
  if (!process.env.TEST_KUBECONFIG_2) return startTestCluster();
  const saved = process.env.TEST_KUBECONFIG;
  process.env.TEST_KUBECONFIG = process.env.TEST_KUBECONFIG_2;
  try {
    return await startTestCluster();
  } finally {
    process.env.TEST_KUBECONFIG = saved;
  }
}

/**
 * Why a test that needs Pods to run cannot, or `false`: on a real cluster (`TEST_KUBECONFIG`) it
 * needs a Ready Node (its scheduler and kubelet make Deployments available); the local API server
 * gets the simulated node (local/simulated-node.ts) from the test itself.
 */
export async function noReadyNodeSkip(): Promise<string | false> {
  const external = process.env.TEST_KUBECONFIG;
  if (!external) return false;
  const kubeConfig = new PooledKubeConfig();
  kubeConfig.loadFromFile(external);
  const nodes = await kubeConfig.makeApiClient(CoreV1Api).listNode();
  const ready = nodes.items.some((n) =>
    n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  return ready ? false : 'TEST_KUBECONFIG names a cluster without a Ready Node: no Pod can run';
}
