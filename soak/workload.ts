/**
 * The soak's workload: seeded random changes to the primaries of every driven controller and to
 * their children (drift: a child edited or deleted by hand), namespace churn, large objects near
 * the 1 MiB object size limit, and bursts. Each change is written through the API (with a few
 * retries: the soak's own writes meet the injected 429s and 500s too) and entered in the
 * {@link Ledger} with the primaries whose invariants it touches (soak/auditor.ts keys).
 */
import { setTimeout as sleep } from 'node:timers/promises';
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

/** One change the soak made, pending until the auditor sees its primaries at their level again. */
export interface Change {
  id: number;
  /** What was done, e.g. `secret.update`, `drift.deployment-scaled`, `namespace.create`. */
  kind: string;
  /** When the write returned, ms since the epoch. */
  at: number;
  /** The primaries (auditor keys, `<controller>:<namespace>/<name>`) whose invariants must hold again. */
  keys: string[];
  /** The fault kinds active at any time between the change and its convergence. */
  faults: Set<string>;
  /** When the auditor first found every key at its level (the start of that audit's reads). */
  convergedAt?: number;
  /** A resync completed between the change and its convergence, the change pending ≥ the live grace. */
  atResync?: boolean;
  /** Part of a burst. */
  burst?: boolean;
  /**
   * The first audit (its start, ms since the epoch) that found none of the change's controllers'
   * keys in the keys topic (the delivery watchdog's backlog), at least the relay's latency after
   * the change, the change still pending: its key was not in flight then (soak/run.ts).
   */
  notInFlightAt?: number;
  /** Dead-lettered keys of the change's controllers when it was first audited (soak/run.ts). */
  deadLetteredAtFirstAudit?: number;
}

/**
 * The changes made: their counts, and the pending ones. A converged change is handed to
 * `onConverged` (soak/run.ts tallies its latency) and dropped: the soak keeps no record per
 * converged change, so its memory does not grow with the changes it makes (issue 45: the ledger of
 * every change was one of the soak's own growths).
 */
export class Ledger {
  /** Changes made. */
  total = 0;
  /** Changes made in bursts. */
  inBursts = 0;
  /** Changes made, by kind. */
  readonly byKind: Record<string, number> = {};
  /** Changes not converged yet. */
  readonly pending = new Set<Change>();
  /** The fault kinds active now (the fault schedule adds and removes them). */
  readonly activeFaults = new Set<string>();
  readonly #onConverged: (change: Change) => void;

  constructor(onConverged: (change: Change) => void = () => {}) {
    this.#onConverged = onConverged;
  }

  record(kind: string, keys: string[], burst = false): void {
    const change: Change = {
      id: this.total++,
      kind,
      at: Date.now(),
      keys,
      faults: new Set(this.activeFaults),
      ...(burst ? { burst } : {}),
    };
    this.byKind[kind] = (this.byKind[kind] ?? 0) + 1;
    if (burst) this.inBursts++;
    if (keys.length === 0) this.converged(change, change.at);
    else this.pending.add(change);
  }

