/**
 * The soak's auditor: reads the cluster with its own @kubernetes/client-node clients and checks every
 * controller's level invariant, independently of Levelset's code. It imports neither the kit nor a
 * controller: what it knows of them is their public contract (the CRDs' groups, a copy's label and
 * annotation, a bundle's child named as the bundle, a tenant's quota named `tenant`), written here
 * again, so that a bug in a controller's own helpers cannot hide from it.
 *
 * One {@link audit} reads everything the invariants need (a few LISTs, cluster-wide) and returns the
 * violations, each keyed by the primary it belongs to (`<controller>:<namespace>/<name>`, a
 * cluster-scoped primary `<controller>:<name>`), so that the soak can tell when the primary a change
 * touched is at its level again.
 */
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  NetworkingV1Api,
  type V1ConfigMap,
  type V1Deployment,
  type V1Namespace,
  type V1OwnerReference,
  type V1Pod,
  type V1Secret,
} from '@kubernetes/client-node';

/** The secret replicator's copy marks (its documented contract, README "The controllers"). */
export const COPY_LABEL = 'levelset.dev/replica-of';
export const SOURCE_ANNOTATION = 'levelset.dev/source';
export const REPLICATE_TO_ANNOTATION = 'levelset.dev/replicate-to';

/** The custom resources the soak drives, as their CRDs name them. */
export const FOOS = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos', kind: 'Foo' };
export const ICECREAMS = {
  group: 'controller.nicoleh.io',
  version: 'v1alpha1',
  plural: 'icecreams',
  kind: 'Icecream',
};
export const CUSTOMCLUSTERS = {
  group: 'sde.dev',
  version: 'v1alpha1',
  plural: 'customclusters',
  kind: 'Customcluster',
};
export const BUNDLES = {
  group: 'examples.levelset.dev',
  version: 'v1alpha1',
  plural: 'configmapbundles',
  kind: 'ConfigMapBundle',
};
export const TENANTS = {
  group: 'platform.levelset.dev',
  version: 'v1alpha1',
  plural: 'tenants',
  kind: 'Tenant',
};

/** Where the soak's objects live: every name the soak makes starts with `soak-`. */
export interface SoakLayout {
  /** The secret replicator's source namespace (`LEVELSET_SOURCE_NAMESPACE`). */
  sourceNamespace: string;
  /** Target namespaces are those whose name starts with this (the sources' `replicate-to` regex). */
  targetPrefix: string;
  /** Namespace of the Foos, Icecreams and Customclusters. */
  appsNamespace: string;
  /** Namespace of the ConfigMapBundles (their sources are in {@link SoakLayout.configMapNamespace}). */
  bundleNamespace: string;
  configMapNamespace: string;
  /** Tenants' names and their namespaces start with this. */
  tenantPrefix: string;
}

export const LAYOUT: SoakLayout = {
  sourceNamespace: 'soak-src',
  targetPrefix: 'soak-t-',
  appsNamespace: 'soak-apps',
  bundleNamespace: 'soak-bundles',
  configMapNamespace: 'soak-cm',
  tenantPrefix: 'soak-ten-',
};

/** One invariant that does not hold: the primary it belongs to and what is wrong (no Secret data). */
export interface Violation {
  /** `<controller>:<namespace>/<name>` or `<controller>:<name>`. */
  key: string;
  detail: string;
}

/** One audit: when its reads started (ms since the epoch), how long it took, what it found. */
export interface AuditResult {
  startedAt: number;
  durationMs: number;
  violations: Violation[];
  /** Objects checked per controller. */
  checked: Record<string, number>;
}

type Custom = KubernetesObject & { spec?: Record<string, unknown> };

const live = (o: KubernetesObject) => !o.metadata?.deletionTimestamp;
const controllerOf = (o: KubernetesObject): V1OwnerReference | undefined =>
  o.metadata?.ownerReferences?.find((r) => r.controller);
const sameData = (a: Record<string, string> | undefined, b: Record<string, string> | undefined) => {
  const [x, y] = [a ?? {}, b ?? {}];
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((k) => x[k] === y[k]);
};

/**
 * The auditor over the cluster of `kubeConfig`.
 * @returns `audit()`, which throws when a read fails (the caller counts it and audits again)
 */
