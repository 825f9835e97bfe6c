/**
 * The relay: for every watch of every controller it runs a metadata-only list+watch, maps each event
 * to the primary keys it affects, collapses repeats of a key inside a window and publishes one key
 * message per key (DESIGN.md "The flow", step 1). In-process API: `relay/main.ts` (the Deployment's
 * entry point), `npm start` and the tests all call {@link startRelay}.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { controllers as registry } from '../functions/controllers/index.ts';
import type { Controller, Key } from '../functions/controllers/types.ts';
import { createLogger, type Logger } from '../functions/log.ts';
import type { KeyPublisher } from '../functions/publish.ts';
import type { BackoffOptions } from './backoff.ts';
import type { CollapseMode } from './collapse.ts';
import { DEFAULT_COLLAPSE_MS, DEFAULT_PORT } from './config.ts';
import { startHealthServer } from './health.ts';
import { MetadataInformer } from './informer.ts';
import { createRelayMetrics, type RelayMetrics } from './metrics.ts';
import { type InformerPlan, KeyPipeline, planInformers } from './pipeline.ts';

export { DEFAULT_COLLAPSE_MS, DEFAULT_PORT } from './config.ts';

export interface RelayOptions {
  /** Cluster to list+watch; the identity needs `list` and `watch` on every watched resource. */
  kubeConfig: KubeConfig;
  /** Where key messages go (the shared publisher of `functions/publish.ts`). Not closed by the relay. */
  publisher: Pick<KeyPublisher, 'publish' | 'flush'>;
  /** Controllers to serve; default: the registry (`functions/controllers/index.ts`). */
  controllers?: readonly Controller[];
  /** Collapse window in ms; default {@link DEFAULT_COLLAPSE_MS}. */
  collapseMs?: number;
  /** Default `leading-trailing`; `trailing` is the pre-leading-edge behaviour (benchmark baseline). */
  collapseMode?: CollapseMode;
  /** Default: `createLogger('relay')`. */
  logger?: Logger;
  /** Port of the health/metrics server; default {@link DEFAULT_PORT}; 0 picks a free one. */
  port?: number;
  /** Bind address of the health/metrics server; default all interfaces. */
  host?: string;
  /** Tuning of every informer's restart loop (tests shorten these). */
  informers?: {
    backoff?: BackoffOptions;
    /** ms; default 60 000. */
    resetBackoffAfterMs?: number;
    /** How often discovery is polled while a resource is not served, in ms; default 5 000. */
    discoveryIntervalMs?: number;
  };
  /** Metrics to record into; default: a fresh registry. */
  metrics?: RelayMetrics;
}

/** What an informer of a running relay is doing (for tests and debugging). */
export interface InformerStatus {
  id: string;
  state: MetadataInformer['state'];
  synced: boolean;
  restarts: number;
  objects: number;
}

export interface Relay {
  /**
   * True once every informer's first LIST is in its cache (client-go's `WaitForCacheSync`). A
   * resource that is not served yet (its CRD absent) counts as synced with no objects: the relay
   * can be ready before a CRD exists, and picks the resource up when it appears.
   */
  ready(): boolean;
  /** Resolves when {@link ready} becomes true. */
  whenReady(): Promise<void>;
  /** Stops every informer, publishes the keys still in the collapse window, flushes the publisher, closes HTTP. */
  stop(): Promise<void>;
  /** Port of `/healthz`, `/readyz`, `/metrics`. */
  port: number;
  metrics: RelayMetrics;
  informers(): InformerStatus[];
}

/**
 * Starts the relay: the health/metrics server first, then every informer.
 * @throws when the health server cannot listen (e.g. `EADDRINUSE`).
 */
export async function startRelay(options: RelayOptions): Promise<Relay> {
  const logger = options.logger ?? createLogger('relay');
  const controllers = options.controllers ?? registry;
  const metrics = options.metrics ?? createRelayMetrics();
  const collapseMs = options.collapseMs ?? DEFAULT_COLLAPSE_MS;
  const plans = planInformers(controllers);

  for (const c of controllers) {
    if (
      !c.watches.some((w) => w.resource.group === c.primary.group && w.resource.plural === c.primary.plural)
    ) {
      logger.warn(
        { controller: c.name },
        'controller has no watch of its primary resource: primaryKeys() is empty',
      );
    }
  }

  const informers = new Map<string, MetadataInformer>();
  const primaryOf = new Map<string, MetadataInformer>();

  const pipeline = new KeyPipeline({
    collapseMs,
    collapseMode: options.collapseMode,
    publish: (m) => options.publisher.publish(m),
    primaryKeys: (controller): Key[] =>
      (primaryOf.get(controller)?.list() ?? []).map((o) => ({
        namespace: o.metadata?.namespace ?? '',
        name: o.metadata?.name ?? '',
      })),
    logger,
    metrics,
  });

  const makeInformer = (plan: InformerPlan) =>
    new MetadataInformer({
      kubeConfig: options.kubeConfig,
      resource: plan.resource,
      namespace: plan.namespace,
      labelSelector: plan.labelSelector,
      logger,
      backoff: options.informers?.backoff,
      resetBackoffAfterMs: options.informers?.resetBackoffAfterMs,
      discoveryIntervalMs: options.informers?.discoveryIntervalMs,
      onEvent: (event) => {
        metrics.eventsReceived.inc({ resource: plan.id, type: event.type });
        pipeline.handle(plan.routes, event);
      },
      onRestart: () => metrics.informerRestarts.inc({ resource: plan.id }),
    });

  for (const plan of plans) {
    const informer = makeInformer(plan);
    informers.set(plan.id, informer);
    metrics.informerSynced.set({ resource: plan.id }, 0);
    void informer.whenSynced().then(() => metrics.informerSynced.set({ resource: plan.id }, 1));
    for (const route of plan.routes) {
      if (route.primary && !primaryOf.has(route.controller.name))
        primaryOf.set(route.controller.name, informer);
    }
  }

  const notSynced = () => [...informers.values()].filter((i) => !i.hasSynced()).map((i) => i.id);
  const server = await startHealthServer({
    port: options.port ?? DEFAULT_PORT,
    host: options.host,
    notSynced,
    registry: metrics.registry,
  });

  for (const informer of informers.values()) informer.start();
  logger.info(
    {
      controllers: controllers.map((c) => c.name),
      informers: [...informers.keys()],
      collapseMs,
      port: server.port,
    },
    'relay started',
  );
  const allSynced = Promise.all([...informers.values()].map((i) => i.whenSynced())).then(() => {
    logger.info({ informers: informers.size }, 'relay ready: every informer synced');
  });

  let stopping: Promise<void> | undefined;
  return {
    port: server.port,
    metrics,
    ready: () => notSynced().length === 0,
    whenReady: () => allSynced,
    informers: () =>
      [...informers.values()].map((i) => ({
        id: i.id,
        state: i.state,
        synced: i.hasSynced(),
        restarts: i.restarts,
        objects: i.list().length,
      })),
    stop() {
      stopping ??= (async () => {
        logger.info({ pendingKeys: pipeline.pending }, 'relay stopping: stopping informers, flushing keys');
        await Promise.all([...informers.values()].map((i) => i.stop()));
        await pipeline.flush();
        try {
          await options.publisher.flush();
        } catch (err) {
          logger.error({ err }, 'publish failed');
        }
        await server.close();
        logger.info('relay stopped');
      })();
      return stopping;
    },
  };
}
