/**
 * The Kubernetes client configuration every Levelset process uses.
 *
 * Order: on Cloud Run (`K_SERVICE` set, no explicit path) the GKE endpoint in `KUBERNETES_ENDPOINT`
 * with the runtime service account's Google access token (core/gke-auth.ts); otherwise
 * `KUBECONFIG` (or `~/.kube/config`) when present, else the in-cluster ServiceAccount (client-go's
 * `rest.InClusterConfig`).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { gkeKubeConfig, readGkeConnection } from './gke-auth.ts';
import { PooledKubeConfig } from './pooled-kubeconfig.ts';
import { readRequestBudget } from './request-budget.ts';

/**
 * Loads the KubeConfig for this process.
 * @param kubeconfigPath a kubeconfig file; default: Cloud Run path when `K_SERVICE` is set, else
 *   `KUBECONFIG`, then `~/.kube/config`, then in-cluster.
 * @param env the environment to read (`K_SERVICE`, `KUBERNETES_ENDPOINT`, `KUBERNETES_CA_DATA`,
 *   `LEVELSET_REQUEST_BUDGET` and `LEVELSET_MAX_INSTANCES`: the client-side limit, core/request-budget.ts).
 * @throws when no configuration can be found, when the request budget is invalid, or on Cloud Run when `KUBERNETES_ENDPOINT` is missing or invalid.
 */
export function loadKubeConfig(kubeconfigPath?: string, env: NodeJS.ProcessEnv = process.env): KubeConfig {
  // The functions' share of the cluster's request budget, when one is set (core/request-budget.ts).
  const limits = readRequestBudget(env)?.perInstance;
  if (!kubeconfigPath && env.K_SERVICE)
    return gkeKubeConfig(readGkeConnection(env), limits ? { limits } : {});
  const kc = new PooledKubeConfig(limits);
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromDefault();
  if (!kc.getCurrentCluster()) throw new Error('no Kubernetes cluster configured: set KUBECONFIG');
  kc.inlineTlsFiles();
  return kc;
}
