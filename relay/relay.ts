/**
 * The relay: for every watch of every controller it runs a metadata-only list+watch, maps each event
 * to the primary keys it affects, collapses repeats of a key inside a window and publishes one key
 * message per key (docs/architecture.md "The flow", step 1). In-process API: `relay/main.ts` (the Deployment's
 * process, given the project's registry), `npm start` and the tests all call {@link startRelay}.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { SpanContext } from '@opentelemetry/api';
import type { Controller, ResourceType } from '../core/contract/controller.ts';
import type { Key } from '../core/contract/key.ts';
import { createLogger, type Logger } from '../core/log.ts';
import type { KeyMessage } from '../core/message.ts';
import type { BackoffOptions } from './backoff.ts';
import type { CollapseMode } from './collapse.ts';
import { DEFAULT_COLLAPSE_MS, DEFAULT_PORT } from './config.ts';
import { startHealthServer } from './health.ts';
import { MetadataInformer } from './informer.ts';
import { createRelayMetrics, type RelayMetrics } from './metrics.ts';
import { type InformerPlan, KeyPipeline, planInformers } from './pipeline.ts';
import { SpecIndexes } from './spec-index.ts';

export { DEFAULT_COLLAPSE_MS, DEFAULT_PORT } from './config.ts';

export interface RelayOptions {
  /** Cluster to list+watch; the identity needs `list` and `watch` on every watched resource. */
  kubeConfig: KubeConfig;
  /** The id of that cluster, named in every key message (`RELAY_CLUSTER`); default `default`. */
  cluster?: string;
  /**
   * Where key messages go: the shared publisher of `core/publish.ts` (which takes the primary's
   * `resourceVersion`), or the in-process mode's workqueues (which take the key's `enqueue` span
   * context, recorded or not). Not closed by the relay.
   */
  publisher: {
    publish(message: KeyMessage, resourceVersion?: string, enqueue?: SpanContext): Promise<string>;
    flush(): Promise<void>;
  };
  /** Controllers to serve: the project's registry (core/project.ts) or a test's own. */
  controllers: readonly Controller[];
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
    /** ms a watch may stay silent (no event, no bookmark) before it is watched again; default 90 000. */
    watchSilenceTimeoutMs?: number;
    /** ms an informer may be unable to watch before `/readyz` fails; default {@link NOT_WATCHING_GRACE_MS}. */
    notWatchingGraceMs?: number;
  };
  /** Keys the publish retry buffer holds at most; default 10 000 (`relay/retry-buffer.ts`). */
  retryBufferKeys?: number;
  /** Key publishes pending at once at most (`RELAY_MAX_IN_FLIGHT`); default 1000 (`relay/pipeline.ts`). */
  maxInFlight?: number;
  /** Metrics to record into; default: a fresh registry. */
  metrics?: RelayMetrics;
  /** ms {@link Relay.stop} waits for the last publishes; default {@link STOP_FLUSH_TIMEOUT_MS}. */
  stopFlushTimeoutMs?: number;
  /**
   * Where an informer keeps whole objects (the in-process mode's cache,
   * functions/runtime/object-cache.ts): asked once per informer; one it answers lists and watches
   * whole objects and hands each one over before its event is handled, and its deletions.
   * Default: none (every informer metadata-only, decision 1).
   */
  objectStores?: (
    plan: Pick<InformerPlan, 'resource' | 'namespace' | 'labelSelector'>,
  ) => ObjectSinkLike | undefined;
  /**
   * The controller whose own write an event's object echoes (exactly the version its write
   * answered), called after the object store has it: that controller's watches skip the event
   * (counted as filtered), the others' handle it. The in-process mode's
   * (functions/runtime/object-cache.ts `InformerObjectCache.echoOf`); default none.
   */
  echoOf?: (resource: ResourceType, object: KubernetesObject) => string | undefined;
}

