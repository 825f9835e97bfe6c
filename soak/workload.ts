/**
 * The soak's workload: seeded random changes to the primaries of every driven controller and to
 * their children (drift: a child edited or deleted by hand), namespace churn, large objects near
 * the 1 MiB object size limit, and bursts. Each change is written through the API (with a few
 * retries: the soak's own writes meet the injected 429s and 500s too) and entered in the
 * {@link Ledger} with the primaries whose invariants it touches (soak/auditor.ts keys).
 */
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import {
  BUNDLES,
  CUSTOMCLUSTERS,
  FOOS,
  ICECREAMS,
  LAYOUT,
  REPLICATE_TO_ANNOTATION,
  type SoakLayout,
  TENANTS,
} from './auditor.ts';
import type { Random } from './random.ts';

/** One change the soak made, and when the auditor saw its primaries at their level again. */
export interface Change {
  id: number;
  /** What was done, e.g. `secret.update`, `drift.deployment-scaled`, `namespace.create`. */
  kind: string;
  /** When the write returned, ms since the epoch. */
  at: number;
  /** The primaries (auditor keys) whose invariants must hold again. */
  keys: string[];
  /** The fault kinds active at any time between the change and its convergence. */
  faults: Set<string>;
  /** When the auditor first found every key at its level (the start of that audit's reads). */
  convergedAt?: number;
  /** A resync completed between the change and its convergence, the change pending ≥ the live grace. */
  atResync?: boolean;
  /** Part of a burst. */
  burst?: boolean;
}

/** The changes made, in order. */
export class Ledger {
  readonly changes: Change[] = [];
  /** Changes not converged yet. */
  readonly pending = new Set<Change>();
  /** The fault kinds active now (the fault schedule adds and removes them). */
  readonly activeFaults = new Set<string>();

  record(kind: string, keys: string[], burst = false): void {
    const change: Change = {
      id: this.changes.length,
      kind,
      at: Date.now(),
      keys,
      faults: new Set(this.activeFaults),
      ...(burst ? { burst } : {}),
    };
    this.changes.push(change);
    if (keys.length === 0) change.convergedAt = change.at;
    else this.pending.add(change);
  }

  /** A fault kind starts: every pending change lived through it. */
  faultStarted(kind: string): void {
    this.activeFaults.add(kind);
    for (const c of this.pending) c.faults.add(kind);
  }

  faultEnded(kind: string): void {
    this.activeFaults.delete(kind);
  }
}

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const b64 = (s: string) => Buffer.from(s).toString('base64');
/** Data near the 1 MiB object size limit: 900 KiB in one value (base64 in a Secret: ~1.2 MB of JSON). */
const LARGE_BYTES = 900 * 1024;

/** Pool sizes: names are reused, so that the cluster stays bounded over hours. */
const POOL = {
  sources: 20,
  churn: 6,
  foos: 12,
  icecreams: 6,
  ccs: 5,
  configMaps: 12,
  bundles: 8,
  tenants: 4,
};
const STABLE_TARGETS = 4;

export interface WorkloadOptions {
  kubeConfig: KubeConfig;
  random: Random;
  ledger: Ledger;
  layout?: SoakLayout;
  /** Called when a write fails every retry (the change is not entered). */
  onFailedWrite?: (kind: string, err: unknown) => void;
}

