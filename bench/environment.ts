/**
 * What a bench section runs against, and the sizes it runs at. A section is a function from a
 * {@link SectionEnv} to a {@link SectionOutput}; the driver (bench/run.ts) starts only what a section
 * asks for: a local API server of its own ({@link SectionEnv.apiServer}, empty but for the CRDs, so
 * that a section measures the same alone (`--only`) as in a full run), and the Pub/Sub emulator
 * ({@link SectionEnv.emulator}, one per run, started at the first section that asks).
 */

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { PooledKubeConfig } from '../core/pooled-kubeconfig.ts';
import { createKeyPublisher, emulatorClientOptions } from '../core/publish.ts';
import { PRELOAD } from '../local/parent-watch.ts';
import type { PubSubEmulator } from '../local/pubsub-emulator.ts';
import { repoRoot } from '../local/service.ts';
import type { PushModel, startLocalStack } from '../local/stack.ts';
import type { CostRow } from './cost.ts';
import type { Figure, Series } from './report.ts';
import { applyCrds, FOOS, log, quiet, stopChild, waitForServed } from './support.ts';

/** How much each section does in a full run (`npm run bench`); the tiny run's in {@link sizesFor}. */
export const FULL_SIZES = {
  /** Sequential changes per kind (Secret, Foo) and mode in the e2e section. */
  e2eChanges: 200,
  /**
   * Objects changed in turn, so that one changes again only after the relay's collapse window: 16
   * changes later, beyond the serverless relay's 250 ms.
   */
  rotation: 16,
  /** Target namespaces of the replicated Secret. */
  targets: 3,
  /** Foos created at once (throughput). */
  foos: 1000,
  /** Isolated changes, each mode (collapse). */
  isolated: 50,
  /** Updates to one object within ~1 s (collapse). */
  burst: 1000,
  objects: 100,
  objectUpdates: 50,
  /** The relay's collapse window, ms. */
  collapseMs: 250,
  /** ConfigMaps watched by the informer-RSS children, and listed by the resync, at two sizes. */
  rssSmall: 10_000,
  rssLarge: 100_000,
  coldStarts: 5,
  /** Resync keys pending while live changes are made (resync-priority). */
  priorityBacklog: 5_000,
  /** Live changes per run (resync-priority). */
  priorityChanges: 20,
  /** Runs of the resync-priority measurement, each on a stack of its own; its figures are their medians. */
  priorityRuns: 3,
  pipelineEvents: 200_000,
  publishKeys: 5_000,
  tracedReconciles: 1000,
  /** Sequential reviews to a warm webhook, and Foo creates with and without webhooks (admission section). */
  admissionCalls: 500,
  admissionCreates: 200,
  topics: 20,
  fleetFoos: 200,
  /** Namespace counts of the API-cost section. */
  namespaces: [10, 100, 1000],
  /** Reconciles per controller and state in the cost section's function process. */
  costReconciles: 200,
  /** In-process pod idle time the cost section reads its CPU over, ms. */
  costIdleMs: 10_000,
  /** Traced Secret changes, and Foos created at once, in the breakdown section. */
  tracedChanges: 100,
  tracedFoos: 200,
  /** Pushes through the push proxy and straight (breakdown). */
  pushes: 500,
  /** Messages of the emulator's push backlog, and isolated messages (breakdown). */
  pushBacklog: 100,
  isolatedPushes: 30,
  /** Other keys published while one key fails, per run of the retries section. */
  retryOtherKeys: 100,
};

export type Sizes = typeof FULL_SIZES;

/**
 * Tiny sizes (npm test runs the bench once at these: every section's code runs, nothing is
 * measured to be read) or the full ones.
 */
export function sizesFor(tiny: boolean): Sizes {
  if (!tiny) return FULL_SIZES;
  return {
    e2eChanges: 4,
    rotation: 2,
    targets: 2,
    foos: 5,
    isolated: 4,
    burst: 50,
    objects: 3,
    objectUpdates: 10,
    collapseMs: 250,
    rssSmall: 50,
    rssLarge: 200,
    coldStarts: 1,
    priorityBacklog: 100,
    priorityChanges: 3,
    priorityRuns: 1,
    pipelineEvents: 5000,
    publishKeys: 200,
    tracedReconciles: 20,
    admissionCalls: 20,
    admissionCreates: 10,
    topics: 3,
    fleetFoos: 3,
    namespaces: [2, 4, 8],
    costReconciles: 5,
    costIdleMs: 1000,
    tracedChanges: 4,
    tracedFoos: 5,
    pushes: 20,
    pushBacklog: 10,
    isolatedPushes: 5,
    retryOtherKeys: 5,
  };
}

/** A local API server in a process of its own, with the bench's clients of it. */
export interface ApiServer {
  kubeconfigPath: string;
  kc: PooledKubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  createNs(name: string): Promise<unknown>;
  /** Creates Foo `name` in `namespace` (1 replica, its Deployment named alike). */
  createFoo(namespace: string, name: string): Promise<unknown>;
  stop(): Promise<void>;
}

