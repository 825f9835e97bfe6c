/**
 * Section `e2e/throughput`: end to end and throughput, serverless vs the in-process mode, on one API
 * server with a simulated node; and, for the serverless changes, Levelset's own time (end to end
 * minus the bus's wait, bench/sections/bus-wait.ts). With `--push-model cloud`, the serverless path
 * a second time with the stack's `cloud` push model (local/push-window.ts), its figures labelled
 * modelled.
 */
import { LABELS } from '../../core/log.ts';
import { startSimulatedNode } from '../../local/simulated-node.ts';
import { type PushModel, STACK_MODES, type StackMode } from '../../local/stack.ts';
import {
  type ApiServer,
  MODELLED_PUSH,
  type Section,
  type SectionEnv,
  type SectionOutput,
} from '../environment.ts';
import { comparing, type Figure, figuresOf, quantiles } from '../report.ts';
import { now, type ObjectWatch, quiet, sleep, watchObjects } from '../support.ts';
import { type BusWaits, type DeliveryLine, ownTimeFigures, recordBusWaits } from './bus-wait.ts';
import { type Change, foosReady, replicatedSecrets, scaledFoos, type TimedChange } from './changes.ts';

interface ModeResult {
  secret: TimedChange[];
  foo: TimedChange[];
  throughputMs: number;
  reconciles: number;
  /** Serverless only: the bus's wait of each change's first delivery. */
  waits?: BusWaits;
}

const SOURCE = 'bench-source';

/** A run of the section: a stack mode, and for the serverless mode who pushes. */
type Run = StackMode | 'serverless-modelled';
const runOf = (run: Run): { mode: StackMode; pushModel?: PushModel } =>
  run === 'serverless-modelled' ? { mode: 'serverless', pushModel: 'cloud' } : { mode: run };

export const e2eThroughput: Section = {
  name: 'e2e/throughput',
  async run(env) {
    const targets = Array.from({ length: env.sizes.targets }, (_, i) => `bench-target-${i}`);
    const notes: string[] = [];
    const results = {} as Record<StackMode, ModeResult> & { 'serverless-modelled'?: ModeResult };
    const api = await env.apiServer();
    const shared = await onServer(api, targets);
    try {
      for (const mode of STACK_MODES)
        results[mode] = await runMode(env, api, mode, targets, shared.watches, notes);
    } finally {
      await shared.stop();
    }
    if (env.pushModel === 'cloud') {
      // On an API server of its own: a relay started on the first would publish a key for every
      // object the earlier runs left (1 000 Foos and more), a backlog ahead of the measured changes.
      const own = await env.anotherApiServer();
      const fresh = await onServer(own, targets);
      try {
        results['serverless-modelled'] = await runMode(
          env,
          own,
          'serverless-modelled',
          targets,
          fresh.watches,
          notes,
        );
      } finally {
        await fresh.stop();
      }
    }
    return { ...e2eFigures(env, results), notes };
  },
};

/** What the runs on `api` share: a simulated node, the source and target namespaces, the bench's watches. */
async function onServer(api: ApiServer, targets: readonly string[]) {
  const simulated = await startSimulatedNode(api.kc, quiet);
  for (const ns of [SOURCE, ...targets]) await api.createNs(ns);
  const watches = {
    secrets: watchObjects(api.kc, '/api/v1/secrets'),
    deployments: watchObjects(api.kc, '/apis/apps/v1/deployments'),
    foos: watchObjects(api.kc, '/apis/samplecontroller.k8s.io/v1alpha1/foos'),
  };
  const stop = async () => {
    for (const w of Object.values(watches)) w.stop();
    await simulated.stop();
  };
  try {
    await Promise.all(Object.values(watches).map((w) => w.ready));
  } catch (err) {
    await stop();
    throw err;
  }
  return { watches, stop };
}

