/**
 * The cluster registry: which clusters one deployment of the functions serves, and how to reach
 * each (docs/architecture.md "Clusters"). A key message names its cluster (core/message.ts);
 * the reconcile and the resync take that cluster's KubeConfig from here.
 *
 * Configuration: `LEVELSET_CLUSTERS`, a JSON array validated with zod, each entry one of
 * - `{"id": "gke-eu", "endpoint": "gke-0123.europe-west1.gke.goog", "caData"?: "<base64 PEM>"}`:
 *   a GKE cluster reached as the single cluster is (core/gke-auth.ts): its DNS-based endpoint
 *   with the runtime service account's Google access token (one token source for every cluster);
 * - `{"id": "b", "kubeconfig"?: "/path/to/kubeconfig", "context"?: "kind-b"}`: a kubeconfig file
 *   (default `KUBECONFIG`, then `~/.kube/config`) and one of its contexts (default its current one),
 *   for local runs and tests.
 * Without `LEVELSET_CLUSTERS` the registry holds one cluster, `default`, loaded as before clusters
 * existed (core/kube.ts: `KUBERNETES_ENDPOINT` on Cloud Run, else the kubeconfig).
 *
 * Each cluster's KubeConfig is made at its first use and kept: one {@link PooledKubeConfig}, hence
 * one connection pool, per cluster.
 */
import { delimiter } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import * as z from 'zod';
import { DEFAULT_CLUSTER } from '../../core/contract/key.ts';
import { clusterId } from '../../core/contract/names.ts';
import {
  type AccessTokenSource,
  gkeEnvSchema,
  gkeKubeConfig,
  googleAccessTokens,
} from '../../core/gke-auth.ts';
import { loadKubeConfig } from '../../core/kube.ts';
import { PooledKubeConfig } from '../../core/pooled-kubeconfig.ts';
import { readRequestBudget } from '../../core/request-budget.ts';

/** A GKE cluster: its control-plane endpoint (https URL or bare host) and, for an IP endpoint, its CA. */
const gkeCluster = z.strictObject({
  id: clusterId,
  endpoint: gkeEnvSchema.shape.KUBERNETES_ENDPOINT,
  caData: gkeEnvSchema.shape.KUBERNETES_CA_DATA,
});

/** A cluster of a kubeconfig file: the file (default `KUBECONFIG`) and a context (default the current one). */
const kubeconfigCluster = z.strictObject({
  id: clusterId,
  kubeconfig: z.string().min(1).optional(),
  context: z.string().min(1).optional(),
});

/** `LEVELSET_CLUSTERS`: at least one cluster, ids unique. */
export const clustersSchema = z
  .array(z.union([gkeCluster, kubeconfigCluster]))
  .min(1, 'must list at least one cluster')
  .superRefine((clusters, ctx) => {
    const seen = new Set<string>();
    for (const [i, c] of clusters.entries()) {
      if (seen.has(c.id))
        ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate id "${c.id}"` });
      seen.add(c.id);
    }
  });
export type ClusterConfig = z.infer<typeof clustersSchema>[number];

/** Invalid `LEVELSET_CLUSTERS`; the message names every bad entry. */
export class ClustersConfigError extends Error {
  override readonly name = 'ClustersConfigError';
}

/**
 * Reads `LEVELSET_CLUSTERS` from `env`.
 * @returns the clusters, or `undefined` when the variable is unset or empty (one `default` cluster).
 * @throws {ClustersConfigError} when it is not JSON or not a valid cluster list.
 */
export function readClustersConfig(env: NodeJS.ProcessEnv = process.env): ClusterConfig[] | undefined {
  const text = env.LEVELSET_CLUSTERS?.trim();
  if (!text) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ClustersConfigError('invalid LEVELSET_CLUSTERS: not JSON');
  }
  const parsed = clustersSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(list)'}: ${i.message}`);
    throw new ClustersConfigError(`invalid LEVELSET_CLUSTERS: ${issues.join('; ')}`);
  }
  return parsed.data;
}

/** The clusters a deployment serves, and each one's KubeConfig. */
export interface ClusterRegistry {
  /** Every cluster id, in configuration order. */
  readonly ids: readonly string[];
  /**
   * The KubeConfig of cluster `id`, made at the first call and then reused; `undefined` when the
   * registry has no such cluster.
   * @throws {Error} when the cluster's configuration cannot be loaded (a missing kubeconfig file or context).
   */
  kubeConfig(id: string): KubeConfig | undefined;
}

function loadClusterKubeConfig(
  c: ClusterConfig,
  env: NodeJS.ProcessEnv,
  tokens: () => AccessTokenSource,
): KubeConfig {
  // This instance's share of the cluster's request budget, when one is set (core/request-budget.ts).
  const limits = readRequestBudget(env)?.perInstance;
  if ('endpoint' in c)
    return gkeKubeConfig(c.caData ? { server: c.endpoint, caData: c.caData } : { server: c.endpoint }, {
      tokens: tokens(),
      ...(limits ? { limits } : {}),
    });
  const kc = new PooledKubeConfig(limits);
  const path = c.kubeconfig ?? env.KUBECONFIG;
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  if (c.context) {
    if (!kc.getContextObject(c.context))
      throw new Error(`cluster "${c.id}": no context "${c.context}" in ${path ?? '~/.kube/config'}`);
    kc.setCurrentContext(c.context);
  }
  if (!kc.getCurrentCluster()) throw new Error(`cluster "${c.id}": no Kubernetes cluster configured`);
  return kc;
}

/**
 * The registry `env` describes ({@link readClustersConfig}): the clusters of `LEVELSET_CLUSTERS`, or
 * the one `default` cluster of {@link loadKubeConfig}.
 * @param options.tokens Google access tokens of the GKE clusters; default Application Default Credentials (one source shared by every cluster).
 * @throws {ClustersConfigError} on an invalid `LEVELSET_CLUSTERS`.
 */
export function createClusterRegistry(
  env: NodeJS.ProcessEnv = process.env,
  options: { tokens?: AccessTokenSource } = {},
): ClusterRegistry {
  const configs = readClustersConfig(env);
  const made = new Map<string, KubeConfig>();
  if (!configs) {
    return {
      ids: [DEFAULT_CLUSTER],
      kubeConfig(id) {
        if (id !== DEFAULT_CLUSTER) return undefined;
        let kc = made.get(id);
        if (!kc) {
          // `env`'s KUBECONFIG (one file); a list of files (`a:b`) is client-node's loadFromDefault's.
          const single = env.KUBECONFIG && !env.KUBECONFIG.includes(delimiter) ? env.KUBECONFIG : undefined;
          kc = loadKubeConfig(env.K_SERVICE ? undefined : single, env);
          made.set(id, kc);
        }
        return kc;
      },
    };
  }
  const byId = new Map(configs.map((c) => [c.id, c]));
  let tokens: AccessTokenSource | undefined;
  const sharedTokens = () => {
    tokens ??= options.tokens ?? googleAccessTokens();
    return tokens;
  };
  return {
    ids: configs.map((c) => c.id),
    kubeConfig(id) {
      const config = byId.get(id);
      if (!config) return undefined;
      let kc = made.get(id);
      if (!kc) {
        kc = loadClusterKubeConfig(config, env, sharedTokens);
        made.set(id, kc);
      }
      return kc;
    },
  };
}
