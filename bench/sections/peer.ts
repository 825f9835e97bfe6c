/**
 * Section `peer`: Levelset beside the controller of the tutorials, kubernetes/sample-controller
 * (client-go informers, a rate-limited workqueue, two workers), on the same real kube-apiserver with
 * its kube-controller-manager. Run only when given the peer's binaries and the cluster:
 *
 *   npm run bench -- --only peer --out bench/peer \
 *     --kubeconfig PATH --peer sample-controller=PATH --peer sample-controller-unthrottled=PATH
 *
 * `sample-controller` is the peer with client-go's default client-side throttle (5 requests/s, burst
 * 10); `sample-controller-unthrottled` the peer without a client-side throttle (as controller-runtime
 * runs since v0.21), the baseline when given. Neither binary, nor its source or a script that builds
 * it, is in this repository: each user brings their own.
 *
 * For each size N (`--peer-sizes`, default 200 and 1000) and each contender alone — the peers, then
 * `levelset run --in-process` and the serverless stack of `levelset dev --cluster kubeconfig` (relay →
 * Pub/Sub emulator → functions), each running examples/foo's controller only — in a namespace of its
 * own: N Foos created from this process (8 requests at once), timed until the bench's one watch sees
 * every Deployment with the Foo's replicas; then every Foo's `spec.replicas` patched (8 at once),
 * timed likewise. Requests per Foo from the API server's own `apiserver_request_total` (its
 * `/metrics`, before and after each phase) for `foos` and `deployments`, less the bench's own creates
 * and patches of the Foos and its watch: the controller's and kube-controller-manager's (the same
 * for every contender). Rejected writes: writes answered 409, 403 or 422. CPU per Foo: the
 * contender's processes' (/proc: the peer; Levelset's relay and functions, or its in-process
 * process), the API server's (`process_cpu_seconds_total` of the same `/metrics`), and, serverless,
 * the Pub/Sub emulator's (a local stand-in; the local push proxies run in the bench's process and are
 * counted nowhere; the local stack's delivery watchdog, a second reader of every key, does not run). On 2 cores every process shares the machine: CPU says where the time goes. The contender stops and its
 * namespace is gone before the next one starts. With `--push-model cloud`, one more contender: the
 * serverless stack with the `cloud` push model (local/push-window.ts), its figures labelled modelled.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  RequestContext,
  type V1Deployment,
} from '@kubernetes/client-node';
import { parsePrometheusText } from '../../cli/impl/watch.ts';
import { loadKubeConfig } from '../../core/kube.ts';
import { waitFor } from '../../functions/kit/wait.ts';
import { repoRoot } from '../../local/service.ts';
import { type AnyLocalStack, type PushModel, STACK_MODES, type StackMode } from '../../local/stack.ts';
import type { PeerOptions, Section, SectionEnv } from '../environment.ts';
import { type Figure, figuresOf } from '../report.ts';
import {
  applyCrds,
  FOOS,
  merge,
  now,
  pool,
  processTreeCpuSeconds,
  stopChild,
  watchObjects,
} from '../support.ts';

/** The baseline peer when given: no client-side throttle, as controller-runtime since v0.21. */
export const UNTHROTTLED = 'sample-controller-unthrottled';
/** Requests the bench sends at once (creates, patches), as one process driving the changes. */
const DRIVER_CONCURRENCY = 8;
/** ms a phase (every Deployment created, or updated) may take before the run gives up on it. */
const PHASE_DEADLINE_MS = 15 * 60_000;
const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'DELETECOLLECTION', 'APPLY']);
const READ_VERBS = new Set(['GET', 'LIST']);
const REJECTED_CODES = new Set(['409', '403', '422']);

/** `apiserver_request_total` for foos and deployments, by `verb|resource|code`. */
type RequestCounts = Map<string, number>;

/** One scrape of the API server's `/metrics`: its request counts, and its `process_cpu_seconds_total` (NaN when absent). */
interface Scrape {
  requests: RequestCounts;
  cpuSeconds: number;
}

/** Requests of one phase, per kind, by the controller and kube-controller-manager (the bench's own taken out). */
interface PhaseRequests {
  reads: number;
  watches: number;
  writes: number;
  rejected: number;
}

/** CPU seconds a phase cost, by whom. */
interface PhaseCpu {
  /** The controller's own processes (the peer; Levelset's relay and functions, or its in-process process). */
  controller: number;
  /** The API server's process (its `process_cpu_seconds_total`); NaN when its metrics have none. */
  apiServer: number;
  /** The local stand-ins of Google Cloud's services (the Pub/Sub emulator); 0 for the others. */
  standIns: number;
}

interface PhaseResult {
  ms: number;
  requests: PhaseRequests;
  cpu: PhaseCpu;
}

