/**
 * Section `cost`: each shipped controller's reconcile measured in a function process of its own
 * (bench/child.ts `reconcile`) and priced on Cloud Run (bench/cost.ts), beside an always-on
 * in-process controller pod priced on GKE Autopilot, and each controller's break-even rate.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { type KubernetesObject, KubernetesObjectApi } from '@kubernetes/client-node';
import type { Controller } from '../../core/contract/controller.ts';
import { controllers as registry } from '../../examples/registry.ts';
import { REPLICATE_TO_ANNOTATION } from '../../functions/controllers/secret-replicator/plan.ts';
import { PRELOAD } from '../../local/parent-watch.ts';
import { freePort } from '../../local/pubsub-emulator.ts';
import { repoRoot } from '../../local/service.ts';
import { FUNCTION_NODE_OPTIONS } from '../../local/stack-services.ts';
import { sumSeries } from '../../test/support/metrics.ts';
import { waitFor } from '../../test/support/wait.ts';
import {
  autopilotPodPerHour,
  billedSeconds,
  breakEvenPerHour,
  type CostRow,
  cloudRunPerMillion,
  PRICES,
  type ReconcileCost,
  TERRAFORM_DEFAULTS,
} from '../cost.ts';
import type { ApiServer, Emulator, Section, SectionEnv } from '../environment.ts';
import { type Figure, figuresOf } from '../report.ts';
import {
  applyCrds,
  jsonChild,
  processTreeCpuSeconds,
  procStatusKib,
  sleep,
  stopChild,
  waitForServed,
} from '../support.ts';

/** One controller's reconcile as measured in its function process (bench/child.ts `reconcile`). */
interface MeasuredReconcile {
  converged: ReconcileCost;
  changing: ReconcileCost;
  outcomes: Record<string, number>;
  /** The first failed outcome's log line, if any. */
  firstFailure?: string;
  rss: number;
  peakRss: number;
}

/** Each shipped controller's object (created here), and two specs the changing reconciles alternate. */
interface Subject {
  controller: string;
  /** Default: {@link NS}. */
  namespace?: string;
  body: Record<string, unknown>;
  patches: Record<string, unknown>[];
}

const NS = 'bench-cost-model';
const SOURCE_NS = 'bench-cost-source';

const bundleOf = (...sources: string[]) => ({
  spec: { sources: sources.map((name) => ({ namespace: NS, name })) },
});
const tenantOf = (pods: number) => ({
  spec: { namespaces: ['bench-cost-tenant'], quota: { cpu: '2', memory: '1Gi', pods } },
});
const topicSubscribed = (ackDeadlineSeconds: number) => ({
  spec: { subscriptions: [{ id: 'bench-cost-sub', ackDeadlineSeconds }] },
});

const SUBJECTS: Subject[] = [
  {
    controller: 'secret-replicator',
    namespace: SOURCE_NS,
    body: {
      metadata: { annotations: { [REPLICATE_TO_ANNOTATION]: 'bench-cost-copy-.*' } },
      data: { v: 'MA==' },
    },
    patches: [{ data: { v: 'MQ==' } }, { data: { v: 'Mg==' } }],
  },
  {
    controller: 'foo',
    body: { spec: { deploymentName: 'cost-foo', replicas: 1 } },
    patches: [{ spec: { replicas: 2 } }, { spec: { replicas: 3 } }],
  },
  {
    controller: 'customcluster',
    body: { spec: { message: 'hi', count: 2 } },
    patches: [{ spec: { count: 3 } }, { spec: { count: 2 } }],
  },
  {
    controller: 'icecream',
    body: { spec: { deploymentName: 'cost-icecream', replicas: 1 } },
    patches: [{ spec: { replicas: 2 } }, { spec: { replicas: 3 } }],
  },
  {
    controller: 'configmap-bundle',
    body: bundleOf('cost-source-a'),
    patches: [bundleOf('cost-source-a', 'cost-source-b'), bundleOf('cost-source-a')],
  },
  {
    // Cluster-scoped: a Namespace, a ResourceQuota and a NetworkPolicy per namespace it lists.
    controller: 'tenant',
    body: tenantOf(10),
    patches: [tenantOf(20), tenantOf(10)],
  },
  {
    controller: 'topic',
    // Labels would be the cheapest change, but the emulator cannot update a topic's labels.
    body: topicSubscribed(20),
    patches: [topicSubscribed(30), topicSubscribed(20)],
  },
  {
    // After the Topic above: its object `cost` is Ready by then, and this one subscribes to its topic.
    controller: 'subscription',
    body: { spec: { topicRef: { name: 'cost' }, subscriptionId: 'bench-cost-own', ackDeadlineSeconds: 20 } },
    patches: [{ spec: { ackDeadlineSeconds: 30 } }, { spec: { ackDeadlineSeconds: 20 } }],
  },
];

/** Google API calls per second the cost section's function allows (`LEVELSET_CLOUD_API_RATE`): no limit in effect. */
const COST_API_RATE = 100_000;

