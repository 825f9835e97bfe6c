/**
 * Section `e2e/throughput`: end to end and throughput, serverless vs the in-process mode, on one API
 * server with a simulated node; and, for the serverless changes, Levelset's own time (end to end
 * minus the bus's wait, bench/sections/bus-wait.ts).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { REPLICATE_TO_ANNOTATION } from '../../functions/controllers/secret-replicator/plan.ts';
import { LABELS } from '../../functions/log.ts';
import { startSimulatedNode } from '../../local/simulated-node.ts';
import { type AnyLocalStack, STACK_MODES, type StackMode, startLocalStack } from '../../local/stack.ts';
import type { ApiServer, Section, SectionEnv, SectionOutput } from '../environment.ts';
import { type Figure, quantiles } from '../report.ts';
import { FOOS, isReady, merge, now, type ObjectWatch, pool, quiet, sleep, watchObjects } from '../support.ts';
import {
  type BusWaits,
  type DeliveryLine,
  ownTimeFigures,
  recordBusWaits,
  type TimedChange,
} from './bus-wait.ts';

interface ModeResult {
  secret: TimedChange[];
  foo: TimedChange[];
  throughputMs: number;
  reconciles: number;
  /** Serverless only: the bus's wait of each change's first delivery. */
  waits?: BusWaits;
}

const decoded = (o: KubernetesObject | undefined) =>
  Buffer.from((o as { data?: Record<string, string> } | undefined)?.data?.v ?? '', 'base64').toString();

export const e2eThroughput: Section = {
  name: 'e2e/throughput',
  async run(env) {
    const api = await env.apiServer();
    const simulated = await startSimulatedNode(api.kc, quiet);
    try {
      return await e2eOnNode(env, api);
    } finally {
      await simulated.stop();
    }
  },
};

async function e2eOnNode(env: SectionEnv, api: ApiServer): Promise<SectionOutput> {
  const { sizes } = env;
  const source = 'bench-source';
  await api.createNs(source);
  const targets = Array.from({ length: sizes.targets }, (_, i) => `bench-target-${i}`);
  for (const t of targets) await api.createNs(t);
  const watches = {
    secrets: watchObjects(api.kc, '/api/v1/secrets'),
    deployments: watchObjects(api.kc, '/apis/apps/v1/deployments'),
    foos: watchObjects(api.kc, '/apis/samplecontroller.k8s.io/v1alpha1/foos'),
  };
  await Promise.all(Object.values(watches).map((w) => w.ready));
  const notes: string[] = [];
  const results = {} as Record<StackMode, ModeResult>;
  try {
    for (const mode of STACK_MODES) results[mode] = await runMode(env, api, mode, watches, notes);
  } finally {
    for (const w of Object.values(watches)) w.stop();
  }
  return { ...e2eFigures(env, results), notes };
}

