/**
 * Least-privileged identities for end-to-end tests: the relay's and the functions' ClusterRoles as
 * shipped in the generated `deploy/rbac.yaml`, bound to two fresh ServiceAccounts whose tokens come
 * from the TokenRequest API — on the local API server and on a real cluster (`TEST_KUBECONFIG`)
 * alike. Names carry a random suffix, so runs on a shared cluster do not collide.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoreV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1ClusterRole,
} from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { PooledKubeConfig } from '../../core/pooled-kubeconfig.ts';
import { uniqueSuffix } from '../../functions/kit/testing.ts';
import { repoRoot } from '../../local/service.ts';

/** Namespace of the test ServiceAccounts: excluded from replication by default, present everywhere. */
const SA_NAMESPACE = 'kube-system';

export interface Identity {
  /** The ServiceAccount's user name, `system:serviceaccount:<ns>:<name>`. */
  user: string;
  kubeConfig: KubeConfig;
  /** A kubeconfig file for child processes. */
  kubeconfigPath: string;
}

export interface Identities {
  relay: Identity;
  functions: Identity;
  /** The in-process mode's identity: the union of both (`deploy/in-process/rbac.yaml`). */
  inProcess: Identity;
  /** Deletes the bindings, roles, ServiceAccounts and kubeconfig files. */
  remove(): Promise<void>;
}

/**
 * The ClusterRoles of the generated RBAC manifests, by name (`levelset-relay`, `levelset-functions`
 * from `deploy/rbac.yaml`; `levelset-in-process` from `deploy/in-process/rbac.yaml`).
 */
export function generatedClusterRoles(): Map<string, V1ClusterRole> {
  const roles = new Map<string, V1ClusterRole>();
  for (const file of [join('deploy', 'rbac.yaml'), join('deploy', 'in-process', 'rbac.yaml')]) {
    for (const doc of parseAllDocuments(readFileSync(join(repoRoot, file), 'utf8'))) {
      const obj = doc.toJS() as V1ClusterRole;
      if (obj?.kind === 'ClusterRole' && obj.metadata?.name) roles.set(obj.metadata.name, obj);
    }
  }
  return roles;
}

/**
 * Creates the relay's and the functions' identities with `admin` (a cluster-admin KubeConfig).
 * @throws {Error} when the generated manifest lacks a role, or the cluster refuses a step.
 */
export async function createLeastPrivilegedIdentities(admin: KubeConfig): Promise<Identities> {
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  const core = admin.makeApiClient(CoreV1Api);
  const roles = generatedClusterRoles();
  const suffix = uniqueSuffix();
  const dir = mkdtempSync(join(tmpdir(), 'levelset-identities-'));
  const made: (() => Promise<unknown>)[] = [];
  const remove = async () => {
    for (const undo of made.reverse()) await undo().catch(() => {});
    made.length = 0;
    rmSync(dir, { recursive: true, force: true });
  };
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('the admin KubeConfig has no current cluster');

  const identity = async (component: 'relay' | 'functions' | 'in-process'): Promise<Identity> => {
    const role = roles.get(`levelset-${component}`);
    if (!role) throw new Error(`the generated RBAC has no ClusterRole levelset-${component}`);
    const name = `levelset-${component}-e2e-${suffix}`;
    await rbac.createClusterRole({ body: { ...role, metadata: { ...role.metadata, name } } });
    made.push(() => rbac.deleteClusterRole({ name }));
    await core.createNamespacedServiceAccount({ namespace: SA_NAMESPACE, body: { metadata: { name } } });
    made.push(() => core.deleteNamespacedServiceAccount({ namespace: SA_NAMESPACE, name }));
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'ServiceAccount', name, namespace: SA_NAMESPACE }],
      },
    });
    made.push(() => rbac.deleteClusterRoleBinding({ name }));
    const request = await core.createNamespacedServiceAccountToken({
      namespace: SA_NAMESPACE,
      name,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const token = request.status?.token;
    if (!token) throw new Error(`TokenRequest for ${name} returned no token`);
    const kubeConfig = new PooledKubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [cluster],
      users: [{ name, token }],
      contexts: [{ name, cluster: cluster.name, user: name }],
      currentContext: name,
    });
    const kubeconfigPath = join(dir, `${component}.kubeconfig`);
    writeFileSync(kubeconfigPath, kubeConfig.exportConfig(), { mode: 0o600 });
    return { user: `system:serviceaccount:${SA_NAMESPACE}:${name}`, kubeConfig, kubeconfigPath };
  };

  try {
    const [relay, functions, inProcess] = await Promise.allSettled([
      identity('relay'),
      identity('functions'),
      identity('in-process'),
    ]).then((all) =>
      all.map((r) => {
        if (r.status === 'rejected') throw r.reason;
        return r.value;
      }),
    );
    if (!relay || !functions || !inProcess) throw new Error('an identity is missing');
    return { relay, functions, inProcess, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}