/** What {@link RelayOptions.objectStores} answers: whole objects in, deletions, the first LIST in. */
export interface ObjectSinkLike {
  put(object: KubernetesObject): void;
  /** `namespace/name` (or `name`) of an object gone. */
  remove(key: string): void;
  synced(): void;
}

/** What an informer of a running relay is doing (for tests and debugging). */
export interface InformerStatus {
  id: string;
  state: MetadataInformer['state'];
  synced: boolean;
  /** A watch stream is open now. */
  watching: boolean;
  restarts: number;
  objects: number;
}

/**
 * How long an informer may be without an open watch before the relay reports not ready: re-watching
 * after a clean close or a silence timeout takes a moment (client-node waits 1 s, doubling, between
 * re-watches) and must not flap `/readyz`; a failing list+watch does.
 */
export const NOT_WATCHING_GRACE_MS = 5_000;

/**
 * The longest {@link Relay.stop} waits for the keys it still holds to be published, in ms: after
 * it, they are given up (the periodic resync publishes every primary's key again). Under the local
 * stack's 10 s between SIGTERM and SIGKILL (local/service.ts) and well under Kubernetes' default
 * `terminationGracePeriodSeconds` of 30 s; a publish to an unreachable Pub/Sub otherwise retries
 * for `RELAY_PUBLISH_TIMEOUT_MS` (30 s).
 */
export const STOP_FLUSH_TIMEOUT_MS = 5_000;

/** What {@link Relay.stop} left undone. */
export interface RelayStopResult {
  /** The flush finished before {@link STOP_FLUSH_TIMEOUT_MS}. */
  flushed: boolean;
  /**
   * Keys not published when the stop gave up on them ({@link STOP_FLUSH_TIMEOUT_MS}) or whose
   * publish failed: publishes Pub/Sub had not accepted, keys in the retry buffer or the collapse
   * window. 0 after a complete flush.
   */
  unpublished: number;
}

export interface Relay {
  /**
   * True once every informer's first LIST is in its cache (client-go's `WaitForCacheSync`) and while
   * every informer can watch (none has been without an open watch for longer than the grace). A
   * resource that is not served yet (its CRD absent) counts as synced and watching with no objects:
   * the relay can be ready before a CRD exists, and picks the resource up when it appears.
   */
  ready(): boolean;
  /** Resolves when {@link ready} becomes true. */
  whenReady(): Promise<void>;
  /**
   * Stops taking work (every informer stops; no event is handled after), publishes the keys still
   * in the collapse window, flushes the publisher, closes HTTP. The flush is bounded: after
   * {@link RelayOptions.stopFlushTimeoutMs} the keys not yet published are dropped and logged
   * (`keys not published at stop`, an ERROR line with their count). Never rejects; idempotent.
   */
  stop(): Promise<RelayStopResult>;
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
  const { controllers } = options;
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
  const indexes = new SpecIndexes(controllers, logger);

  const pipeline = new KeyPipeline({
    cluster: options.cluster,
    collapseMs,
    collapseMode: options.collapseMode,
    publish: (m, enqueue, resourceVersion) => options.publisher.publish(m, resourceVersion, enqueue),
    primaryKeys: (controller): Key[] => primaryOf.get(controller)?.keys() ?? [],
    resourceVersionOf: (controller, key) => primaryOf.get(controller)?.resourceVersionOf(key),
    lookup: (controller, resource, key) => {
      for (const plan of plans) {
        if (plan.resource.group !== resource.group || plan.resource.kind !== resource.kind) continue;
        if (!plan.routes.some((r) => r.controller.name === controller)) continue;
        const found = informers.get(plan.id)?.get(key);
        if (found) return found;
      }
      return undefined;
    },
    byIndex: (controller, index, value) => indexes.keys(controller, index, value),
    logger,
    metrics,
    retryBufferKeys: options.retryBufferKeys,
    maxInFlight: options.maxInFlight,
  });

  metrics.trackPendingKeys(() => pipeline.pending);
  metrics.trackWaitingPublishes(() => pipeline.waitingPublishes);