/** The changes and the throughput run of one mode, on a local stack of its own. */
async function runMode(
  env: SectionEnv,
  api: ApiServer,
  mode: StackMode,
  w: { secrets: ObjectWatch; deployments: ObjectWatch; foos: ObjectWatch },
  notes: string[],
): Promise<ModeResult> {
  const { sizes } = env;
  const source = 'bench-source';
  const targets = Array.from({ length: sizes.targets }, (_, i) => `bench-target-${i}`);
  env.log(`e2e: ${mode}`);
  const ns = `bench-${mode}`;
  await api.createNs(ns);
  let reconciles = 0;
  const delivered: DeliveryLine[] = [];
  const stack: AnyLocalStack = await startLocalStack({
    mode,
    kubeconfigPath: api.kubeconfigPath,
    env: { LEVELSET_SOURCE_NAMESPACE: source, LOG_LEVEL: 'info' },
    resyncOnDemand: true, // never resyncs: no idle resync function beside what is measured
    onLog: (service, line) => {
      const labels = line[LABELS] as { controller?: string; key?: string } | undefined;
      if (service !== 'reconcile' || typeof line.outcome !== 'string') return;
      if (labels?.controller === 'foo') reconciles++;
      delivered.push({ line, labels });
    },
  });
  let published: Awaited<ReturnType<typeof recordBusWaits>> | undefined;
  try {
    if (stack.mode === 'serverless') published = await recordBusWaits(stack, delivered);
    // Changes go to `rotation` objects in turn, so that one object changes again only after the
    // relay's collapse window has passed: each change is an isolated change (bursts are the
    // collapse section's). Secrets: each source copied into every target namespace.
    const secretNames = Array.from({ length: sizes.rotation }, (_, k) => `db-${mode}-${k}`);
    const body = (name: string, v: string) => ({
      metadata: { name, namespace: source, annotations: { [REPLICATE_TO_ANNOTATION]: 'bench-target-.*' } },
      data: { v: Buffer.from(v).toString('base64') },
    });
    for (const name of secretNames)
      await api.core.createNamespacedSecret({ namespace: source, body: body(name, '0') });
    const copiesAre = (name: string, v: string) => () =>
      targets.every((t) => decoded(w.secrets.get(t, name)) === v);
    for (const name of secretNames) await w.secrets.until(copiesAre(name, '0'));
    const secret: TimedChange[] = [];
    for (let i = 1; i <= sizes.e2eChanges; i++) {
      if (i % 50 === 0) env.log(`e2e ${mode}: secret change ${i}`);
      const name = secretNames[i % sizes.rotation] as string;
      const t0 = now();
      await api.core.patchNamespacedSecret(
        { namespace: source, name, body: { data: { v: Buffer.from(String(i)).toString('base64') } } },
        merge,
      );
      const at = await w.secrets.until(copiesAre(name, String(i)), 30_000).catch(() => undefined);
      if (at === undefined)
        notes.push(`${mode}: Secret change ${i} not converged within 30 s (sample dropped)`);
      else secret.push({ controller: 'secret-replicator', key: `${source}/${name}`, t0, at });
    }
    // Foo: spec.replicas changed → Deployment updated.
    const fooNames = Array.from({ length: sizes.rotation }, (_, k) => `web-${mode}-${k}`);
    for (const name of fooNames) await api.createFoo(ns, name);
    const replicasAre = (name: string, r: number) => () =>
      (w.deployments.get(ns, name) as { spec?: { replicas?: number } } | undefined)?.spec?.replicas === r;
    for (const name of fooNames) await w.deployments.until(replicasAre(name, 1));
    const foo: TimedChange[] = [];
    for (let i = 1; i <= sizes.e2eChanges; i++) {
      const name = fooNames[i % sizes.rotation] as string;
      const r = (Math.floor(i / sizes.rotation) % 4) + 2;
      const t0 = now();
      await api.custom.patchNamespacedCustomObject(
        { ...FOOS, namespace: ns, name, body: { spec: { replicas: r } } },
        merge,
      );
      const at = await w.deployments.until(replicasAre(name, r), 30_000).catch(() => undefined);
      if (at === undefined)
        notes.push(`${mode}: Foo change ${i} (replicas ${r}) not converged within 30 s (sample dropped)`);
      else foo.push({ controller: 'foo', key: `${ns}/${name}`, t0, at });
    }
    // Throughput: N Foos at once → all Ready.
    env.log(`throughput: ${mode}`);
    const tpNs = `bench-tp-${mode}`;
    await api.createNs(tpNs);
    const names = Array.from({ length: sizes.foos }, (_, i) => `tp-${i}`);
    const allReady = () => {
      let n = 0;
      for (const o of w.foos.all()) if (o.metadata?.namespace === tpNs && isReady(o)) n++;
      return n === names.length;
    };
    const before = reconciles;
    const t0 = now();
    await pool(names, 50, (n) => api.createFoo(tpNs, n));
    const throughputMs = (await w.foos.until(allReady, 600_000)) - t0;
    await sleep(1000); // let in-flight reconciles log their outcome
    const waits = published ? await published.waits([...secret, ...foo]) : undefined;
    return { secret, foo, throughputMs, reconciles: reconciles - before, waits };
  } finally {
    await published?.stop();
    await stack.stop();
  }
}

function e2eFigures(env: SectionEnv, results: Record<StackMode, ModeResult>): SectionOutput {
  const { sizes } = env;
  const s = results.serverless;
  const ip = results['in-process'];
  const figures: Figure[] = [];
  const chart: SectionOutput['chart'] = [];
  const ms = (changes: TimedChange[]) => changes.map((c) => c.at - c.t0);
  for (const [kind, label] of [
    ['secret', 'Secret changed → every copy converged'],
    ['foo', 'Foo replicas changed → Deployment updated'],
  ] as const) {
    const a = quantiles(ms(s[kind]));
    const b = quantiles(ms(ip[kind]));
    for (const q of ['p50', 'p95', 'p99'] as const)
      figures.push({
        section: 'e2e',
        name: `${label}, ${q} (n=${a.n}; serverless bounded by the emulator's push loop: 2 synchronous loops per subscription, 100 ms idle sleep)`,
        value: a[q],
        unit: 'ms',
        baseline: { name: 'in-process', value: b[q] },
      });
    if (s.waits) figures.push(...ownTimeFigures(kind, s[kind], s.waits, ms(ip[kind])));
    chart.push(
      { name: `${kind}: serverless`, values: ms(s[kind]) },
      { name: `${kind}: in-process`, values: ms(ip[kind]) },
    );
  }
  figures.push(
    {
      section: 'throughput',
      name: `${sizes.foos} Foos created at once → all Ready, time`,
      value: s.throughputMs / 1000,
      unit: 's',
      baseline: { name: 'in-process', value: ip.throughputMs / 1000 },
    },
    {
      section: 'throughput',
      name: `${sizes.foos} Foos → all Ready, reconciles`,
      value: s.reconciles,
      unit: 'reconciles',
      baseline: { name: 'in-process', value: ip.reconciles },
    },
    {
      section: 'throughput',
      name: `${sizes.foos} Foos → all Ready, reconciles per Foo`,
      value: s.reconciles / sizes.foos,
      unit: 'reconciles',
      baseline: { name: 'in-process', value: ip.reconciles / sizes.foos },
    },
  );
  return { figures, chart };
}
