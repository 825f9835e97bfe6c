/**
 * The soak's faults, each one docs/faults.md names, injected through what the stack and the local
 * API server already expose (local/stack-faults.ts, @levelset/apiserver's FaultInjector). Each
 * {@link FaultKind} injects, holds the fault for its duration and clears it; the schedule
 * (soak/run.ts) runs them one at a time, in a seeded order, each at least five times in 30 minutes.
 *
 * Against a real kube-apiserver (`--kubeconfig`) the faults that only the local server can inject
 * (watch drops, compaction, outages, 429/500, latency, a poison key, silenced watches) are skipped:
 * {@link faultKinds} returns them with `skipped` set, and the report says so.
 */
import type { FaultInjector } from '@levelset/apiserver';
import type { LocalStack } from '../local/stack.ts';
import { stackFaults } from '../local/stack-faults.ts';
import { LAYOUT } from './auditor.ts';
import type { Random } from './random.ts';
import type { Workload } from './workload.ts';

export interface FaultKind {
  name: string;
  /** What it does, for the report. */
  description: string;
  /** Why it is not injected in this run (a real API server), or undefined. */
  skipped?: string;
  /** Injects the fault, holds it, clears it. @throws when the stack cannot be broken or mended */
  inject(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FaultContext {
  stack: LocalStack;
  /** The local API server's fault injector; undefined on a real cluster. */
  apiFaults: FaultInjector | undefined;
  workload: Workload;
  random: Random;
}

/** Every fault kind of the soak, in a fixed order. */
export function faultKinds({ stack, apiFaults, workload, random }: FaultContext): FaultKind[] {
  const faults = stackFaults(stack);
  const local = (f: (api: FaultInjector) => Promise<void>) => async () => {
    if (apiFaults) await f(apiFaults);
  };
  const localOnly = apiFaults ? undefined : 'a real API server: only the local one can inject it';
  /** Children the controllers write: a 429/500 rule is spread over them. */
  const childWrites = [
    { verb: ['create', 'update', 'patch', 'delete'], resource: 'secrets' },
    { verb: ['create', 'update', 'patch', 'delete'], resource: 'deployments' },
    { verb: ['create', 'update', 'patch'], resource: 'configmaps' },
    { verb: ['create', 'update', 'patch', 'delete'], resource: 'pods' },
    { verb: ['list'], resource: 'secrets' },
  ];
  const failWrites = (status: number) =>
    local(async (api) => {
      const removes = childWrites.map((m) =>
        api.failNext(m, random.int(5, 15), { status, ...(status === 429 ? { retryAfterSeconds: 1 } : {}) }),
      );
      // A few sources change meanwhile, so that there is work for the failures to hit.
      for (let i = 0; i < 5; i++) {
        const name = workload.someSource();
        if (name) await workload.updateSource(name);
      }
      await sleep(10_000);
      for (const remove of removes) remove();
    });
  return [
    {
      name: 'watch-drop',
      description:
        'every open watch reset (connections destroyed); the informers re-watch from their resourceVersion',
      skipped: localOnly,
      inject: local(async (api) => {
        api.dropWatches('reset');
      }),
    },
    {
      name: 'compaction',
      description:
        'history compacted, then every watch closed: the re-watch gets 410 Gone and the informers re-list',
      skipped: localOnly,
      inject: local(async (api) => {
        api.compactHistory();
        api.dropWatches('close');
      }),
    },
    {
      name: 'watch-silence',
      description:
        "every open watch silenced (open, nothing sent, no BOOKMARK): the relay's silence limit (RELAY_WATCH_SILENCE_TIMEOUT_MS) restarts it",
      skipped: localOnly,
      inject: local(async (api) => {
        api.silenceWatches();
      }),
    },
    {
      name: 'apiserver-outage',
      description:
        "the API server down for 5 s: every connection reset, every request held (the local server keeps its store, as kube-apiserver's etcd does; it cannot be restarted as a process)",
      skipped: localOnly,
      inject: local(async (api) => {
        api.pause();
        api.dropWatches('reset');
        await sleep(5_000);
        api.resume();
      }),
    },
    {
      name: 'http-429',
      description: '5–15 writes per child kind (and LISTs of Secrets) answer 429 Retry-After: 1, for 10 s',
      skipped: localOnly,
      inject: failWrites(429),
    },
    {
      name: 'http-500',
      description: '5–15 writes per child kind (and LISTs of Secrets) answer 500, for 10 s',
      skipped: localOnly,
      inject: failWrites(500),
    },
    {
      name: 'latency',
      description: 'every request delayed 1–2 s for 15 s (clock-skew-sized delays)',
      skipped: localOnly,
      inject: local(async (api) => {
        const remove = api.addLatency({}, random.int(1000, 2000));
        await sleep(15_000);
        remove();
      }),
    },
    {
      name: 'poison-key',
      description:
        "one source Secret's every GET answers 500 for 40 s while it is updated: the key fails every attempt and is dead-lettered; the next resync converges it",
      skipped: localOnly,
      inject: local(async (api) => {
        const name = workload.someSource();
        if (!name) return;
        const remove = api.failNext(
          { verb: 'get', resource: 'secrets', namespace: LAYOUT.sourceNamespace, name },
          Number.POSITIVE_INFINITY,
          { status: 500 },
        );
        await workload.updateSource(name);
        await sleep(40_000);
        remove();
      }),
    },
    {
      name: 'relay-kill',
      description: 'the relay SIGKILLed (its collapsed keys lost), started again after 1 s',
      inject: async () => {
        await faults.killRelay();
        await sleep(1_000);
        await stack.startRelay();
      },
    },
    {
      name: 'function-kill',
      description:
        '`reconcile` SIGKILLed mid-reconcile (300 ms into 10 source updates), started again at once',
      inject: async () => {
        const updates = Array.from({ length: 10 }, () => workload.someSource()).flatMap((n) =>
          n ? [workload.updateSource(n)] : [],
        );
        await sleep(300);
        await faults.restartFunction('reconcile');
        await Promise.all(updates);
      },
    },
    {
      name: 'emulator-restart',
      description:
        'the Pub/Sub emulator stopped (its messages lost) for 3 s, then started again with the topology',
      inject: async () => {
        await faults.stopEmulator();
        await sleep(3_000);
        await faults.startEmulator();
      },
    },
  ];
}