export const reconcileCost: Section = {
  name: 'cost',
  async run(env) {
    const api = await env.apiServer();
    const bus = await env.emulator();
    await applyCrds(api.kubeconfigPath, ['configmap-bundle', 'tenant', 'topic', 'subscription']);
    await api.createNs(NS);
    await api.createNs(SOURCE_NS);
    for (let i = 0; i < env.sizes.targets; i++) await api.createNs(`bench-cost-copy-${i}`);
    for (const [name, v] of [
      ['cost-source-a', 'a'],
      ['cost-source-b', 'b'],
    ] as const)
      await api.core.createNamespacedConfigMap({
        namespace: NS,
        body: { metadata: { name }, data: { [name]: v } },
      });
    const notes: string[] = [];
    const measured = new Map<string, MeasuredReconcile>();
    for (const s of SUBJECTS) {
      if (!registry.some((c) => c.name === s.controller)) continue;
      const m = await measureInFunctionProcess(env, api, bus, s);
      const failed = Object.keys(m.outcomes).filter((o) => o !== 'success' && o !== 'requeue');
      if (failed.length)
        notes.push(
          `cost: ${s.controller}'s reconciles answered ${JSON.stringify(m.outcomes)} (not all success; first: ${m.firstFailure?.slice(0, 400)})`,
        );
      measured.set(s.controller, m);
    }
    const pod = await idleInProcessPod(env, api, bus);
    notes.push(
      `cost: prices of ${PRICES.asOf} (${PRICES.source}); bench/cost.ts, docs/operations.md "What it costs".`,
    );
    return { ...priced(measured, pod), notes };
  },
};

/** Creates `s`'s object and runs its reconciles in a function process of their own (bench/child.ts). */
async function measureInFunctionProcess(
  env: SectionEnv,
  api: ApiServer,
  bus: Emulator,
  s: Subject,
): Promise<MeasuredReconcile> {
  const controller = registry.find((c) => c.name === s.controller) as Controller;
  const p = controller.primary;
  // A cluster-scoped primary's key has no namespace (client-go's MetaNamespaceKeyFunc).
  const namespace = p.namespaced ? (s.namespace ?? NS) : '';
  const head = {
    apiVersion: p.group ? `${p.group}/${p.version}` : p.version,
    kind: p.kind,
    metadata: { name: 'cost', ...(namespace ? { namespace } : {}) },
  };
  if (p.group)
    await waitForServed(() =>
      namespace
        ? api.custom.listNamespacedCustomObject({ ...p, namespace })
        : api.custom.listClusterCustomObject(p),
    );
  await KubernetesObjectApi.makeApiClient(api.kc).create({
    ...head,
    ...s.body,
    metadata: { ...head.metadata, ...(s.body.metadata as object | undefined) },
  } as KubernetesObject);
  env.log(`cost: ${s.controller}`);
  const flags = {
    kubeconfig: api.kubeconfigPath,
    controller: s.controller,
    namespace,
    name: 'cost',
    count: String(env.sizes.costReconciles),
    object: JSON.stringify(head),
    patches: JSON.stringify(s.patches),
  };
  const child = join(repoRoot, 'bench', 'child.ts');
  return jsonChild<MeasuredReconcile>(
    [
      ...FUNCTION_NODE_OPTIONS,
      child,
      'reconcile',
      ...Object.entries(flags).flatMap(([k, v]) => [`--${k}`, v]),
    ],
    {
      KUBECONFIG: api.kubeconfigPath,
      LEVELSET_TRACING: 'off',
      LEVELSET_SOURCE_NAMESPACE: SOURCE_NS,
      // What a reconcile costs, not the kit's per-API limiter (20 Google API calls per second per
      // instance by default), which 300 back-to-back reconciles would otherwise hit and measure.
      LEVELSET_CLOUD_API_RATE: String(COST_API_RATE),
      ...bus.childEnv,
    },
  );
}

/**
 * The always-on alternative: the in-process mode (every controller) once idle, its CPU (cores)
 * over `costIdleMs` and its RSS (MiB) read from /proc.
 */
