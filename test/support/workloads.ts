/**
 * What makes a Deployment available in an integration test: the cluster's Deployment and ReplicaSet
 * controllers, scheduler and kubelet. On a real cluster (TEST_KUBECONFIG) its own; on the local API
 * server, which has none, the project's simulated node (local/simulated-node.ts), started here.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { pino } from 'pino';
import { PooledKubeConfig } from '../../core/pooled-kubeconfig.ts';
import type { TestCluster } from '../../functions/kit/testing.ts';
import { startSimulatedNode } from '../../local/simulated-node.ts';

/**
 * Why a test whose Pods must run cannot, or `false`: a real cluster (TEST_KUBECONFIG) with no Ready
 * Node. The local API server always can (the simulated node registers 3 Ready Nodes). For
 * `describe(name, { skip: await podsCannotRun() }, …)`.
 */
export async function podsCannotRun(): Promise<string | false> {
  const path = process.env.TEST_KUBECONFIG;
  if (!path) return false;
  const kc = new PooledKubeConfig();
  kc.loadFromFile(path);
  const nodes = await kc.makeApiClient(CoreV1Api).listNode();
  const ready = nodes.items.some((n) =>
    n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  return ready ? false : 'the cluster of TEST_KUBECONFIG has no Ready Node: its Pods would never run';
}

/**
 * Starts the simulated node on the local API server (Deployment/ReplicaSet controllers, scheduler,
 * kubelet); on a real cluster, nothing (its own controllers run).
 * @returns `stop()` ends the simulation (a no-op on a real cluster)
 */
export async function startWorkloads(cluster: TestCluster): Promise<{ stop(): Promise<void> }> {
  if (!cluster.local) return { stop: async () => {} };
  return startSimulatedNode(cluster.kubeConfig, pino({ level: 'silent' }));
}