  /** Controllers whose primary this plan watches and that declare spec indexes. */
  const indexedBy = (plan: InformerPlan) =>
    plan.routes.filter((r) => r.primary && indexes.has(r.controller.name)).map((r) => r.controller.name);
  /**
   * What the plan's watches read of an object's status (`Watch.readsStatus`), combined into one
   * value: a change of any one's passes the predicate of each (never fewer events than each alone).
   */
  const readsStatusOf = (plan: InformerPlan) => {
    const reading = plan.routes.filter((r) => r.watch.readsStatus);
    if (reading.length === 0) return {};
    return {
      readsStatus: (object: KubernetesObject) => reading.map((r) => r.watch.readsStatus?.(object) ?? null),
    };
  };
  const makeInformer = (plan: InformerPlan, indexed = indexedBy(plan)) => {
    const sink = options.objectStores?.(plan);
    const indexing =
      indexed.length > 0
        ? (object: KubernetesObject) => {
            for (const controller of indexed)
              if (indexes.update(controller, object))
                pipeline.enqueue(
                  controller,
                  { namespace: object.metadata?.namespace ?? '', name: object.metadata?.name ?? '' },
                  { cause: 'index', object, resource: plan.resource },
                );
          }
        : undefined;
    const informer = new MetadataInformer({
      ...readsStatusOf(plan),
      kubeConfig: options.kubeConfig,
      resource: plan.resource,
      namespace: plan.namespace,
      labelSelector: plan.labelSelector,
      logger,
      backoff: options.informers?.backoff,
      resetBackoffAfterMs: options.informers?.resetBackoffAfterMs,
      discoveryIntervalMs: options.informers?.discoveryIntervalMs,
      watchSilenceTimeoutMs: options.informers?.watchSilenceTimeoutMs,
      onActivity: () => metrics.watchLastEventTimestamp.set({ resource: plan.id }, Date.now() / 1000),
      onSilentWatch: () => metrics.watchSilenceRestarts.inc({ resource: plan.id }),
      onWatching: (watching) => metrics.informerWatching.set({ resource: plan.id }, watching ? 1 : 0),
      // Whole objects: for the index functions (a primary whose values changed is enqueued even
      // when its event is one the primary predicate drops), and for the object store.
      ...(indexing || sink
        ? {
            onObject: (object: KubernetesObject) => {
              sink?.put(object);
              indexing?.(object);
            },
          }
        : {}),
      onEvent: (event) => {
        metrics.eventsReceived.inc({ resource: plan.id, type: event.type });
        if (event.type === 'DELETED' && sink)
          sink.remove(`${event.object.metadata?.namespace ?? ''}/${event.object.metadata?.name ?? ''}`);
        const writer = event.type === 'DELETED' ? undefined : options.echoOf?.(plan.resource, event.object);
        if (writer === undefined) pipeline.handle(plan.routes, event);
        else {
          // The echo of the writer's own write: its reconcile acted on that version already.
          const others = plan.routes.filter((r) => r.controller.name !== writer);
          metrics.eventsFiltered.inc({ controller: writer }, plan.routes.length - others.length);
          pipeline.handle(others, event);
        }
        if (event.type === 'DELETED')
          for (const controller of indexed)
            indexes.remove(controller, {
              namespace: event.object.metadata?.namespace ?? '',
              name: event.object.metadata?.name ?? '',
            });
      },
      onRestart: () => metrics.informerRestarts.inc({ resource: plan.id }),
      onServed: () => reportSynced(plan.id),
    });
    if (sink) void informer.whenSynced().then(() => sink.synced());
    return informer;
  };
  /**
   * `levelset_relay_informer_synced` of informer `id`: 1 once its first LIST is in its cache and
   * while its resource is served; 0 while it waits for its resource (a CRD not installed, a
   * resource this API server does not serve), so that `levelset status` names it. Readiness does
   * not wait for such a resource (`notReady`).
   */
  const reportSynced = (id: string) => {
    const informer = informers.get(id);
    const synced = informer?.hasSynced() && informer.state !== 'waiting-for-resource';
    metrics.informerSynced.set({ resource: id }, synced ? 1 : 0);
  };