/** The changes and the throughput run of one mode, on a local stack of its own. */
async function runMode(
  env: SectionEnv,
  api: ApiServer,
  run: Run,
  targets: string[],
  w: { secrets: ObjectWatch; deployments: ObjectWatch; foos: ObjectWatch },
  notes: string[],
): Promise<ModeResult> {
  const { sizes } = env;
  const { mode, pushModel } = runOf(run);
  env.log(`e2e: ${run}`);
  const ns = `bench-${run}`;
  await api.createNs(ns);
  let reconciles = 0;
  const delivered: DeliveryLine[] = [];
  const stack = await env.startLocalStack({
    mode,
    ...(pushModel ? { pushModel } : {}),
    kubeconfigPath: api.kubeconfigPath,
    env: { LEVELSET_SOURCE_NAMESPACE: SOURCE, LOG_LEVEL: 'info' },
    resyncOnDemand: true, // never resyncs: no idle resync function beside what is measured
    onLog: (service, line) => {
      const labels = line[LABELS] as DeliveryLine['labels'];
      if (service !== 'reconcile' || typeof line.outcome !== 'string') return;
      if (labels?.controller === 'foo') reconciles++;
      delivered.push({ line, labels });
    },
  });
  let published: Awaited<ReturnType<typeof recordBusWaits>> | undefined;
  /** `e2eChanges` changes made one at a time; those not converged within 30 s are dropped (noted). */
  const timed = async (kind: string, change: (i: number, timeoutMs: number) => Promise<Change>) => {
    const out: TimedChange[] = [];
    for (let i = 1; i <= sizes.e2eChanges; i++) {
      if (i % 50 === 0) env.log(`e2e ${run}: ${kind} change ${i}`);
      const { at, ...c } = await change(i, 30_000);
      if (at === undefined)
        notes.push(`${run}: ${kind} change ${i} not converged within 30 s (sample dropped)`);
      else out.push({ ...c, at });
    }
    return out;
  };
  // Changes go to `rotation` objects in turn, so that each is an isolated change (bursts are the
  // collapse section's).
  const rotation = (prefix: string) => Array.from({ length: sizes.rotation }, (_, k) => `${prefix}-${k}`);
  try {
    // The bus's wait is the emulator's push path's (the modelled run has only its end to end).
    if (stack.mode === 'serverless' && !pushModel) published = await recordBusWaits(stack, delivered);
    const secret = await timed(
      'Secret',
      await replicatedSecrets(api, w.secrets, SOURCE, targets, rotation(`db-${run}`)),
    );
    const foo = await timed('Foo', await scaledFoos(api, w.deployments, ns, rotation(`web-${run}`)));
    env.log(`throughput: ${run}`);
    const tpNs = `bench-tp-${run}`;
    await api.createNs(tpNs);
    const names = Array.from({ length: sizes.foos }, (_, i) => `tp-${i}`);
    const before = reconciles;
    const t0 = now();
    const throughputMs = (await foosReady(api, w.foos, tpNs, names, 50)) - t0;
    await sleep(1000); // let in-flight reconciles log their outcome
    const waits = published ? await published.waits([...secret, ...foo]) : undefined;
    return { secret, foo, throughputMs, reconciles: reconciles - before, waits };
  } finally {
    await published?.stop();
    await stack.stop();
  }
}

function e2eFigures(
  env: SectionEnv,
  results: Record<StackMode, ModeResult> & { 'serverless-modelled'?: ModeResult },
): SectionOutput {
  const { sizes } = env;
  const s = results.serverless;
  const ip = results['in-process'];
  const figures: Figure[] = [];
  const chart: SectionOutput['chart'] = [];
  const inProcess = (value: number) => ({ name: 'in-process', value });
  const ms = (changes: TimedChange[]) => changes.map((c) => c.at - c.t0);
  for (const [kind, label] of [
    ['secret', 'Secret changed → every copy converged'],
    ['foo', 'Foo replicas changed → Deployment updated'],
  ] as const) {
    const a = quantiles(ms(s[kind]));
    const b = quantiles(ms(ip[kind]));
    for (const q of ['p50', 'p95', 'p99'] as const)
      figures.push(
        figuresOf('e2e')(
          `${label}, ${q} (n=${a.n}; serverless bounded by the emulator's push loop: 2 synchronous loops per subscription, 100 ms idle sleep)`,
          a[q],
          'ms',
          inProcess(b[q]),
        ),
      );
    if (s.waits) figures.push(...ownTimeFigures(kind, s[kind], s.waits, ms(ip[kind])));
    chart.push(
      { name: `${kind}: serverless`, values: ms(s[kind]) },
      { name: `${kind}: in-process`, values: ms(ip[kind]) },
    );
    const m = results['serverless-modelled'];
    if (!m) continue;
    const c = quantiles(ms(m[kind]));
    for (const q of ['p50', 'p95', 'p99'] as const)
      figures.push(
        figuresOf('e2e')(
          `${label}, ${q} (n=${c.n}; serverless, ${MODELLED_PUSH})`,
          c[q],
          'ms',
          inProcess(b[q]),
        ),
      );
    chart.push({ name: `${kind}: serverless (modelled push)`, values: ms(m[kind]) });
  }
  const throughput = comparing('throughput', s, ip, 'in-process');
  const all = `${sizes.foos} Foos → all Ready`;
  figures.push(
    throughput(`${sizes.foos} Foos created at once → all Ready, time`, 's', (r) => r.throughputMs / 1000),
    throughput(`${all}, reconciles`, 'reconciles', (r) => r.reconciles),
    throughput(`${all}, reconciles per Foo`, 'reconciles', (r) => r.reconciles / sizes.foos),
  );
  const m = results['serverless-modelled'];
  if (m) {
    const modelled = comparing('throughput', m, ip, 'in-process');
    const emulator = comparing('throughput', m, s, "serverless, the emulator's push");
    const time = (r: ModeResult) => r.throughputMs / 1000;
    figures.push(
      modelled(`${sizes.foos} Foos created at once → all Ready, time (${MODELLED_PUSH})`, 's', time),
      emulator(`${sizes.foos} Foos created at once → all Ready, time (${MODELLED_PUSH})`, 's', time),
      modelled(
        `${all}, reconciles per Foo (${MODELLED_PUSH})`,
        'reconciles',
        (r) => r.reconciles / sizes.foos,
      ),
    );
  }
  return { figures, chart };
}