interface ContenderResult {
  name: string;
  n: number;
  create: PhaseResult;
  update: PhaseResult;
}

/**
 * The API server's `apiserver_request_total` counters for `foos` and `deployments`, and its CPU.
 * @throws {Error} when `/metrics` cannot be read (the user needs `get` on the `/metrics` non-resource URL)
 */
async function scrape(kc: KubeConfig): Promise<Scrape> {
  const text = await getText(kc, '/metrics');
  const counts: RequestCounts = new Map();
  let cpuSeconds = Number.NaN;
  for (const m of parsePrometheusText(text)) {
    if (m.name === 'process_cpu_seconds_total') cpuSeconds = m.value;
    const { verb = '', resource = '', code = '' } = m.labels;
    if (m.name !== 'apiserver_request_total' || (resource !== 'foos' && resource !== 'deployments')) continue;
    const key = `${verb}|${resource}|${code}`;
    counts.set(key, (counts.get(key) ?? 0) + m.value);
  }
  return { requests: counts, cpuSeconds };
}

/** The requests between two scrapes, less the bench's own (`own`: `verb|resource` → count, all answered 2xx). */
function phaseRequests(
  before: RequestCounts,
  after: RequestCounts,
  own: Record<string, number>,
): PhaseRequests {
  const out: PhaseRequests = { reads: 0, watches: 0, writes: 0, rejected: 0 };
  for (const [key, value] of after) {
    const [verb = '', , code = ''] = key.split('|');
    const delta = value - (before.get(key) ?? 0);
    if (READ_VERBS.has(verb)) out.reads += delta;
    else if (verb === 'WATCH') out.watches += delta;
    else if (WRITE_VERBS.has(verb)) {
      out.writes += delta;
      if (REJECTED_CODES.has(code)) out.rejected += delta;
    }
  }
  for (const [key, count] of Object.entries(own)) {
    const [verb = ''] = key.split('|');
    if (READ_VERBS.has(verb)) out.reads -= count;
    else if (verb === 'WATCH') out.watches -= count;
    else out.writes -= count;
  }
  return out;
}

/** A running contender: stopped by `stop()`. */
interface Running {
  /** Its processes' CPU seconds so far ({@link processTreeCpuSeconds}): its own, and the local stand-ins'. */
  cpu(): { controller: number; standIns: number };
  stop(): Promise<void>;
}

/** The CPU of a phase: the contender's between `before` and `after`, the API server's between two scrapes. */
function phaseCpu(
  before: ReturnType<Running['cpu']>,
  after: ReturnType<Running['cpu']>,
  m0: Scrape,
  m1: Scrape,
): PhaseCpu {
  return {
    controller: after.controller - before.controller,
    standIns: after.standIns - before.standIns,
    apiServer: m1.cpuSeconds - m0.cpuSeconds,
  };
}

/** Starts a peer binary on the cluster; resolves once it logs that its workers started (its caches synced). */
async function startPeer(path: string, kubeconfigPath: string): Promise<Running> {
  const child: ChildProcess = spawn(path, ['-kubeconfig', kubeconfigPath], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8192);
  });
  await waitFor(() => /Started workers/.test(output) || child.exitCode !== null, {
    timeoutMs: 60_000,
    intervalMs: 100,
    message: `${path} started its workers`,
  });
  if (child.exitCode !== null) throw new Error(`${path} exited ${child.exitCode}: ${output.slice(-500)}`);
  return {
    cpu: () => ({ controller: processTreeCpuSeconds(child.pid ?? 0), standIns: 0 }),
    stop: () => stopChild(child),
  };
}