  for (const plan of plans) {
    const informer = makeInformer(plan);
    informers.set(plan.id, informer);
    metrics.informerSynced.set({ resource: plan.id }, 0);
    metrics.informerWatching.set({ resource: plan.id }, 0);
    void informer.whenSynced().then(() => reportSynced(plan.id));
    for (const route of plan.routes) {
      if (route.primary && !primaryOf.has(route.controller.name))
        primaryOf.set(route.controller.name, informer);
    }
  }

  const graceMs = options.informers?.notWatchingGraceMs ?? NOT_WATCHING_GRACE_MS;
  /** Why the relay is not ready: one line per informer not synced or unable to watch. */
  const notReady = (): string[] => {
    const now = Date.now();
    const reasons: string[] = [];
    for (const i of informers.values()) {
      if (!i.hasSynced()) reasons.push(`${i.id}: not synced`);
      else {
        const ms = i.notWatchingForMs(now);
        if (ms > graceMs) reasons.push(`${i.id}: cannot watch for ${Math.round(ms / 1000)} s (${i.state})`);
      }
    }
    return reasons;
  };
  const server = await startHealthServer({
    port: options.port ?? DEFAULT_PORT,
    host: options.host,
    notReady,
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
    const waiting = [...informers.values()]
      .filter((i) => i.state === 'waiting-for-resource')
      .map((i) => i.id);
    if (waiting.length === 0)
      logger.info({ informers: informers.size }, 'relay ready: every informer synced');
    else
      logger.warn(
        { informers: informers.size, waiting },
        `relay ready, but ${waiting.join(', ')} not served: waiting for ${waiting.length > 1 ? 'them' : 'it'} (a CRD not installed, or a resource this API server does not serve)`,
      );
  });

  let stopping: Promise<RelayStopResult> | undefined;
  const flushTimeoutMs = options.stopFlushTimeoutMs ?? STOP_FLUSH_TIMEOUT_MS;
  return {
    port: server.port,
    metrics,
    ready: () => notReady().length === 0,
    whenReady: () => allSynced,
    informers: () =>
      [...informers.values()].map((i) => ({
        id: i.id,
        state: i.state,
        synced: i.hasSynced(),
        watching: i.watching,
        restarts: i.restarts,
        objects: i.size,
      })),
    stop() {
      stopping ??= (async () => {
        logger.info({ pendingKeys: pipeline.pending }, 'relay stopping: stopping informers, flushing keys');
        // Each informer stops handling events at once (stop() aborts first, then waits for its
        // loop, which may be in a request): the flush below holds every key there will be.
        const informersStopped = Promise.all([...informers.values()].map((i) => i.stop()));
        const flushed = (async () => {
          await pipeline.flush();
          try {
            await options.publisher.flush();
          } catch (err) {
            logger.error({ err }, 'publish failed');
          }
        })();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const deadline = new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), flushTimeoutMs);
        });
        const complete = await Promise.race([flushed.then(() => true), deadline]);
        const informersDone = await Promise.race([informersStopped.then(() => true), deadline]);
        clearTimeout(timer);
        const unpublished = pipeline.unpublished;
        pipeline.discard();
        if (!complete)
          logger.error(
            { unpublishedKeys: unpublished, timeoutMs: flushTimeoutMs },
            'keys not published at stop: dropped after the stop deadline (the next resync enqueues them again)',
          );
        else if (unpublished)
          logger.warn(
            { unpublishedKeys: unpublished },
            'keys not published at stop: their publish failed (the next resync enqueues them again)',
          );
        if (!informersDone)
          logger.warn(
            { timeoutMs: flushTimeoutMs },
            'an informer was still in a request at the stop deadline',
          );
        await server.close();
        logger.info({ unpublishedKeys: unpublished }, 'relay stopped');
        return { flushed: complete, unpublished };
      })();
      return stopping;
    },
  };
}
