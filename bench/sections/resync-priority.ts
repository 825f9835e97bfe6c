/**
 * Section `resync-priority`: Foo replicas changed → Deployment updated through the serverless
 * pipeline with no resync (baseline), with a resync's backlog pending on the resync's own topic (as
 * now), and with the same backlog on the live keys topic (as before); `priorityRuns` runs, the
 * median one reported (the report's text says why).
 */

import type { Controller } from '../../core/contract/controller.ts';
import { LABELS } from '../../core/log.ts';
import { createKeyPublisher } from '../../core/publish.ts';
import { controllers as registry } from '../../examples/registry.ts';
import { RESYNC_PUBLISHING, resyncAll } from '../../functions/runtime/resync.ts';
import type { LocalStack } from '../../local/stack.ts';
import type { ApiServer, Section, SectionEnv } from '../environment.ts';
import { figuresOf, quantiles } from '../report.ts';
import { quiet, watchObjects } from '../support.ts';
import { type DeliveryLine, recordBusWaits } from './bus-wait.ts';
import { scaledFoos, type TimedChange } from './changes.ts';

/** A live change not converged within this counts as this, ms. */
const TIMEOUT_MS = 60_000;

/** One run's p50s (ms) and how many resync keys were reconciled during its own-topic changes. */
interface Run {
  idle: number;
  ownTopic: number;
  liveTopic: number;
  /** The bus's wait (published → pushed) and the rest, p50, idle and during the own-topic backlog. */
  split: { idleWait: number; ownWait: number; idleRest: number; ownRest: number };
  ownDrained: number;
  n: number;
}

export const resyncPriority: Section = {
  name: 'resync-priority',
  async run(env) {
    const api = await env.apiServer();
    const runs: Run[] = [];
    const failed: string[] = [];
    // A run that fails (e.g. the emulator timing out a publish on an overloaded machine) is left
    // out and named; the others still count.
    for (let i = 0; i < env.sizes.priorityRuns; i++)
      await oneRun(env, api, i).then(
        (run) => void runs.push(run),
        (err: unknown) =>
          void failed.push(`run ${i + 1}: ${err instanceof Error ? err.message : String(err)}`),
      );
    if (runs.length === 0) throw new Error(`every run failed: ${failed.join('; ')}`);
    const out = priorityFigures(env, runs);
    out.notes.push(...failed.map((f) => `resync priority, left out: ${f}`));
    return out;
  },
};

async function oneRun(env: SectionEnv, api: ApiServer, run: number): Promise<Run> {
  const { sizes } = env;
  const ns = `bench-priority-${run}`;
  await api.createNs(ns);
  const delivered: DeliveryLine[] = [];
  const stack = await env.startLocalStack({
    mode: 'serverless',
    kubeconfigPath: api.kubeconfigPath,
    env: { LOG_LEVEL: 'info' },
    // Its resync backlog is published here (resyncAll), not by the resync function.
    resyncOnDemand: true,
    onLog: (service, line) => {
      const labels = line[LABELS] as DeliveryLine['labels'];
      if (service === 'reconcile' && typeof line.outcome === 'string' && labels?.controller === 'foo')
        delivered.push({ line, labels });
    },
  });
  let published: Awaited<ReturnType<typeof recordBusWaits>> | undefined;
  const deployments = watchObjects(api.kc, '/apis/apps/v1/deployments');
  try {
    published = await recordBusWaits(stack, delivered);
    await deployments.ready;
    const names = Array.from({ length: sizes.rotation }, (_, k) => `p-${k}`);
    const scale = await scaledFoos(api, deployments, ns, names);
    let change = 0;
    const changes = async (): Promise<TimedChange[]> => {
      const ms: TimedChange[] = [];
      for (let i = 0; i < sizes.priorityChanges; i++) {
        const { at, ...c } = await scale(++change, TIMEOUT_MS);
        ms.push({ ...c, at: at ?? c.t0 + TIMEOUT_MS });
      }
      return ms;
    };
    env.log(`resync priority, run ${run + 1}: no resync`);
    const idle = await changes();
    env.log(`resync priority, run ${run + 1}: ${sizes.priorityBacklog} keys on the resync topic`);
    const ackedBefore = stack.resyncPushProxy.stats().acknowledged;
    await backlog(env, api, stack, stack.resyncTopology.topic, ns, 'own', RESYNC_PUBLISHING);
    const own = await changes();
    const ownDrained = stack.resyncPushProxy.stats().acknowledged - ackedBefore;
    env.log(`resync priority, run ${run + 1}: ${sizes.priorityBacklog} keys on the live topic (as before)`);
    await backlog(env, api, stack, stack.topology.topic, ns, 'shared', { ordering: true });
    const shared = await changes();
    const p50 = (cs: TimedChange[]) => quantiles(cs.map((c) => c.at - c.t0)).p50;
    const waits = await published.waits([...idle, ...own]);
    const waitP50 = (cs: TimedChange[]) =>
      quantiles(cs.filter((c) => waits.has(c)).map((c) => waits.get(c) as number)).p50;
    const restP50 = (cs: TimedChange[]) =>
      quantiles(cs.filter((c) => waits.has(c)).map((c) => c.at - c.t0 - (waits.get(c) as number))).p50;
    return {
      idle: p50(idle),
      ownTopic: p50(own),
      liveTopic: p50(shared),
      split: {
        idleWait: waitP50(idle),
        ownWait: waitP50(own),
        idleRest: restP50(idle),
        ownRest: restP50(own),
      },
      ownDrained,
      n: own.length,
    };
  } finally {
    await published?.stop();
    deployments.stop();
    await stack.stop();
  }
}

