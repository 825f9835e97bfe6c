/**
 * The soak's faults, each one docs/faults.md names, injected through what the stack and the local
 * API server already expose (local/stack-faults.ts, @levelset/apiserver's FaultInjector). Each
 * {@link FaultKind} injects, holds the fault for its duration and clears it; the schedule
 * (soak/run.ts) runs them one at a time, in a seeded order, each at least five times in 30 minutes.
 *
 * Against a real kube-apiserver (`--kubeconfig`) the faults that only the local server can inject
 * (compaction, 429/500, a poison key, silenced watches) are skipped:
 * {@link faultKinds} returns them with `skipped` set, and the report says so; watch drops, outages
 * and latency are injected at a TCP proxy between the stack and the server instead
 * (local/tcp-proxy.ts; `--direct` goes without). There, the API server's
 * restart is the operator's command (`--restart-apiserver-command`, {@link restartApiServerBy});
 * on the local server it is skipped (its outage stands for it).
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import type { FaultInjector } from '@levelset/apiserver';
import type { LocalStack } from '../local/stack.ts';
import { stackFaults } from '../local/stack-faults.ts';
import type { TcpProxy } from '../local/tcp-proxy.ts';
import { LAYOUT } from './auditor.ts';
import type { Random } from './random.ts';
import type { Workload } from './workload.ts';

export interface FaultKind {
  name: string;
  /** What it does, for the report. */
  description: string;
  /** Why it is not injected in this run (a real API server), or undefined. */
  skipped?: string;
  /**
   * The sampled process (soak/memory.ts) the fault kills and starts again, a new life of it: the
   * schedule (soak/run.ts `faultSchedule`) injects these in the first third of the run only.
   */
  restarts?: string;
  /** Injects the fault, holds it, clears it. @throws when the stack cannot be broken or mended */
  inject(): Promise<void>;
}

const exec = promisify(execFile);

export interface FaultContext {
  stack: LocalStack;
  /** The local API server's fault injector; undefined on a real cluster. */
  apiFaults: FaultInjector | undefined;
  workload: Workload;
  random: Random;
  /**
   * A real API server's restart (`--restart-apiserver-command`): runs the operator's command, then
   * waits until the server is ready again; undefined when none was given.
   */
  restartApiServer?: () => Promise<void>;
  /**
   * On a real API server, the TCP proxy the stack's processes reach it through (local/tcp-proxy.ts):
   * watch drops, outages and latency at the connection; undefined on the local server or `--direct`.
   */
  proxy?: TcpProxy;
}