export function createAuditor(kubeConfig: KubeConfig, layout: SoakLayout = LAYOUT) {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const net = kubeConfig.makeApiClient(NetworkingV1Api);
  const listCustom = async (r: typeof FOOS, namespace?: string): Promise<Custom[]> =>
    (
      (namespace
        ? await custom.listNamespacedCustomObject({ ...r, namespace })
        : await custom.listClusterCustomObject(r)) as { items: Custom[] }
    ).items;

  async function audit(): Promise<AuditResult> {
    const startedAt = Date.now();
    const [namespaces, secrets, deployments, pods, configMaps, quotas, policies] = await Promise.all([
      core.listNamespace(),
      core.listSecretForAllNamespaces({ labelSelector: COPY_LABEL }),
      apps.listNamespacedDeployment({ namespace: layout.appsNamespace }),
      core.listNamespacedPod({ namespace: layout.appsNamespace }),
      core.listConfigMapForAllNamespaces(),
      core.listResourceQuotaForAllNamespaces(),
      net.listNetworkPolicyForAllNamespaces(),
    ]);
    const [sources, foos, icecreams, ccs, bundles, tenants] = await Promise.all([
      core.listNamespacedSecret({ namespace: layout.sourceNamespace }),
      listCustom(FOOS, layout.appsNamespace),
      listCustom(ICECREAMS, layout.appsNamespace),
      listCustom(CUSTOMCLUSTERS, layout.appsNamespace),
      listCustom(BUNDLES, layout.bundleNamespace),
      listCustom(TENANTS),
    ]);
    const violations: Violation[] = [];
    const v = (key: string, detail: string) => violations.push({ key, detail });
    const activeNs = new Map<string, V1Namespace>(
      namespaces.items.filter(live).map((n) => [n.metadata?.name ?? '', n]),
    );

    // secret-replicator: every source in every target namespace, equal; no copy elsewhere.
    const targets = [...activeNs.keys()].filter((n) => n.startsWith(layout.targetPrefix));
    const copies = new Map<string, V1Secret>();
    for (const c of secrets.items) copies.set(`${c.metadata?.namespace}/${c.metadata?.name}`, c);
    const liveSources = new Map(sources.items.filter(live).map((s) => [s.metadata?.name ?? '', s]));
    for (const [name, s] of liveSources) {
      const key = `secret-replicator:${layout.sourceNamespace}/${name}`;
      for (const ns of targets) {
        const c = copies.get(`${ns}/${name}`);
        if (!c) v(key, `no copy in ${ns}`);
        else if (c.type !== s.type || !sameData(c.data, s.data))
          v(key, `copy in ${ns} differs from its source`);
      }
    }
    for (const c of secrets.items) {
      const origin = c.metadata?.annotations?.[SOURCE_ANNOTATION] ?? '';
      if (!origin.startsWith(`${layout.sourceNamespace}/`) || !live(c)) continue;
      const name = origin.slice(layout.sourceNamespace.length + 1);
      const ns = c.metadata?.namespace ?? '';
      // A copy in a namespace being deleted goes with it (the namespace controller's work).
      if (!activeNs.has(ns)) continue;
      if (!liveSources.has(name)) v(`secret-replicator:${origin}`, `copy in ${ns} of a deleted source`);
      else if (!ns.startsWith(layout.targetPrefix))
        v(`secret-replicator:${origin}`, `copy in non-target ${ns}`);
    }

    // foo and icecream: the Deployment spec.deploymentName, controlled by it, at spec.replicas.
    const byName = new Map(deployments.items.map((d) => [d.metadata?.name ?? '', d]));
    const deploymentOwners = [
      { controller: 'foo', kind: FOOS.kind, objects: foos },
      { controller: 'icecream', kind: ICECREAMS.kind, objects: icecreams },
    ];
    for (const { controller, kind, objects } of deploymentOwners) {
      const uids = new Set(objects.map((o) => o.metadata?.uid));
      for (const o of objects.filter(live)) {
        const key = `${controller}:${o.metadata?.namespace}/${o.metadata?.name}`;
        const spec = o.spec as { deploymentName?: string; replicas?: number };
        const d: V1Deployment | undefined = byName.get(spec.deploymentName ?? '');
        const want = spec.replicas ?? 1;
        if (!d || !live(d)) v(key, `no Deployment ${spec.deploymentName}`);
        else if (controllerOf(d)?.uid !== o.metadata?.uid)
          v(key, `Deployment ${spec.deploymentName} not controlled by it`);
        else if ((d.spec?.replicas ?? 1) !== want)
          v(key, `Deployment replicas ${d.spec?.replicas} ≠ ${want}`);
      }
      // A Deployment whose controlling owner is gone is the garbage collector's to delete.
      for (const d of deployments.items.filter(live)) {
        const ref = controllerOf(d);
        if (ref?.kind === kind && !uids.has(ref.uid))
          v(`${controller}:${d.metadata?.namespace}/${ref.name}`, `orphan Deployment ${d.metadata?.name}`);
      }
    }

    // customcluster: spec.count live Pods controlled by it, each running spec.message.
    const podsOf = new Map<string, V1Pod[]>();
    for (const p of pods.items) {
      const ref = controllerOf(p);
      const phase = p.status?.phase;
      if (ref?.kind !== CUSTOMCLUSTERS.kind || !live(p) || phase === 'Failed' || phase === 'Succeeded')
        continue;
      podsOf.set(ref.uid, [...(podsOf.get(ref.uid) ?? []), p]);
    }
    const ccUids = new Set(ccs.map((c) => c.metadata?.uid));
    for (const cc of ccs.filter(live)) {
      const key = `customcluster:${cc.metadata?.namespace}/${cc.metadata?.name}`;
      const spec = cc.spec as { count: number; message: string };
      const mine = podsOf.get(cc.metadata?.uid ?? '') ?? [];
      const message = (p: V1Pod) => p.spec?.containers[0]?.env?.find((e) => e.name === 'MESSAGE')?.value;
      if (mine.length !== spec.count) v(key, `${mine.length} Pods, want ${spec.count}`);
      else if (mine.some((p) => message(p) !== spec.message)) v(key, 'a Pod runs a stale message');
    }
    for (const [uid, owned] of podsOf)
      if (!ccUids.has(uid))
        v(`customcluster:${layout.appsNamespace}/${controllerOf(owned[0] as V1Pod)?.name}`, 'orphan Pods');

    // configmap-bundle: a ConfigMap named as the bundle holding the merge of its sources' data.
    const cms = new Map<string, V1ConfigMap>(
      configMaps.items.map((c) => [`${c.metadata?.namespace}/${c.metadata?.name}`, c]),
    );
    for (const b of bundles.filter(live)) {
      const key = `configmap-bundle:${b.metadata?.namespace}/${b.metadata?.name}`;
      const spec = b.spec as { sources: { namespace: string; name: string }[] };
      const want: Record<string, string> = {};
      for (const s of spec.sources) Object.assign(want, cms.get(`${s.namespace}/${s.name}`)?.data);
      const child = cms.get(`${b.metadata?.namespace}/${b.metadata?.name}`);
      if (!child) v(key, 'no bundle ConfigMap');
      else if (controllerOf(child)?.uid !== b.metadata?.uid) v(key, 'bundle ConfigMap not controlled by it');
      else if (!sameData(child.data, want)) v(key, 'bundle ConfigMap differs from the merge of its sources');
    }

    // tenant: per listed namespace, the Namespace labelled with it, quota `tenant`, the default-deny policy.
    const quotaAt = new Map(quotas.items.map((q) => [`${q.metadata?.namespace}/${q.metadata?.name}`, q]));
    const policyAt = new Set(policies.items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`));
    for (const t of tenants.filter(live)) {
      const name = t.metadata?.name ?? '';
      if (!name.startsWith(layout.tenantPrefix)) continue;
      const key = `tenant:${name}`;
      const spec = t.spec as { namespaces: string[]; quota: { cpu: string; memory: string; pods: number } };
      for (const ns of spec.namespaces) {
        const n = activeNs.get(ns);
        if (!n) v(key, `no Namespace ${ns}`);
        else if (n.metadata?.labels?.tenant !== name) v(key, `Namespace ${ns} not labelled tenant=${name}`);
        const hard = quotaAt.get(`${ns}/tenant`)?.spec?.hard;
        if (!hard) v(key, `no ResourceQuota in ${ns}`);
        else if (
          hard.cpu !== spec.quota.cpu ||
          hard.memory !== spec.quota.memory ||
          hard.pods !== String(spec.quota.pods)
        )
          v(key, `ResourceQuota in ${ns} differs from the tenant's quota`);
        if (!policyAt.has(`${ns}/default-deny-ingress`)) v(key, `no NetworkPolicy in ${ns}`);
      }
    }
    return {
      startedAt,
      durationMs: Date.now() - startedAt,
      violations,
      checked: {
        'secret-replicator': liveSources.size,
        foo: foos.length,
        icecream: icecreams.length,
        customcluster: ccs.length,
        'configmap-bundle': bundles.length,
        tenant: tenants.length,
      },
    };
  }
  return { audit };
}