/** The workload over the cluster of `kubeConfig`: `setup()` once, then `step()` and `burst(n)`. */
export function createWorkload(options: WorkloadOptions) {
  const { random, ledger } = options;
  const layout = options.layout ?? LAYOUT;
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const apps = options.kubeConfig.makeApiClient(AppsV1Api);
  const custom = options.kubeConfig.makeApiClient(CustomObjectsApi);
  let version = 0;

  // The workload's own model of what exists (it alone writes these objects).
  const sources = new Set<string>();
  const churn = new Set<string>();
  const deploymentOwners = { foo: new Map<string, number>(), icecream: new Map<string, number>() };
  const ccs = new Map<string, { count: number; message: string }>();
  const bundles = new Map<string, string[]>();
  const tenants = new Map<string, string[]>();

  const sourceKey = (name: string) => `secret-replicator:${layout.sourceNamespace}/${name}`;
  const allSourceKeys = () => [...sources].map(sourceKey);
  const ns = layout.appsNamespace;

  /** Writes with up to 4 attempts, 0.5 s apart; enters the change only when a write succeeded. */
  async function change(kind: string, keys: () => string[], write: () => Promise<unknown>, burst = false) {
    for (let attempt = 1; ; attempt++) {
      try {
        await write();
        ledger.record(kind, keys(), burst);
        return;
      } catch (err) {
        const code = (err as { code?: number }).code;
        // 404 / 409: the object moved on (a re-create racing its garbage collection): no change made.
        if (code === 404 || code === 409 || attempt >= 4) {
          options.onFailedWrite?.(kind, err);
          return;
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  const sourceBody = (name: string, large = false) => ({
    metadata: { name, annotations: { [REPLICATE_TO_ANNOTATION]: `${layout.targetPrefix}.*` } },
    type: 'Opaque',
    data: { v: b64(`${name}-${++version}`), ...(large ? { big: b64('x'.repeat(LARGE_BYTES)) } : {}) },
  });
  const createSource = (name: string, large = false) =>
    change(
      'secret.create',
      () => [sourceKey(name)],
      async () => {
        await core.createNamespacedSecret({
          namespace: layout.sourceNamespace,
          body: sourceBody(name, large),
        });
        sources.add(name);
      },
    );
  const updateSource = (name: string, burst = false) =>
    change(
      'secret.update',
      () => [sourceKey(name)],
      () =>
        core.patchNamespacedSecret(
          { namespace: layout.sourceNamespace, name, body: { data: { v: b64(`${name}-${++version}`) } } },
          merge,
        ),
      burst,
    );
  const deploymentOwnerBody = (kind: 'foo' | 'icecream', name: string, replicas: number) => {
    const r = kind === 'foo' ? FOOS : ICECREAMS;
    return {
      apiVersion: `${r.group}/${r.version}`,
      kind: r.kind,
      metadata: { name },
      spec: { deploymentName: name, replicas },
    };
  };
  const ccBody = (name: string, spec: { count: number; message: string }) => ({
    apiVersion: `${CUSTOMCLUSTERS.group}/${CUSTOMCLUSTERS.version}`,
    kind: CUSTOMCLUSTERS.kind,
    metadata: { name },
    spec,
  });
  const cmName = (i: number) => `cm-${i}`;
  const bundleBody = (name: string, list: string[]) => ({
    apiVersion: `${BUNDLES.group}/${BUNDLES.version}`,
    kind: BUNDLES.kind,
    metadata: { name },
    spec: { sources: list.map((n) => ({ namespace: layout.configMapNamespace, name: n })) },
  });
  const tenantNamespaces = (name: string) => [`${name}-a`, `${name}-b`].slice(0, random.int(1, 2));
  const tenantBody = (name: string, namespaces: string[], pods: number) => ({
    apiVersion: `${TENANTS.group}/${TENANTS.version}`,
    kind: TENANTS.kind,
    metadata: { name },
    spec: { namespaces, quota: { cpu: '2', memory: '1Gi', pods } },
  });
  const bundlesListing = (cm: string) =>
    [...bundles]
      .filter(([, list]) => list.includes(cm))
      .map(([b]) => `configmap-bundle:${layout.bundleNamespace}/${b}`);
  const free = (pool: number, prefix: string, used: { has(k: string): boolean }) =>
    Array.from({ length: pool }, (_, i) => `${prefix}${i}`).filter((n) => !used.has(n));

  /** One random change of each kind's weight. */
  const operations: Record<string, () => Promise<void>> = {
    async secret() {
      const absent = free(POOL.sources, 's-', sources);
      const op = random.weighted({
        create: absent.length ? 2 : 0,
        update: sources.size ? 6 : 0,
        delete: sources.size > 4 ? 1 : 0,
      });
      if (op === 'create') return createSource(random.pick(absent));
      const name = random.pick([...sources].filter((s) => !s.startsWith('big-')));
      if (op === 'update') return updateSource(name);
      return change(
        'secret.delete',
        () => [sourceKey(name)],
        async () => {
          await core.deleteNamespacedSecret({ namespace: layout.sourceNamespace, name });
          sources.delete(name);
        },
      );
    },
    async large() {
      const name = random.pick(['big-0', 'big-1']);
      return change(
        'large.update',
        () => [sourceKey(name)],
        () =>
          core.patchNamespacedSecret(
            { namespace: layout.sourceNamespace, name, body: { data: sourceBody(name, true).data } },
            merge,
          ),
      );
    },
    async copyDrift() {
      if (sources.size === 0) return;
      const name = random.pick([...sources]);
      const target = `${layout.targetPrefix}${random.int(0, STABLE_TARGETS - 1)}`;
      if (random.chance(0.5))
        return change(
          'drift.copy-edited',
          () => [sourceKey(name)],
          () =>
            core.patchNamespacedSecret(
              { namespace: target, name, body: { data: { v: b64('edited by hand') } } },
              merge,
            ),
        );
      return change(
        'drift.copy-deleted',
        () => [sourceKey(name)],
        () => core.deleteNamespacedSecret({ namespace: target, name }),
      );
    },
    async namespaceChurn() {
      const absent = free(POOL.churn, `${layout.targetPrefix}c`, churn);
      if (absent.length && (churn.size === 0 || random.chance(0.5))) {
        const name = random.pick(absent);
        return change('namespace.create', allSourceKeys, async () => {
          await core.createNamespace({ body: { metadata: { name } } });
          churn.add(name);
        });
      }
      const name = random.pick([...churn]);
      return change('namespace.delete', allSourceKeys, async () => {
        await core.deleteNamespace({ name });
        churn.delete(name);
      });
    },
    foo: () => deploymentOwner('foo'),
    icecream: () => deploymentOwner('icecream'),
    async deploymentDrift() {
      const kind = random.pick(['foo', 'icecream'] as const);
      const owners = deploymentOwners[kind];
      if (owners.size === 0) return;
      const name = random.pick([...owners.keys()]);
      const key = `${kind}:${ns}/${name}`;
      if (random.chance(0.6))
        return change(
          'drift.deployment-scaled',
          () => [key],
          () =>
            apps.patchNamespacedDeployment(
              { namespace: ns, name, body: { spec: { replicas: random.int(4, 6) } } },
              merge,
            ),
        );
      return change(
        'drift.deployment-deleted',
        () => [key],
        () => apps.deleteNamespacedDeployment({ namespace: ns, name }),
      );
    },
    async customcluster() {
      const absent = free(POOL.ccs, 'cc-', ccs);
      const op = random.weighted({
        create: absent.length ? 2 : 0,
        update: ccs.size ? 4 : 0,
        delete: ccs.size > 2 ? 1 : 0,
        drift: ccs.size ? 2 : 0,
      });
      const r = { ...CUSTOMCLUSTERS, namespace: ns };
      if (op === 'create') {
        const name = random.pick(absent);
        const spec = { count: random.int(0, 3), message: `hello-${++version}` };
        return change(
          'customcluster.create',
          () => [`customcluster:${ns}/${name}`],
          async () => {
            await custom.createNamespacedCustomObject({ ...r, body: ccBody(name, spec) });
            ccs.set(name, spec);
          },
        );
      }
      const name = random.pick([...ccs.keys()]);
      const key = `customcluster:${ns}/${name}`;
      if (op === 'update') {
        const spec = random.chance(0.5)
          ? { count: random.int(0, 3), message: ccs.get(name)?.message ?? '' }
          : { count: ccs.get(name)?.count ?? 1, message: `hello-${++version}` };
        return change(
          'customcluster.update',
          () => [key],
          async () => {
            await custom.patchNamespacedCustomObject({ ...r, name, body: { spec } }, merge);
            ccs.set(name, spec);
          },
        );
      }
      if (op === 'delete')
        return change(
          'customcluster.delete',
          () => [key],
          async () => {
            await custom.deleteNamespacedCustomObject({ ...r, name });
            ccs.delete(name);
          },
        );
      const pods = (await core.listNamespacedPod({ namespace: ns })).items.filter((p) =>
        p.metadata?.ownerReferences?.some(
          (o) => o.controller && o.kind === CUSTOMCLUSTERS.kind && o.name === name,
        ),
      );
      if (pods.length === 0) return;
      const pod = random.pick(pods).metadata?.name ?? '';
      return change(
        'drift.pod-deleted',
        () => [key],
        () => core.deleteNamespacedPod({ namespace: ns, name: pod }),
      );
    },
    async configMap() {
      const i = random.int(0, POOL.configMaps - 1);
      const name = cmName(i);
      return change(
        'configmap.update',
        () => bundlesListing(name),
        () =>
          core.patchNamespacedConfigMap(
            {
              namespace: layout.configMapNamespace,
              name,
              body: { data: { [`k${random.int(0, 3)}`]: `v${++version}` } },
            },
            merge,
          ),
      );
    },
    async bundle() {
      const absent = free(POOL.bundles, 'b-', bundles);
      const op = random.weighted({
        create: absent.length ? 2 : 0,
        update: bundles.size ? 3 : 0,
        delete: bundles.size > 3 ? 1 : 0,
        drift: bundles.size ? 2 : 0,
      });
      const r = { ...BUNDLES, namespace: layout.bundleNamespace };
      const pickSources = () => {
        const list = [
          ...new Set(
            Array.from({ length: random.int(1, 3) }, () => cmName(random.int(0, POOL.configMaps - 1))),
          ),
        ];
        // Now and then a source that does not exist (the bundle is Ready=False/SourcesMissing).
        return random.chance(0.1) ? [...list, 'cm-late'] : list;
      };
      if (op === 'create') {
        const name = random.pick(absent);
        const list = pickSources();
        return change(
          'bundle.create',
          () => [`configmap-bundle:${layout.bundleNamespace}/${name}`],
          async () => {
            await custom.createNamespacedCustomObject({ ...r, body: bundleBody(name, list) });
            bundles.set(name, list);
          },
        );
      }
      const name = random.pick([...bundles.keys()]);
      const key = `configmap-bundle:${layout.bundleNamespace}/${name}`;
      if (op === 'update') {
        const list = pickSources();
        return change(
          'bundle.update',
          () => [key],
          async () => {
            await custom.patchNamespacedCustomObject({ ...r, name, body: bundleBody(name, list) }, merge);
            bundles.set(name, list);
          },
        );
      }
      if (op === 'delete')
        return change(
          'bundle.delete',
          () => [key],
          async () => {
            await custom.deleteNamespacedCustomObject({ ...r, name });
            bundles.delete(name);
          },
        );
      // A value the controller sets, edited: a key added by hand would be left alone by design
      // (docs/writing-a-controller.md, "the no-op rule": a field someone else set is theirs).
      const child = await core
        .readNamespacedConfigMap({ namespace: layout.bundleNamespace, name })
        .catch(() => undefined);
      const keys = Object.keys(child?.data ?? {});
      if (keys.length === 0) return;
      const edited = random.pick(keys);
      return change(
        'drift.bundle-edited',
        () => [key],
        () =>
          core.patchNamespacedConfigMap(
            { namespace: layout.bundleNamespace, name, body: { data: { [edited]: 'edited by hand' } } },
            merge,
          ),
      );
    },
    async tenant() {
      const absent = free(POOL.tenants, layout.tenantPrefix, tenants);
      const op = random.weighted({
        create: absent.length ? 2 : 0,
        update: tenants.size ? 3 : 0,
        delete: tenants.size > 1 ? 1 : 0,
        drift: tenants.size ? 2 : 0,
      });
      if (op === 'create') {
        const name = random.pick(absent);
        const list = tenantNamespaces(name);
        return change(
          'tenant.create',
          () => [`tenant:${name}`],
          async () => {
            await custom.createClusterCustomObject({
              ...TENANTS,
              body: tenantBody(name, list, random.int(5, 20)),
            });
            tenants.set(name, list);
          },
        );
      }
      const name = random.pick([...tenants.keys()]);
      const key = `tenant:${name}`;
      if (op === 'update') {
        const list = tenantNamespaces(name);
        return change(
          'tenant.update',
          () => [key],
          async () => {
            await custom.patchClusterCustomObject(
              { ...TENANTS, name, body: tenantBody(name, list, random.int(5, 20)) },
              merge,
            );
            tenants.set(name, list);
          },
        );
      }
      if (op === 'delete')
        return change(
          'tenant.delete',
          () => [key],
          async () => {
            await custom.deleteClusterCustomObject({ ...TENANTS, name });
            tenants.delete(name);
          },
        );
      const namespace = random.pick(tenants.get(name) ?? []);
      return change(
        'drift.quota-deleted',
        () => [key],
        () => core.deleteNamespacedResourceQuota({ namespace, name: 'tenant' }),
      );
    },
  };

  async function deploymentOwner(kind: 'foo' | 'icecream') {
    const owners = deploymentOwners[kind];
    const r = { ...(kind === 'foo' ? FOOS : ICECREAMS), namespace: ns };
    const absent = free(kind === 'foo' ? POOL.foos : POOL.icecreams, `${kind}-`, owners);
    const op = random.weighted({
      create: absent.length ? 2 : 0,
      update: owners.size ? 4 : 0,
      delete: owners.size > 2 ? 1 : 0,
    });
    if (op === 'create') {
      const name = random.pick(absent);
      const replicas = random.int(0, 3);
      return change(
        `${kind}.create`,
        () => [`${kind}:${ns}/${name}`],
        async () => {
          await custom.createNamespacedCustomObject({
            ...r,
            body: deploymentOwnerBody(kind, name, replicas),
          });
          owners.set(name, replicas);
        },
      );
    }
    const name = random.pick([...owners.keys()]);
    const key = `${kind}:${ns}/${name}`;
    if (op === 'update') {
      const replicas = random.int(0, 3);
      return change(
        `${kind}.update`,
        () => [key],
        async () => {
          await custom.patchNamespacedCustomObject({ ...r, name, body: { spec: { replicas } } }, merge);
          owners.set(name, replicas);
        },
      );
    }
    return change(
      `${kind}.delete`,
      () => [key],
      async () => {
        await custom.deleteNamespacedCustomObject({ ...r, name });
        owners.delete(name);
      },
    );
  }

  /** How often each operation runs, relative. */
  const WEIGHTS = {
    secret: 8,
    large: 0.3,
    copyDrift: 2,
    namespaceChurn: 1,
    foo: 4,
    icecream: 2,
    deploymentDrift: 2,
    customcluster: 2,
    configMap: 4,
    bundle: 2,
    tenant: 1.5,
  } satisfies Record<keyof typeof operations, number>;

  return {
    /**
     * Creates the namespaces, the ConfigMap sources and the two large Secrets, before the stack
     * starts (its initial LISTs find them). Not entered in the ledger.
     * @throws when a create fails, or a namespace of the soak exists already (a previous run's)
     */
    async setup(): Promise<void> {
      const namespaces = [
        layout.sourceNamespace,
        layout.appsNamespace,
        layout.bundleNamespace,
        layout.configMapNamespace,
        ...Array.from({ length: STABLE_TARGETS }, (_, i) => `${layout.targetPrefix}${i}`),
      ];
      for (const name of namespaces)
        await core.createNamespace({ body: { metadata: { name } } }).catch((err: { code?: number }) => {
          if (err.code !== 409) throw err;
          throw new Error(
            `namespace ${name} exists (a previous soak's, still terminating?): the soak starts from a cluster without its soak-* namespaces and Tenants`,
          );
        });
      for (let i = 0; i < POOL.configMaps; i++)
        await core.createNamespacedConfigMap({
          namespace: layout.configMapNamespace,
          body: { metadata: { name: cmName(i) }, data: { [`k${i % 4}`]: `v${i}` } },
        });
      // A large ConfigMap, listed alone by bundle `b-big` (a merge of two would pass the limit).
      await core.createNamespacedConfigMap({
        namespace: layout.configMapNamespace,
        body: { metadata: { name: 'cm-big' }, data: { big: 'y'.repeat(LARGE_BYTES) } },
      });
      for (const name of ['big-0', 'big-1']) {
        await core.createNamespacedSecret({
          namespace: layout.sourceNamespace,
          body: sourceBody(name, true),
        });
        sources.add(name);
      }
    },
    /** The first primaries, entered as changes (the stack is running). */
    async seed(): Promise<void> {
      for (let i = 0; i < 6; i++) await createSource(`s-${i}`);
      await change(
        'bundle.create',
        () => [`configmap-bundle:${layout.bundleNamespace}/b-big`],
        () =>
          custom.createNamespacedCustomObject({
            ...BUNDLES,
            namespace: layout.bundleNamespace,
            body: bundleBody('b-big', ['cm-big']),
          }),
      );
      for (let i = 0; i < 4; i++) await deploymentOwner('foo');
      for (let i = 0; i < 2; i++) await deploymentOwner('icecream');
      for (let i = 0; i < 2; i++) await operations.customcluster?.();
      for (let i = 0; i < 3; i++) await operations.bundle?.();
      await operations.tenant?.();
    },
    /** One random change. */
    async step(): Promise<void> {
      const op = random.weighted(WEIGHTS);
      await operations[op]?.();
    },
    /**
     * `count` changes as fast as 8 writers go: updates of the Secret sources, the ConfigMaps and the
     * Foos' replicas (what a rollout or a bulk edit does).
     */
    async burst(count: number): Promise<void> {
      let left = count;
      const writer = async () => {
        while (left-- > 0) {
          const what = random.int(0, 2);
          if (what === 0 && sources.size)
            await updateSource(random.pick([...sources].filter((s) => !s.startsWith('big-'))), true);
          else if (what === 1) {
            const name = cmName(random.int(0, POOL.configMaps - 1));
            await change(
              'configmap.update',
              () => bundlesListing(name),
              () =>
                core.patchNamespacedConfigMap(
                  { namespace: layout.configMapNamespace, name, body: { data: { k0: `v${++version}` } } },
                  merge,
                ),
              true,
            );
          } else if (deploymentOwners.foo.size) {
            const name = random.pick([...deploymentOwners.foo.keys()]);
            const replicas = random.int(0, 3);
            await change(
              'foo.update',
              () => [`foo:${ns}/${name}`],
              async () => {
                await custom.patchNamespacedCustomObject(
                  { ...FOOS, namespace: ns, name, body: { spec: { replicas } } },
                  merge,
                );
                deploymentOwners.foo.set(name, replicas);
              },
              true,
            );
          }
        }
      };
      await Promise.all(Array.from({ length: 8 }, writer));
    },
    /** A live source Secret's name (the poison key's target), if any. */
    someSource(): string | undefined {
      const names = [...sources].filter((s) => !s.startsWith('big-'));
      return names.length ? random.pick(names) : undefined;
    },
    updateSource,
    /** Every namespace and cluster-scoped object the soak made, for the cleanup of a real cluster. */
    madeNamespaces(): string[] {
      return [
        layout.sourceNamespace,
        layout.appsNamespace,
        layout.bundleNamespace,
        layout.configMapNamespace,
        ...Array.from({ length: STABLE_TARGETS }, (_, i) => `${layout.targetPrefix}${i}`),
        ...churn,
        ...Array.from({ length: POOL.tenants }, (_, i) => [
          `${layout.tenantPrefix}${i}-a`,
          `${layout.tenantPrefix}${i}-b`,
        ]).flat(),
      ];
    },
    tenantNames: () => Array.from({ length: POOL.tenants }, (_, i) => `${layout.tenantPrefix}${i}`),
  };
}

export type Workload = ReturnType<typeof createWorkload>;
