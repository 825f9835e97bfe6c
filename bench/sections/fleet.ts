/**
 * Section `fleet`: the fleet's saving (issue 24): the same workload (N Foos created at once in each
 * of two clusters → all Ready) served by one deployment of the functions for both clusters vs one
 * deployment per cluster; the function processes' total peak RSS and the reconciles/s of each.
 */
import { LABELS } from '../../core/log.ts';
import { startSimulatedNode } from '../../local/simulated-node.ts';
import type { LocalCluster, LocalStack } from '../../local/stack.ts';
import type { ApiServer, Section, SectionEnv } from '../environment.ts';
import { comparing, type Figure } from '../report.ts';
import { now, type ObjectWatch, procStatusKib, quiet, sleep, watchObjects } from '../support.ts';
import { foosReady } from './changes.ts';

interface Configuration {
  seconds: number;
  reconciles: number;
  perSecond: number;
  functionsPeakMib: number;
  reconcilePeakMib: number;
  reconcileRssMib: number;
}

export const fleet: Section = {
  name: 'fleet',
  async run(env) {
    // Side by side; the driver stops both, whichever failed.
    const servers = await Promise.all([env.apiServer(), env.anotherApiServer()]);
    const clusters: LocalCluster[] = servers.map((server, i) => ({
      id: `fleet-${'ab'[i]}`,
      kubeconfigPath: server.kubeconfigPath,
    }));
    const started: { stop(): unknown }[] = [];
    try {
      for (const server of servers) started.push(await startSimulatedNode(server.kc, quiet));
      const watches = servers.map((s) => watchObjects(s.kc, '/apis/samplecontroller.k8s.io/v1alpha1/foos'));
      started.push(...watches);
      await Promise.all(watches.map((w) => w.ready));
      const apart = await runConfiguration(
        env,
        'apart',
        clusters.map((c) => [c]),
        servers,
        watches,
      );
      const together = await runConfiguration(env, 'together', [clusters], servers, watches);
      return {
        figures: fleetFigures(env, together, apart),
        fleet: { foosPerCluster: env.sizes.fleetFoos, oneForBoth: together, onePerCluster: apart },
      };
    } finally {
      for (const s of started.reverse()) await s.stop();
    }
  },
};

/** One configuration: `deployments` stacks side by side, each serving its clusters. */
async function runConfiguration(
  env: SectionEnv,
  label: string,
  deployments: LocalCluster[][],
  servers: ApiServer[],
  watches: ObjectWatch[],
): Promise<Configuration> {
  env.log(`fleet: ${label}`);
  const ns = `bench-fleet-${label}`;
  const names = Array.from({ length: env.sizes.fleetFoos }, (_, i) => `fleet-${i}`);
  for (const s of servers) await s.createNs(ns);
  let reconciles = 0;
  const stacks: LocalStack[] = [];
  try {
    // The deployments start side by side (nothing is measured before every one is up); each
    // stack started is stopped below, also when another's start failed.
    const starts = await Promise.allSettled(
      deployments.map((d) =>
        env.startLocalStack({
          kubeconfigPath: (d[0] as LocalCluster).kubeconfigPath,
          clusters: d,
          env: { LOG_LEVEL: 'info' },
          onLog: (service, line) => {
            const labels = line[LABELS] as { controller?: string } | undefined;
            if (service === 'reconcile' && labels?.controller === 'foo' && typeof line.outcome === 'string')
              reconciles++;
          },
        }),
      ),
    );
    for (const s of starts) if (s.status === 'fulfilled') stacks.push(s.value);
    for (const s of starts) if (s.status === 'rejected') throw s.reason;
    const t0 = now();
    await Promise.all(servers.map((s, i) => foosReady(s, watches[i] as ObjectWatch, ns, names, 25)));
    const seconds = (now() - t0) / 1000;
    await sleep(1000); // let in-flight reconciles log their outcome
    const sumMib = (pids: number[], field: string) =>
      pids.reduce((sum, pid) => sum + procStatusKib(pid, field), 0) / 1024;
    const reconcilePids = stacks.map((st) => st.reconcile.pid);
    const functionPids = stacks.flatMap((st) => [st.reconcile.pid, st.resync.pid]);
    return {
      seconds,
      reconciles,
      perSecond: reconciles / seconds,
      functionsPeakMib: sumMib(functionPids, 'VmHWM'),
      reconcilePeakMib: sumMib(reconcilePids, 'VmHWM'),
      reconcileRssMib: sumMib(reconcilePids, 'VmRSS'),
    };
  } finally {
    for (const st of stacks) await st.stop();
  }
}

function fleetFigures(env: SectionEnv, together: Configuration, apart: Configuration): Figure[] {
  const f = comparing('fleet', together, apart, 'one deployment per cluster (2 × 1)');
  const round = (x: number) => Math.round(x * 10) / 10;
  const work = `${env.sizes.fleetFoos} Foos per cluster created → all Ready`;
  return [
    f(
      `function processes (reconcile + resync), total peak RSS, one deployment serving 2 clusters; ${work}`,
      'MiB',
      (c) => Math.round(c.functionsPeakMib),
    ),
    f('reconcile function processes, total peak RSS', 'MiB', (c) => Math.round(c.reconcilePeakMib)),
    f('reconcile function processes, total RSS after the workload', 'MiB', (c) =>
      Math.round(c.reconcileRssMib),
    ),
    f('Foo reconciles per second (both clusters)', 'reconciles/s', (c) => round(c.perSecond)),
    f('time until every Foo of both clusters is Ready', 's', (c) => round(c.seconds)),
    f('Foo reconciles run (both clusters)', 'reconciles', (c) => c.reconciles),
  ];
}
