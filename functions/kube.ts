/**
 * The Kubernetes client configuration every Levelset process uses.
 *
 * Order: `KUBECONFIG` (or `~/.kube/config`) when present, else the in-cluster ServiceAccount
 * (client-go's `rest.InClusterConfig`). The Cloud Run path (`K_SERVICE` set: GKE DNS endpoint and a
 * Google access token) lives beside this function.
 */
import { KubeConfig } from '@kubernetes/client-node';

/**
 * Loads the KubeConfig for this process.
 * @param kubeconfigPath a kubeconfig file; default `KUBECONFIG`, then `~/.kube/config`, then in-cluster.
 * @throws when no configuration can be found.
 */
export function loadKubeConfig(kubeconfigPath?: string): KubeConfig {
  const kc = new KubeConfig();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromDefault();
  if (!kc.getCurrentCluster()) throw new Error('no Kubernetes cluster configured: set KUBECONFIG');
  return kc;
}