/** Runs one contender on `n` Foos in a namespace of its own, then removes the namespace. */
async function runContender(
  env: SectionEnv,
  options: PeerOptions,
  name: string,
  n: number,
  start: () => Promise<Running>,
): Promise<ContenderResult> {
  // Levelset's pooled KubeConfig: the bench's writes share one connection, as a client-go driver's
  // would. client-node's own opens one per request, and every contender's figures then carried a
  // TLS handshake per Foo written by the bench (a fifth of the API server's CPU in an update phase).
  const kc = loadKubeConfig(options.kubeconfigPath, {});
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const ns = `peer-${name.replace(/[^a-z0-9]+/g, '-')}-${n}-${randomBytes(2).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name: ns } } });
  const deployments = watchObjects(kc, `/apis/apps/v1/namespaces/${ns}/deployments`);
  await deployments.ready;
  const running = await start();
  const names = Array.from({ length: n }, (_, i) => `foo-${i}`);
  const allAt = (replicas: number) => () =>
    names.every((f) => (deployments.get(ns, f) as V1Deployment | undefined)?.spec?.replicas === replicas);
  try {
    env.log(`peer: ${name}, ${n} Foos created`);
    const m0 = await scrape(kc);
    const c0 = running.cpu();
    const t0 = now();
    await pool(names, DRIVER_CONCURRENCY, (foo) =>
      custom.createNamespacedCustomObject({
        ...FOOS,
        namespace: ns,
        body: {
          apiVersion: `${FOOS.group}/${FOOS.version}`,
          kind: 'Foo',
          metadata: { name: foo },
          spec: { deploymentName: foo, replicas: 1 },
        },
      }),
    );
    const createdAt = await deployments.until(allAt(1), PHASE_DEADLINE_MS);
    const m1 = await scrape(kc);
    const c1 = running.cpu();
    env.log(`peer: ${name}, ${n} Foos updated`);
    const t1 = now();
    await pool(names, DRIVER_CONCURRENCY, (foo) =>
      custom.patchNamespacedCustomObject(
        { ...FOOS, namespace: ns, name: foo, body: { spec: { replicas: 2 } } },
        merge,
      ),
    );
    const updatedAt = await deployments.until(allAt(2), PHASE_DEADLINE_MS);
    const m2 = await scrape(kc);
    const c2 = running.cpu();
    return {
      name,
      n,
      // The bench's own: its creates (first phase) and patches (second) of the Foos; its one watch
      // opened before the first scrape.
      create: {
        ms: createdAt - t0,
        requests: phaseRequests(m0.requests, m1.requests, { 'POST|foos': n }),
        cpu: phaseCpu(c0, c1, m0, m1),
      },
      update: {
        ms: updatedAt - t1,
        requests: phaseRequests(m1.requests, m2.requests, { 'PATCH|foos': n }),
        cpu: phaseCpu(c1, c2, m1, m2),
      },
    };
  } finally {
    await running.stop();
    deployments.stop();
    await core.deleteNamespace({ name: ns });
    await waitFor(
      () =>
        core.readNamespace({ name: ns }).then(
          () => false,
          () => true,
        ),
      { timeoutMs: PHASE_DEADLINE_MS, intervalMs: 1000, message: `namespace ${ns} gone` },
    );
  }
}

/** The figures of one size: each contender's times and requests per Foo beside the baseline's. */
function peerFigures(results: readonly ContenderResult[], baselineName: string): Figure[] {
  const figure = figuresOf('peer');
  const baseline = results.find((r) => r.name === baselineName);
  const figures: Figure[] = [];
  for (const r of results) {
    const against = (of: (x: ContenderResult) => number) =>
      baseline && r !== baseline ? { name: baselineName, value: of(baseline) } : undefined;
    const perFoo = (phase: 'create' | 'update', kind: keyof PhaseRequests) => (x: ContenderResult) =>
      Math.round((x[phase].requests[kind] / x.n) * 100) / 100;
    for (const phase of ['create', 'update'] as const) {
      const verb = phase === 'create' ? 'created' : 'replicas patched';
      const seconds = (x: ContenderResult) => Math.round(x[phase].ms / 10) / 100;
      figures.push(
        figure(`${r.name}: ${r.n} Foos ${verb} → every Deployment, time`, seconds(r), 's', against(seconds)),
        figure(
          `${r.name}: ${r.n} Foos ${verb}, reads per Foo (GET, LIST)`,
          perFoo(phase, 'reads')(r),
          'requests',
          against(perFoo(phase, 'reads')),
        ),
        figure(
          `${r.name}: ${r.n} Foos ${verb}, writes per Foo`,
          perFoo(phase, 'writes')(r),
          'requests',
          against(perFoo(phase, 'writes')),
        ),
        figure(
          `${r.name}: ${r.n} Foos ${verb}, rejected writes per Foo (409, 403, 422)`,
          perFoo(phase, 'rejected')(r),
          'requests',
          against(perFoo(phase, 'rejected')),
        ),
      );
      const cpuPerFoo = (kind: keyof PhaseCpu) => (x: ContenderResult) =>
        Math.round((x[phase].cpu[kind] / x.n) * 100_000) / 100;
      figures.push(
        figure(
          `${r.name}: ${r.n} Foos ${verb}, controller CPU per Foo`,
          cpuPerFoo('controller')(r),
          'ms',
          against(cpuPerFoo('controller')),
        ),
      );
      if (Number.isFinite(r[phase].cpu.apiServer))
        figures.push(
          figure(
            `${r.name}: ${r.n} Foos ${verb}, API server CPU per Foo`,
            cpuPerFoo('apiServer')(r),
            'ms',
            against(cpuPerFoo('apiServer')),
          ),
        );
      if (r[phase].cpu.standIns > 0)
        figures.push(
          figure(
            `${r.name}: ${r.n} Foos ${verb}, Pub/Sub emulator CPU per Foo (local stand-in)`,
            cpuPerFoo('standIns')(r),
            'ms',
          ),
        );
    }
  }
  return figures;
}

export const peer: Section = {
  name: 'peer',
  async run(env) {
    const options = env.peer;
    if (!options || Object.keys(options.binaries).length === 0)
      return {
        figures: [],
        notes: [
          'peer: skipped (it needs --kubeconfig of a real kube-apiserver with kube-controller-manager and --peer sample-controller=PATH, a binary built outside this repository)',
        ],
      };
    await applyCrds(options.kubeconfigPath, ['foo']);
    const registry = join(repoRoot, 'examples', 'foo', 'controllers', 'index.ts');
    const baselineName = options.binaries[UNTHROTTLED]
      ? UNTHROTTLED
      : (Object.keys(options.binaries)[0] as string);
    const figures: Figure[] = [];
    for (const n of options.sizes) {
      const results: ContenderResult[] = [];
      for (const [name, path] of Object.entries(options.binaries))
        results.push(
          await runContender(env, options, name, n, () => startPeer(path, options.kubeconfigPath)),
        );
      const levelset: { name: string; mode: StackMode; pushModel?: PushModel }[] = [
        ...STACK_MODES.map((mode) => ({ name: `levelset ${mode}`, mode })),
        ...(env.pushModel === 'cloud'
          ? [
              {
                name: 'levelset serverless (modelled push)',
                mode: 'serverless' as const,
                pushModel: 'cloud' as const,
              },
            ]
          : []),
      ];
      for (const { name, mode, pushModel } of levelset)
        results.push(
          await runContender(env, options, name, n, async () => {
            const stack: AnyLocalStack = await env.startLocalStack({
              mode,
              ...(pushModel ? { pushModel } : {}),
              kubeconfigPath: options.kubeconfigPath,
              registry,
              resyncOnDemand: true,
              // The local stack's guard of its emulator reads every key a second time; the
              // serverless path on Google Cloud has no such reader (docs/architecture.md decision 76).
              deliveryWatchdog: false,
              env: { LOG_LEVEL: 'warn' },
            });
            // Levelset's processes: the relay (in-process: the one process) and the functions;
            // the emulator is the local stand-in of Cloud Pub/Sub. The push proxies run in this
            // process, beside the bench's driver, and are counted in neither.
            const pids = () =>
              stack.mode === 'serverless'
                ? {
                    controller: [stack.relay()?.pid, stack.reconcile.pid],
                    standIns: [stack.emulator.pid],
                  }
                : { controller: [stack.relay()?.pid], standIns: [] };
            const sum = (list: (number | undefined)[]) =>
              list.reduce<number>((total, pid) => total + (pid ? processTreeCpuSeconds(pid) : 0), 0);
            return {
              cpu: () => {
                const { controller, standIns } = pids();
                return { controller: sum(controller), standIns: sum(standIns) };
              },
              stop: () => stack.stop(),
            };
          }),
        );
      figures.push(...peerFigures(results, baselineName));
    }
    const server = await serverVersion(options.kubeconfigPath);
    return {
      figures,
      notes: [
        `peer: on kube-apiserver ${server} (with kube-controller-manager, no kubelet or scheduler); peers: ${Object.keys(
          options.binaries,
        ).join(
          ', ',
        )} (builds kept outside the repository: their paths are not reported); baseline ${baselineName}; the serverless figures go through the Pub/Sub emulator's push loop (at most 2 pushes in flight per subscription), not Cloud Pub/Sub's${
          env.pushModel === 'cloud'
            ? "; those labelled modelled push with a model of Cloud Pub/Sub's push window instead (local/push-window.ts)"
            : ''
        }`,
      ],
    };
  },
};

/**
 * GETs `path` of `kc`'s current cluster with its credentials and TLS (client-node's RequestContext
 * and fetch library, as its generated clients send): the body as text.
 * @throws {Error} on an answer outside 2xx
 */
async function getText(kc: KubeConfig, path: string): Promise<string> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  const context = new RequestContext(cluster.server + path, HttpMethod.GET);
  await kc.applySecurityAuthentication(context);
  const res = await new IsomorphicFetchHttpLibrary().send(context).toPromise();
  const text = await res.body.text();
  if (res.httpStatusCode < 200 || res.httpStatusCode > 299)
    throw new Error(`GET ${path} answered ${res.httpStatusCode}`);
  return text;
}

/** The server's `gitVersion`, from `/version`. */
async function serverVersion(kubeconfigPath: string): Promise<string> {
  const kc = loadKubeConfig(kubeconfigPath, {});
  return (JSON.parse(await getText(kc, '/version')) as { gitVersion?: string }).gitVersion ?? 'unknown';
}