async function idleInProcessPod(
  env: SectionEnv,
  api: ApiServer,
  bus: Emulator,
): Promise<{ cores: number; rssMib: number }> {
  const port = await freePort();
  // It stops itself when the bench dies (local/parent-watch.ts).
  const pod = spawn(
    process.execPath,
    [`--import=${PRELOAD}`, join(repoRoot, 'cli', 'levelset.ts'), 'run', '--in-process'],
    {
      env: {
        ...process.env,
        KUBECONFIG: api.kubeconfigPath,
        RELAY_PORT: String(port),
        LOG_LEVEL: 'warn',
        LEVELSET_SOURCE_NAMESPACE: SOURCE_NS,
        ...bus.childEnv,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  try {
    const deadline = Date.now() + 60_000;
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, {
      timeoutMs: 60_000,
      intervalMs: 250,
      message: 'the in-process mode ready',
    });
    // Ready means its informers have synced; their initial LIST still queues every existing key,
    // and working through them is start-up, not idling. Idle = every workqueue empty and no key
    // added for a second (client-go's metric names, functions/runtime/workqueue.ts).
    const queueState = async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return { depth: sumSeries(text, 'workqueue_depth'), adds: sumSeries(text, 'workqueue_adds_total') };
    };
    for (let last = await queueState(); ; ) {
      await sleep(1000);
      const state = await queueState();
      if (state.depth === 0 && state.adds === last.adds) break;
      if (Date.now() > deadline + 120_000)
        throw new Error(`the in-process mode did not go idle: ${JSON.stringify(state)}`);
      last = state;
    }
    const cpu = () => processTreeCpuSeconds(pod.pid as number);
    const idleMs = env.sizes.costIdleMs;
    const t0 = cpu();
    await sleep(idleMs);
    return {
      cores: (cpu() - t0) / (idleMs / 1000),
      rssMib: procStatusKib(pod.pid as number, 'VmRSS') / 1024,
    };
  } finally {
    await stopChild(pod);
  }
}

/** The cost rows and figures of the measured controllers beside the idle pod. */
function priced(
  measured: Map<string, MeasuredReconcile>,
  pod: { cores: number; rssMib: number },
): { figures: Figure[]; cost: CostRow[] } {
  const st = TERRAFORM_DEFAULTS;
  const podPerHour = autopilotPodPerHour(pod.cores, pod.rssMib / 1024);
  const money = (x: number) => Math.round(x * 100) / 100;
  const ms = (x: number) => Math.round(x * 1e5) / 100;
  const shape = `${st.vcpu} vCPU, ${st.memoryGib * 1024} MiB, concurrency ${st.concurrency}`;
  const figure = figuresOf('cost');
  const figures: Figure[] = [];
  const cost: CostRow[] = [];
  for (const [controller, m] of measured) {
    const billedConv = billedSeconds(m.converged, st);
    const billedChg = billedSeconds(m.changing, st);
    const row: CostRow = {
      controller,
      cpuMs: { converged: ms(m.converged.cpuSeconds), changing: ms(m.changing.cpuSeconds) },
      wallMs: { converged: ms(m.converged.wallSeconds), changing: ms(m.changing.wallSeconds) },
      billedMs: { busy: ms(billedConv.busy), isolated: ms(billedConv.isolated) },
      perMillion: {
        convergedBusy: money(cloudRunPerMillion(billedConv.busy, st)),
        convergedIsolated: money(cloudRunPerMillion(billedConv.isolated, st)),
        changingBusy: money(cloudRunPerMillion(billedChg.busy, st)),
        changingIsolated: money(cloudRunPerMillion(billedChg.isolated, st)),
      },
      breakEvenPerHour: {
        isolated: Math.round(breakEvenPerHour(cloudRunPerMillion(billedConv.isolated, st), podPerHour)),
        busy: Math.round(breakEvenPerHour(cloudRunPerMillion(billedConv.busy, st), podPerHour)),
      },
      rssMib: Math.round(m.rss / 2 ** 20),
      peakRssMib: Math.round(m.peakRss / 2 ** 20),
    };
    cost.push(row);
    const f = (name: string, value: number, unit: string, baseline?: Figure['baseline']) =>
      figure(`${controller}: ${name}`, value, unit, baseline);
    figures.push(
      f('CPU time per reconcile (function process, process.cpuUsage), converged', row.cpuMs.converged, 'ms', {
        name: 'changing (the object changed before each)',
        value: row.cpuMs.changing,
      }),
      f('wall time per reconcile, converged', row.wallMs.converged, 'ms', {
        name: 'changing',
        value: row.wallMs.changing,
      }),
      f(`billed time per converged reconcile, busy instance (${shape})`, row.billedMs.busy, 'ms', {
        name: 'isolated (billed alone, rounded up to 100 ms)',
        value: row.billedMs.isolated,
      }),
      f('Cloud Run $ per million reconciles, converged, busy instance', row.perMillion.convergedBusy, '$', {
        name: 'isolated',
        value: row.perMillion.convergedIsolated,
      }),
      f('Cloud Run $ per million reconciles, changing, busy instance', row.perMillion.changingBusy, '$', {
        name: 'isolated',
        value: row.perMillion.changingIsolated,
      }),
      f(
        'break-even rate, converged, isolated (below it serverless costs less than the pod)',
        row.breakEvenPerHour.isolated,
        'reconciles/hour',
        { name: 'busy instance', value: row.breakEvenPerHour.busy },
      ),
      f('function process peak RSS (its own maxRSS)', row.peakRssMib, 'MiB', {
        name: 'the configured memory Cloud Run bills',
        value: st.memoryGib * 1024,
      }),
    );
  }
  figures.push(
    figure(
      `always-on in-process pod on GKE Autopilot (idle ${Math.round(pod.cores * 1000)} mCPU, RSS ${Math.round(pod.rssMib)} MiB; billed at least ${PRICES.autopilot.minVcpu} vCPU, ${PRICES.autopilot.minGib} GiB)`,
      Math.round(podPerHour * 730 * 100) / 100,
      '$/month',
    ),
  );
  return { figures, cost };
}
