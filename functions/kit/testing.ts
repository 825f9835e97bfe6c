/**
 * Test helpers shipped with the kit (as functions-framework ships its testing module): reconcile a
 * controller once against an API server (the project's local one in a unit-sized test, or a real
 * cluster) and assert the API requests it made.
 *
 *   const cluster = await startTestCluster();            // test/support/cluster.ts
 *   const t = reconcilerForTest(icecream, cluster.kubeconfigPath);
 *   const run = await t.reconcile({ namespace, name });  // → { requests, result, error }
 *   assert.deepEqual(run.requests, ['GET /apis/…/icecreams/x', 'GET /apis/apps/v1/…/deployments', …]);
 */
import type { RequestContext } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { Controller, ReconcileContext, Result } from '../contract/controller.ts';
import { DEFAULT_CLUSTER, type Key } from '../contract/key.ts';
import { TerminalError } from '../k8s/errors.ts';
import { createEventRecorder } from '../k8s/events.ts';
import type { Logger } from '../log.ts';
import { PooledKubeConfig } from '../pooled-kubeconfig.ts';

/**
 * A KubeConfig that records every API request made through it, so a test can assert how many
 * requests a reconcile makes (and which). Works on the local API server and on a real cluster.
 */
export class CountingKubeConfig extends PooledKubeConfig {
  /** `METHOD path`, or `METHOD path?query` when constructed with `{ query: true }`; oldest first. */
  requests: string[] = [];
  readonly #query: boolean;

  constructor(options: { query?: boolean } = {}) {
    super();
    this.#query = options.query ?? false;
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    const url = new URL(context.getUrl());
    this.requests.push(`${context.getHttpMethod()} ${url.pathname}${this.#query ? url.search : ''}`);
    return super.applySecurityAuthentication(context);
  }
}

/** One reconcile's outcome, as the `reconcile` function would see it. */
export interface ReconcileRun {
  /** The API requests made (`METHOD path`, with `?query` when asked), the Events' included. */
  requests: string[];
  result?: Result | undefined;
  /** A {@link TerminalError} (its Warning Event recorded, as the runtime does); other errors are thrown. */
  error?: TerminalError;
}

export interface ReconcilerForTest {
  /** Reconciles `key` once; throws what a retry would answer (anything but a TerminalError). */
  reconcile(key: Key): Promise<ReconcileRun>;
  kubeConfig: CountingKubeConfig;
  /**
   * With `options.otherClusters`: each other cluster's request-recording KubeConfig, by id (its
   * `requests` are reset at each {@link ReconcilerForTest.reconcile}, as the own cluster's are).
   */
  otherKubeConfigs: ReadonlyMap<string, CountingKubeConfig>;
  ctx: ReconcileContext;
}

/**
 * Runs `controller`'s reconcile with a request-recording KubeConfig loaded from `kubeconfigPath`.
 * @param options.query record query strings too (e.g. to assert a LIST's `labelSelector`)
 * @param options.log a logger (default silent)
 * @param options.cluster the reconcile's cluster id (default `default`)
 * @param options.otherClusters other clusters of the deployment, id → kubeconfig file: the
 *   reconcile gets them as the runtime's registry (`ctx.clusters`), for children in other clusters
 */
export function reconcilerForTest(
  controller: Controller,
  kubeconfigPath: string,
  options: {
    query?: boolean;
    log?: Logger;
    cluster?: string;
    otherClusters?: Readonly<Record<string, string>>;
  } = {},
): ReconcilerForTest {
  const counting = (path: string) => {
    const kc = new CountingKubeConfig({ query: options.query ?? false });
    kc.loadFromFile(path);
    return kc;
  };
  const kubeConfig = counting(kubeconfigPath);
  const others = new Map(
    Object.entries(options.otherClusters ?? {}).map(([id, path]) => [id, counting(path)]),
  );
  const cluster = options.cluster ?? DEFAULT_CLUSTER;
  const log = options.log ?? pino({ level: 'silent' });
  const ctx: ReconcileContext = {
    cluster,
    kubeConfig,
    log,
    events: createEventRecorder(kubeConfig, controller.name, log),
    ...(options.otherClusters
      ? {
          clusters: {
            ids: [cluster, ...others.keys()],
            kubeConfig: (id: string) => (id === cluster ? kubeConfig : others.get(id)),
          },
        }
      : {}),
  };
  return {
    kubeConfig,
    otherKubeConfigs: others,
    ctx,
    async reconcile(key) {
      kubeConfig.requests = [];
      for (const kc of others.values()) kc.requests = [];
      try {
        const result = await controller.reconcile(key, ctx);
        return { requests: kubeConfig.requests, result };
      } catch (err) {
        if (!(err instanceof TerminalError)) throw err;
        if (err.object) await ctx.events.record(err.object, 'Warning', err.reason, err.message);
        return { requests: kubeConfig.requests, error: err };
      }
    },
  };
}