/** Every fault kind of the soak, in a fixed order. */
export function faultKinds({
  stack,
  apiFaults,
  workload,
  random,
  restartApiServer,
  proxy,
}: FaultContext): FaultKind[] {
  const faults = stackFaults(stack);
  const local = (f: (api: FaultInjector) => Promise<void>) => async () => {
    if (apiFaults) await f(apiFaults);
  };
  const localOnly = apiFaults ? undefined : 'a real API server: only the local one can inject it';
  /** Injectable on the local server, or at the proxy in front of a real one. */
  const connection =
    apiFaults || proxy ? undefined : 'a real API server reached directly (--direct): no proxy to inject it';
  const either =
    (onLocal: (api: FaultInjector) => Promise<void>, onProxy: (p: TcpProxy) => Promise<void>) => async () => {
      if (apiFaults) await onLocal(apiFaults);
      else if (proxy) await onProxy(proxy);
    };
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
      description: proxy
        ? "every connection of the stack's processes to the API server reset at the soak's TCP proxy (watches and requests in flight); the informers re-watch from their resourceVersion"
        : 'every open watch reset (connections destroyed); the informers re-watch from their resourceVersion',
      skipped: connection,
      inject: either(
        async (api) => {
          api.dropWatches('reset');
        },
        async (p) => {
          p.resetAll();
        },
      ),
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
      description: proxy
        ? "the API server unreachable from the stack for 5 s: every connection reset and every new one refused at the soak's TCP proxy (the server runs on)"
        : "the API server down for 5 s: every connection reset, every request held (the local server keeps its store, as kube-apiserver's etcd does; it cannot be restarted as a process)",
      skipped: connection,
      inject: either(
        async (api) => {
          api.pause();
          api.dropWatches('reset');
          await sleep(5_000);
          api.resume();
        },
        async (p) => {
          p.refuse(true);
          p.resetAll();
          await sleep(5_000);
          p.refuse(false);
        },
      ),
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
      description: proxy
        ? "every byte from the API server to the stack held 1–2 s more for 15 s at the soak's TCP proxy (clock-skew-sized delays)"
        : 'every request delayed 1–2 s for 15 s (clock-skew-sized delays)',
      skipped: connection,
      inject: either(
        async (api) => {
          const remove = api.addLatency({}, random.int(1000, 2000));
          await sleep(15_000);
          remove();
        },
        async (p) => {
          const remove = p.delay(random.int(1000, 2000));
          await sleep(15_000);
          remove();
        },
      ),
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
      name: 'apiserver-restart',
      description:
        "the real API server restarted by the operator's `--restart-apiserver-command` (its process stopped and started again, etcd kept), then /readyz awaited: every watch and connection is cut",
      skipped: apiFaults
        ? 'the local API server runs in the soak process: apiserver-outage stands for its restart'
        : restartApiServer
          ? undefined
          : 'no --restart-apiserver-command given',
      inject: async () => {
        await restartApiServer?.();
      },
    },
    {
      name: 'relay-kill',
      restarts: 'relay',
      description: 'the relay SIGKILLed (its collapsed keys lost), started again after 1 s',
      inject: async () => {
        await faults.killRelay();
        await sleep(1_000);
        await stack.startRelay();
      },
    },
    {
      name: 'function-kill',
      restarts: 'reconcile',
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
      restarts: 'pubsub-emulator',
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

/**
 * A real API server's restart by an operator's shell command (`--restart-apiserver-command`: e.g. a
 * `systemctl restart kube-apiserver`, a `docker restart`, a script that kills and starts the
 * process): runs `command` under `sh -c` (at most `timeoutMs`), then waits until `GET /readyz`
 * answers `200` with the kubeconfig's credentials. The command must return once the restart is
 * under way or done; its output is logged.
 * @throws when the command fails or times out, or the server is not ready `timeoutMs` after it
 */
export function restartApiServerBy(
  command: string,
  kubeConfig: KubeConfig,
  log: (line: string) => void,
  timeoutMs = 180_000,
): () => Promise<void> {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig names no server');
  const readyz = new URL('/readyz', server);
  const ready = async (): Promise<boolean> => {
    const options: https.RequestOptions = {};
    await kubeConfig.applyToHTTPSOptions(options);
    return new Promise((resolve) => {
      const req = (readyz.protocol === 'https:' ? https : http).request(
        readyz,
        { ...options, method: 'GET', timeout: 2_000 },
        (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        },
      );
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
      req.end();
    });
  };
  return async () => {
    const deadline = Date.now() + timeoutMs;
    const { stdout, stderr } = await exec('sh', ['-c', command], { timeout: timeoutMs });
    for (const line of `${stdout}${stderr}`.trim().split('\n').filter(Boolean))
      log(`restart-apiserver: ${line}`);
    while (!(await ready())) {
      if (Date.now() > deadline)
        throw new Error(`${readyz.href} not ready ${timeoutMs / 1000} s after the restart`);
      await sleep(500);
    }
  };
}

/**
 * The fault of each of `slots` slots (undefined: none), in a seeded order. A run long enough to give
 * every kind five slots (`slots ≥ 5 × kinds`) injects each kind `perKind` times (five per 30
 * minutes: `perKind` of the caller), at random slots, and the kinds that restart a sampled process
 * ({@link FaultKind.restarts}: the relay, `reconcile`, the emulator) only in the first third of the
 * slots (or as many as they need), so that each of these processes then lives on unkilled for the
 * rest of the run: its memory slope is fitted over that last long life, not over minutes between
 * kills. A shorter run (the smoke) runs rounds of every kind in a shuffled order, slot by slot.
 */
export function faultSchedule(
  kinds: readonly FaultKind[],
  slots: number,
  perKind: number,
  random: Random,
): (FaultKind | undefined)[] {
  const shuffle = <T>(items: T[]): T[] => {
    for (let i = items.length - 1; i > 0; i--) {
      const j = random.int(0, i);
      [items[i], items[j]] = [items[j] as T, items[i] as T];
    }
    return items;
  };
  if (kinds.length === 0 || slots < 5 * kinds.length || slots < perKind * kinds.length) {
    const order: FaultKind[] = [];
    return Array.from({ length: slots }, () => {
      if (order.length === 0) order.push(...shuffle([...kinds]));
      return order.shift();
    });
  }
  const schedule: (FaultKind | undefined)[] = Array.from({ length: slots }, () => undefined);
  const restarting = kinds.filter((k) => k.restarts);
  const early = Math.max(restarting.length * perKind, Math.ceil(slots / 3));
  const place = (kind: FaultKind, free: number[]) => {
    for (let n = 0; n < perKind; n++) schedule[free.pop() as number] = kind;
  };
  const earlyFree = shuffle(Array.from({ length: early }, (_, i) => i));
  for (const kind of restarting) place(kind, earlyFree);
  const free = shuffle(schedule.flatMap((k, i) => (k ? [] : [i])));
  for (const kind of kinds.filter((k) => !k.restarts)) place(kind, free);
  return schedule;
}