/**
 * Publishes the backlog by the resync itself (resyncAll), its keys listed by a `foo` controller whose
 * listKeys names Foos that do not exist: on the resync's topic with the resync's publisher
 * (RESYNC_PUBLISHING: no ordering key, batched), on the live topic with the live keys' (an ordering
 * key per key), as the resync published before it had a topic of its own.
 */
async function backlog(
  env: SectionEnv,
  api: ApiServer,
  stack: LocalStack,
  topicName: string,
  ns: string,
  tag: string,
  options: { ordering?: boolean },
): Promise<void> {
  const { sizes } = env;
  const fooController = registry.find((c) => c.name === 'foo') as Controller;
  const publisher = createKeyPublisher({
    projectId: stack.emulator.projectId,
    topic: topicName.split('/').pop() as string,
    emulatorHost: stack.emulator.host,
    logger: quiet,
    ...options,
  });
  try {
    const report = await resyncAll(
      [
        {
          ...fooController,
          listKeys: async function* () {
            for (let i = 0; i < sizes.priorityBacklog; i++)
              yield { namespace: ns, name: `absent-${tag}-${i}` };
          },
        },
      ],
      api.kc,
      publisher,
      quiet,
    );
    if (report.published !== sizes.priorityBacklog)
      throw new Error(
        `backlog: ${report.published} of ${sizes.priorityBacklog} keys published: ${JSON.stringify(report.controllers)}`,
      );
  } finally {
    await publisher.close();
  }
}

/** The median run (by its own-topic ratio) as the figures, every run's ratios as the spread. */
function priorityFigures(env: SectionEnv, runs: Run[]) {
  const { sizes } = env;
  const byRatio = [...runs].sort((a, b) => a.ownTopic / a.idle - b.ownTopic / b.idle);
  const median = byRatio[Math.floor((byRatio.length - 1) / 2)] as Run;
  const ratios = (of: (r: Run) => number) => runs.map((r) => `${(of(r) / r.idle).toFixed(2)}×`).join(', ');
  const of =
    runs.length > 1
      ? `the median of ${runs.length} runs (each run's ratio: ${ratios((r) => r.ownTopic)})`
      : 'one run';
  const figure = figuresOf('resync-priority');
  const sameRun = (value: number) => ({ name: 'no resync running, the same run', value });
  const noResync = (value: number) => ({ name: 'no resync running', value });
  const figures = [
    figure(
      `Foo replicas changed while ${sizes.priorityBacklog} resync keys are pending (own topic) → Deployment updated, p50 of ${median.n} changes; ${of}`,
      median.ownTopic,
      'ms',
      sameRun(median.idle),
      { text: '≤ 2×', met: median.ownTopic <= 2 * median.idle },
    ),
    figure(
      `the same with the backlog on the live keys topic (before: one subscription), p50 of ${median.n}${runs.length > 1 ? `; each run's ratio: ${ratios((r) => r.liveTopic)}` : ''}`,
      median.liveTopic,
      'ms',
      sameRun(median.idle),
    ),
    figure(
      "the same run's own-topic changes: the bus's wait (the emulator's publishTime → the reconcile started), p50",
      median.split.ownWait,
      'ms',
      noResync(median.split.idleWait),
    ),
    figure(
      "the same run's own-topic changes: Levelset's own time (end to end − the bus's wait), p50",
      median.split.ownRest,
      'ms',
      noResync(median.split.idleRest),
    ),
  ];
  return {
    figures,
    notes: [
      `resync priority: ${runs.map((r) => r.ownDrained).join(', ')} of ${sizes.priorityBacklog} resync keys were reconciled while the ${median.n} live changes of each own-topic run converged; a live change not converged within ${TIMEOUT_MS / 1000} s counts as ${TIMEOUT_MS / 1000} s.`,
    ],
  };
}