  /** `change` converged at `at` (ms since the epoch): handed to `onConverged`, then dropped. */
  converged(change: Change, at: number): void {
    change.convergedAt = at;
    this.pending.delete(change);
    this.#onConverged(change);
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
  /** The namespaces `setup()` creates. */
  const stableNamespaces = [
    layout.sourceNamespace,
    layout.appsNamespace,
    layout.bundleNamespace,
    layout.configMapNamespace,
    ...Array.from({ length: STABLE_TARGETS }, (_, i) => `${layout.targetPrefix}${i}`),
  ];

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
        await sleep(500);
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
  /**
   * The create, update (a merge patch of the spec) and delete changes of one custom resource `r`
   * (cluster-scoped without a `namespace`), entered as `<kindName>.<verb>` for the primary
   * `keyOf(name)`; the object's `value` is kept in `model` once its write returned. `spec` is called
   * at each attempt of the write (a draw in it is drawn then). An update's merge patch is the whole
   * object with `patchWhole`, else `{ spec }`.
   */
  function customObjectChanges<T>(
    kindName: string,
    r: typeof FOOS,
    namespace: string | undefined,
    model: Map<string, T>,
    keyOf: (name: string) => string,
    patchWhole = false,
  ) {
    const objectOf = (name: string, spec: object) => ({
      apiVersion: `${r.group}/${r.version}`,
      kind: r.kind,
      metadata: { name },
      spec,
    });
    const entered = (verb: string, name: string, write: () => Promise<unknown>, burst = false) =>
      change(`${kindName}.${verb}`, () => [keyOf(name)], write, burst);
    return {
      create: (name: string, value: T, spec: () => object) =>
        entered('create', name, async () => {
          const body = objectOf(name, spec());
          await (namespace
            ? custom.createNamespacedCustomObject({ ...r, namespace, body })
            : custom.createClusterCustomObject({ ...r, body }));
          model.set(name, value);
        }),
      update: (name: string, value: T, spec: () => object, burst = false) =>
        entered(
          'update',
          name,
          async () => {
            const body = patchWhole ? objectOf(name, spec()) : { spec: spec() };
            await (namespace
              ? custom.patchNamespacedCustomObject({ ...r, namespace, name, body }, merge)
              : custom.patchClusterCustomObject({ ...r, name, body }, merge));
            model.set(name, value);
          },
          burst,
        ),
      delete: (name: string) =>
        entered('delete', name, async () => {
          await (namespace
            ? custom.deleteNamespacedCustomObject({ ...r, namespace, name })
            : custom.deleteClusterCustomObject({ ...r, name }));
          model.delete(name);
        }),
    };
  }
  const ownerChanges = (kind: 'foo' | 'icecream', r: typeof FOOS) =>
    customObjectChanges(kind, r, ns, deploymentOwners[kind], (n) => `${kind}:${ns}/${n}`);
  const ownerObjects = { foo: ownerChanges('foo', FOOS), icecream: ownerChanges('icecream', ICECREAMS) };
  const ccKey = (name: string) => `customcluster:${ns}/${name}`;
  const customclusters = customObjectChanges('customcluster', CUSTOMCLUSTERS, ns, ccs, ccKey);
  const bundleKey = (name: string) => `configmap-bundle:${layout.bundleNamespace}/${name}`;
  const bundleObjects = (model: Map<string, string[]>) =>
    customObjectChanges('bundle', BUNDLES, layout.bundleNamespace, model, bundleKey, true);
  const bundleSpec = (list: string[]) => ({
    sources: list.map((n) => ({ namespace: layout.configMapNamespace, name: n })),
  });
  const tenantKey = (name: string) => `tenant:${name}`;
  const tenantObjects = customObjectChanges('tenant', TENANTS, undefined, tenants, tenantKey, true);
  const cmName = (i: number) => `cm-${i}`;
  const tenantNamespaces = (name: string) => [`${name}-a`, `${name}-b`].slice(0, random.int(1, 2));
  const bundlesListing = (cm: string) =>
    [...bundles].filter(([, list]) => list.includes(cm)).map(([b]) => bundleKey(b));
  const free = (pool: number, prefix: string, used: { has(k: string): boolean }) =>
    Array.from({ length: pool }, (_, i) => `${prefix}${i}`).filter((n) => !used.has(n));
  /**
   * Draws an operation on a pool of names `<prefix><i>`, `live` of them made (weights: create 2 while
   * one is free, update `update`, delete 1 above `keep` live, drift 2 if `drift`), then the name it
   * acts on: a free one to create, else a live one.
   */
  const draw = (
    pool: number,
    prefix: string,
    live: Map<string, unknown>,
    update: number,
    keep: number,
    drift = true,
  ) => {
    const absent = free(pool, prefix, live);
    const op = random.weighted({
      create: absent.length ? 2 : 0,
      update: live.size ? update : 0,
      delete: live.size > keep ? 1 : 0,
      ...(drift ? { drift: live.size ? 2 : 0 } : {}),
    } as Record<'create' | 'update' | 'delete' | 'drift', number>);
    return { op, name: random.pick(op === 'create' ? absent : [...live.keys()]) };
  };
  /** `data` is called at each attempt of the write. */
  const updateConfigMap = (name: string, data: () => Record<string, string>, burst = false) =>
    change(
      'configmap.update',
      () => bundlesListing(name),
      () =>
        core.patchNamespacedConfigMap(
          { namespace: layout.configMapNamespace, name, body: { data: data() } },
          merge,
        ),
      burst,
    );

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
      const { op, name } = draw(POOL.ccs, 'cc-', ccs, 4, 2);
      if (op === 'create') {
        const spec = { count: random.int(0, 3), message: `hello-${++version}` };
        return customclusters.create(name, spec, () => spec);
      }
      if (op === 'update') {
        const spec = random.chance(0.5)
          ? { count: random.int(0, 3), message: ccs.get(name)?.message ?? '' }
          : { count: ccs.get(name)?.count ?? 1, message: `hello-${++version}` };
        return customclusters.update(name, spec, () => spec);
      }
      if (op === 'delete') return customclusters.delete(name);
      const pods = (await core.listNamespacedPod({ namespace: ns })).items.filter((p) =>
        p.metadata?.ownerReferences?.some(
          (o) => o.controller && o.kind === CUSTOMCLUSTERS.kind && o.name === name,
        ),
      );
      if (pods.length === 0) return;
      const pod = random.pick(pods).metadata?.name ?? '';
      return change(
        'drift.pod-deleted',
        () => [ccKey(name)],
        () => core.deleteNamespacedPod({ namespace: ns, name: pod }),
      );
    },
    async configMap() {
      const name = cmName(random.int(0, POOL.configMaps - 1));
      return updateConfigMap(name, () => ({ [`k${random.int(0, 3)}`]: `v${++version}` }));
    },
    async bundle() {
      const { op, name } = draw(POOL.bundles, 'b-', bundles, 3, 3);
      if (op === 'create' || op === 'update') {
        const list = [
          ...new Set(
            Array.from({ length: random.int(1, 3) }, () => cmName(random.int(0, POOL.configMaps - 1))),
          ),
        ];
        // Now and then a source that does not exist (the bundle is Ready=False/SourcesMissing).
        if (random.chance(0.1)) list.push('cm-late');
        return bundleObjects(bundles)[op](name, list, () => bundleSpec(list));
      }
      if (op === 'delete') return bundleObjects(bundles).delete(name);
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
        () => [bundleKey(name)],
        () =>
          core.patchNamespacedConfigMap(
            { namespace: layout.bundleNamespace, name, body: { data: { [edited]: 'edited by hand' } } },
            merge,
          ),
      );
    },
    async tenant() {
      const { op, name } = draw(POOL.tenants, layout.tenantPrefix, tenants, 3, 1);
      if (op === 'create' || op === 'update') {
        const namespaces = tenantNamespaces(name);
        return tenantObjects[op](name, namespaces, () => ({
          namespaces,
          quota: { cpu: '2', memory: '1Gi', pods: random.int(5, 20) },
        }));
      }
      if (op === 'delete') return tenantObjects.delete(name);
      const namespace = random.pick(tenants.get(name) ?? []);
      return change(
        'drift.quota-deleted',
        () => [tenantKey(name)],
        () => core.deleteNamespacedResourceQuota({ namespace, name: 'tenant' }),
      );
    },
  };

  async function deploymentOwner(kind: 'foo' | 'icecream') {
    const pool = kind === 'foo' ? POOL.foos : POOL.icecreams;
    const { op, name } = draw(pool, `${kind}-`, deploymentOwners[kind], 4, 2, false);
    if (op === 'delete') return ownerObjects[kind].delete(name);
    const replicas = random.int(0, 3);
    if (op === 'create')
      return ownerObjects[kind].create(name, replicas, () => ({ deploymentName: name, replicas }));
    return ownerObjects[kind].update(name, replicas, () => ({ replicas }));
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
      for (const name of stableNamespaces)
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
      // Kept out of the workload's model: never updated or deleted.
      await bundleObjects(new Map()).create('b-big', ['cm-big'], () => bundleSpec(['cm-big']));
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
          else if (what === 1)
            await updateConfigMap(
              cmName(random.int(0, POOL.configMaps - 1)),
              () => ({ k0: `v${++version}` }),
              true,
            );
          else if (deploymentOwners.foo.size) {
            const name = random.pick([...deploymentOwners.foo.keys()]);
            const replicas = random.int(0, 3);
            await ownerObjects.foo.update(name, replicas, () => ({ replicas }), true);
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
        ...stableNamespaces,
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