/** The emulator the run shares, a client of it, and a key publisher on a topic created for it. */
export interface Emulator {
  emulator: PubSubEmulator;
  pubsub: PubSub;
  /** The environment variables that point a child process's Pub/Sub clients at it. */
  childEnv: { PUBSUB_EMULATOR_HOST: string; GOOGLE_CLOUD_PROJECT: string };
  /** Creates `topic` and the relay's key publisher (core/publish.ts) on it. */
  publisherOnNewTopic(topic: string): Promise<ReturnType<typeof createKeyPublisher>>;
}

/** What `--peer NAME=PATH`, `--kubeconfig` and `--peer-sizes` gave (bench/run.ts), for bench/sections/peer.ts. */
export interface PeerOptions {
  /** Peer name → binary path, e.g. `sample-controller-unthrottled` → the path of a binary built outside the repository. */
  binaries: Record<string, string>;
  kubeconfigPath: string;
  /** Foos per run, e.g. `[200, 1000]`. */
  sizes: number[];
}

export interface SectionEnv {
  tiny: boolean;
  sizes: Sizes;
  log(line: string): void;
  /** This section's API server (started at the first call, with the Foo, CustomCluster and IceCream CRDs, the Foos served). */
  apiServer(): Promise<ApiServer>;
  /** Another API server, empty but for those CRDs, stopped with the section (e.g. the fleet's second cluster). */
  anotherApiServer(): Promise<ApiServer>;
  /** The run's Pub/Sub emulator (started at the first call of the run). */
  emulator(): Promise<Emulator>;
  /**
   * local/stack.ts's `startLocalStack`, for the driver to know the stack: a signal that
   * interrupts the run stops it (the section still stops it itself when it is done).
   */
  startLocalStack: typeof startLocalStack;
  /** `--kubeconfig`, `--peer NAME=PATH` and `--peer-sizes`: the peer section's real cluster and binaries (bench/sections/peer.ts). */
  peer?: PeerOptions;
  /**
   * `--push-model cloud`: the sections that run the serverless path (e2e/throughput, peer) run it a
   * second time with the stack's `cloud` push model (local/push-window.ts) and report those figures
   * beside the emulator's, labelled modelled. Default `emulator`: the emulator's push only.
   */
  pushModel: PushModel;
}

/** The label of figures measured with the `cloud` push model (local/stack.ts `PushModel`). */
export const MODELLED_PUSH = "modelled: Cloud Pub/Sub's push window, local/push-window.ts";

/** What a section measured. */
export interface SectionOutput {
  figures: Figure[];
  notes?: string[];
  /** Latency samples for the report's CDF chart. */
  chart?: Series[];
  /** The cost section's per-controller rows (results.json `cost`). */
  cost?: CostRow[];
  /** The fleet section's two configurations (results.json `fleet`). */
  fleet?: Record<string, unknown>;
}

export interface Section {
  /** Its `--only` name. */
  name: string;
  run(env: SectionEnv): Promise<SectionOutput>;
}

/** The CRDs every API server of the bench gets (the controllers whose objects the sections create). */
const BENCH_CRDS = ['foo', 'customcluster', 'icecream'] as const;

/**
 * Starts the local API server in a process of its own (its sockets do not count against the bench
 * process's open-file limit: thousands of short requests per second), applies the bench's CRDs and
 * makes the clients.
 */
export async function startApiServer(): Promise<ApiServer> {
  const dir = mkdtempSync(join(tmpdir(), 'levelset-bench-apiserver-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  // It stops itself when the bench dies, as the local stack's children do (local/parent-watch.ts).
  const child = spawn(
    process.execPath,
    [
      `--import=${PRELOAD}`,
      join(repoRoot, 'apiserver', 'main.ts'),
      '--kubeconfig',
      kubeconfigPath,
      '--history',
      '20000',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  log(`local API server: pid ${child.pid}; bench: pid ${process.pid}`);
  const stop = async () => {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };
  const kc = new PooledKubeConfig(); // as every Levelset process loads it (core/kube.ts)
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('KUBECONFIG=')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`local apiserver exited with ${code}`)));
    });
    await applyCrds(kubeconfigPath, BENCH_CRDS);
    kc.loadFromFile(kubeconfigPath);
    await waitForServed(() => kc.makeApiClient(CustomObjectsApi).listClusterCustomObject(FOOS));
  } catch (err) {
    await stop();
    throw err;
  }
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  return {
    kubeconfigPath,
    kc,
    core,
    custom,
    createNs: (name) => core.createNamespace({ body: { metadata: { name } } }),
    createFoo: (namespace, name) =>
      custom.createNamespacedCustomObject({
        ...FOOS,
        namespace,
        body: {
          apiVersion: 'samplecontroller.k8s.io/v1alpha1',
          kind: 'Foo',
          metadata: { name },
          spec: { deploymentName: name, replicas: 1 },
        },
      }),
    stop,
  };
}

/** Wraps a started emulator with a client and a publisher factory. */
export function emulatorEnv(emulator: PubSubEmulator): Emulator {
  const pubsub = new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.host) });
  return {
    emulator,
    pubsub,
    childEnv: { PUBSUB_EMULATOR_HOST: emulator.host, GOOGLE_CLOUD_PROJECT: emulator.projectId },
    publisherOnNewTopic: async (topic) => {
      await pubsub.createTopic(topic);
      return createKeyPublisher({
        projectId: emulator.projectId,
        topic,
        emulatorHost: emulator.host,
        logger: quiet,
      });
    },
  };
}
