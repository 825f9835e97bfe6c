/**
 * The in-process mode: the same registered controllers run the classic way, in one process, for a
 * cluster without Google Cloud. The relay's informers and key pipeline (`relay/relay.ts`) feed one
 * rate-limited {@link WorkQueue} per controller instead of Pub/Sub; `workers` per controller take
 * keys from it and run them with the same {@link reconcileKey} as the `reconcile` function, so both
 * modes write identical outcome lines. As controller-runtime does:
 *
 * - `success` → `Forget`; `requeue` → `Forget` + `AddAfter(requeueAfterMs)` (honoured exactly);
 * - `transient` / `error`, and a rate limit (`requeue` with `rateLimited`) → `AddRateLimited` after
 *   the delay of the `reconcile` function's {@link nextRetry}, from the same counts (kept per key
 *   here, in the message there: {@link RetryCountsLimiter}), and not before the token bucket of
 *   client-go's `DefaultControllerRateLimiter` (10 qps / burst 100) allows; never given up on;
 * - `terminal` / `malformed` → `Forget`, not retried;
 * - every `resyncIntervalMs`, every key of `listKeys` (default: every primary object) is added;
 * - the reconciles read their primary and their children from the informers (whole objects of the
 *   kinds read, functions/runtime/object-cache.ts: docs/architecture.md decision 56), with
 *   read-your-writes; the serverless mode reads live;
 * - with `auditLog`, an audit log entry of a change made outside Levelset adds the keys of the
 *   objects that own the resource (functions/runtime/audit-log-subscription.ts), as the `auditLog` function publishes them.
 *
 * `/healthz`, `/readyz`, `/metrics` are the relay's: its `levelset_relay_*` metrics, client-go's
 * `workqueue_*` metrics with `name` = controller, the reconciles' (`levelset_reconcile_total`,
 * `levelset_reconcile_duration_seconds`, `levelset_rejected_writes_total`: core/metrics.ts, as the
 * functions serve them) and the process's (prom-client's defaults), on one endpoint as
 * controller-runtime's manager serves its own.
 */

import { context, ROOT_CONTEXT, type SpanContext, trace } from '@opentelemetry/api';
import type { Metric, Registry } from 'prom-client';
import { ITEM_BACKOFF_BASE_MS, ITEM_BACKOFF_MAX_MS } from '../../core/backoff.ts';
import type { Controller } from '../../core/contract/controller.ts';
import { DEFAULT_CLUSTER, keyString, parseKeyString } from '../../core/contract/key.ts';
import { BackgroundEvents } from '../../core/k8s/events.ts';
import { ATTR } from '../../core/k8s/tracing.ts';
import { createLogger, keyLogger, type Logger } from '../../core/log.ts';
import { FIRST_DELIVERY, type RetryCounts } from '../../core/message.ts';
import { reconcileDuration, reconcileTotal, rejectedWrites } from '../../core/metrics.ts';
import { createRelayMetrics, processMetricsRegistry } from '../../relay/metrics.ts';
import { type Relay, type RelayOptions, startRelay } from '../../relay/relay.ts';
import type { AuditLogSubscriptionConfig } from './audit-log-subscription.ts';
import { driftCorrected } from './drift.ts';
import { InformerObjectCache } from './object-cache.ts';
import { inDeliverySpan, type KeyOutcome, reconcileKey } from './reconcile.ts';
import { resyncAll } from './resync.ts';
import { nextRetry, type RetryConfig } from './retry.ts';
import {
  BucketRateLimiter,
  createWorkQueueMetrics,
  MaxOfRateLimiter,
  type RateLimiter,
  WorkQueue,
} from './workqueue.ts';

/**
 * Default workers per controller (`LEVELSET_WORKERS`): 16 keys reconciled at once, each waiting on
 * its API calls. A worker is a pending promise here, not a goroutine, and a reconcile spends its
 * time waiting for the API server: with 4, a patch of 1 000 Foos from 8 writers outran the workers
 * (docs/architecture.md decision 72). A cluster's request budget, when one is set
 * (`LEVELSET_REQUEST_BUDGET`, core/request-budget.ts), bounds the request rate, not this number.
 */
export const DEFAULT_WORKERS = 16;

/** How long `stop` waits for the Events still queued to be written (ms). */
export const EVENTS_FLUSH_DEADLINE_MS = 5000;
/** Default collapse window of the in-process mode, ms: none beyond the workqueue's dirty set. */
export const DEFAULT_IN_PROCESS_COLLAPSE_MS = 0;

export interface InProcessOptions
  extends Pick<RelayOptions, 'kubeConfig' | 'port' | 'host' | 'informers' | 'collapseMs' | 'collapseMode'> {
  /** Controllers to run: the project's registry (core/project.ts) or a test's own. */
  controllers: readonly Controller[];
  /** Workers per controller (controller-runtime's `MaxConcurrentReconciles`); default {@link DEFAULT_WORKERS}. */
  workers?: number;
  /** Period of the resync in ms; 0 (default) runs none. */
  resyncIntervalMs?: number;
  /** Logger of the informer side; default `createLogger('relay')`. */
  logger?: Logger;
  /** Logger of the reconcile side (outcome lines); default `createLogger('functions')`, as the function's. */
  reconcileLogger?: Logger;
  /** The retries' backoff bounds, ms (functions/runtime/retry.ts); default client-go's 5 ms → 1000 s. */
  backoff?: Pick<RetryConfig, 'baseMs' | 'maxMs'>;
  /**
   * Drift from Cloud Audit Logs (functions/runtime/audit-log-subscription.ts): the subscription of the audit log sink's topic
   * to pull; each entry's owners' keys are added to their workqueues. Default: none.
   */
  auditLog?: AuditLogSubscriptionConfig;
  /**
   * Whether the reconciles read the primary and its children from the informers
   * (functions/runtime/object-cache.ts, docs/architecture.md decision 56); default `true`. `false`:
   * every read live, as the serverless mode reads (metadata-only informers).
   */
  cachedReads?: boolean;
}

/**
 * The retry counts of each key of one controller's queue ({@link RetryCounts}), which a key's message
 * carries in the serverless mode: the queue's per-key rate limiter, so that `Forget` (a success, a
 * terminal failure) clears them and `NumRequeues` counts them; its `when` adds no delay of its own
 * (the delay is {@link nextRetry}'s, handed to `AddRateLimited`).
 */
class RetryCountsLimiter implements RateLimiter {
  readonly #counts = new Map<string, RetryCounts>();
  /** The counts of `key`'s next delivery ({@link FIRST_DELIVERY} when it has none). */
  of(key: string): RetryCounts {
    return this.#counts.get(key) ?? FIRST_DELIVERY;
  }
  set(key: string, counts: RetryCounts): void {
    this.#counts.set(key, counts);
  }
  when(_key: string): number {
    return 0;
  }
  forget(key: string): void {
    this.#counts.delete(key);
  }
  numRequeues(key: string): number {
    const { attempt, rateLimited } = this.of(key);
    return attempt - 1 + rateLimited;
  }
}

export interface InProcess {
  /** The informer side (readiness, informers, relay metrics, port). */
  relay: Relay;
  /** The workqueue of each controller, by controller name. */
  queues: ReadonlyMap<string, WorkQueue>;
  /** The informer cache the reconciles read from; absent with `cachedReads: false`. */
  cache?: InformerObjectCache;
  /** Adds every key of every controller (the periodic resync; also callable by hand). Resolves with keys added. */
  resync(): Promise<number>;
  /**
   * Stops the informers (keys still in the collapse window go to the queues), shuts the queues
   * down, lets the workers finish the keys already queued, and closes HTTP.
   */
  stop(): Promise<void>;
}

/**
 * The in-process process's one registry: prom-client's default process metrics, then (by
 * {@link createRelayMetrics} and the workqueues) the relay's, and the metrics each reconcile
 * records in prom-client's default registry, as the functions' processes do (core/metrics.ts,
 * functions/runtime/drift.ts), registered here as well.
 */
function inProcessRegistry(): Registry {
  const registry = processMetricsRegistry();
  const reconciles: Metric[] = [reconcileTotal, reconcileDuration, rejectedWrites, driftCorrected];
  for (const metric of reconciles) registry.registerMetric(metric);
  return registry;
}

/**
 * Starts the in-process mode: queues and workers, then the relay's informers and health server.
 * @throws when the health server cannot listen, `workers` is not a positive integer, or the
 *   `auditLog` subscription does not exist.
 */
export async function startInProcess(options: InProcessOptions): Promise<InProcess> {
  const { controllers } = options;
  const workers = options.workers ?? DEFAULT_WORKERS;
  if (!(Number.isInteger(workers) && workers >= 1)) throw new RangeError('workers must be an integer >= 1');
  const logger = options.logger ?? createLogger('relay');
  const reconcileLogger = options.reconcileLogger ?? createLogger('functions');
  const metrics = createRelayMetrics(inProcessRegistry());
  const workQueueMetrics = createWorkQueueMetrics(metrics.registry);
  const byName = new Map(controllers.map((c) => [c.name, c]));
  const backoff = options.backoff ?? { baseMs: ITEM_BACKOFF_BASE_MS, maxMs: ITEM_BACKOFF_MAX_MS };
  const retries = new Map(controllers.map((c) => [c.name, new RetryCountsLimiter()]));
  const queues = new Map(
    [...retries].map(([name, counts]) => {
      // client-go's DefaultControllerRateLimiter's bucket, over every key; the per-key delay is nextRetry's.
      const rateLimiter = new MaxOfRateLimiter(counts, new BucketRateLimiter(10, 100));
      return [name, new WorkQueue({ name, metrics: workQueueMetrics, rateLimiter })];
    }),
  );
  const kubeConfig = () => options.kubeConfig;
  const cache = options.cachedReads === false ? undefined : new InformerObjectCache(controllers);
  // Events written in the background, as client-go's EventBroadcaster (decision 49): a reconcile
  // does not wait for its `Synced` Event.
  const backgroundEvents = new BackgroundEvents(logger);
  /**
   * Queue key (`controller|namespace/name`) → the trace context of its latest enqueue: a worker's
   * `reconcile` span continues it, as the function continues the one a message carries. Marked
   * remote, so the reconcile is a part of the trace of its own for the export decision
   * (core/tracing.ts), as it is in the serverless mode.
   */
  const enqueuedBy = new Map<string, SpanContext>();

  const runWorker = async (controller: string, queue: WorkQueue): Promise<void> => {
    for (;;) {
      const { key, shutdown } = await queue.get();
      if (shutdown) return;
      let result: KeyOutcome = { outcome: 'error' };
      try {
        const log = keyLogger(reconcileLogger, {
          cluster: DEFAULT_CLUSTER,
          controller,
          ...parseKeyString(key),
        }).child({ reason: 'workqueue' });
        const enqueued = enqueuedBy.get(`${controller}|${key}`);
        enqueuedBy.delete(`${controller}|${key}`);
        const parent = enqueued
          ? trace.setSpanContext(ROOT_CONTEXT, { ...enqueued, isRemote: true })
          : ROOT_CONTEXT;
        result = await inDeliverySpan(
          parent,
          { [ATTR.controller]: controller, [ATTR.key]: key, [ATTR.reason]: 'workqueue' },
          () =>
            reconcileKey(byName, controller, parseKeyString(key), {
              kubeConfig,
              log,
              retriedBy: 'the workqueue',
              backgroundEvents,
              ...(cache ? { cache: cache.forController(controller) } : {}),
            }),
        );
      } finally {
        if (result.outcome === 'transient' || result.outcome === 'error' || result.rateLimited) {
          const counts = retries.get(controller) as RetryCountsLimiter;
          const next = nextRetry(backoff, counts.of(key), result);
          counts.set(key, next.counts);
          queue.addRateLimited(key, next.delayMs);
        } else {
          queue.forget(key);
          if (result.outcome === 'requeue') queue.addAfter(key, result.requeueAfterMs ?? 0);
        }
        // The objects that reference the primary, to reconcile next (Result.referrers).
        for (const referrer of result.referrers ?? [])
          queues.get(referrer.controller)?.add(keyString(referrer));
        queue.done(key);
      }
    }
  };

  /**
   * Where the relay and the resync send keys: straight into the controller's workqueue, the
   * resync's at low priority, so live keys pass its backlog (functions/runtime/workqueue.ts, Priority).
   */
  const toQueues = {
    publish: async (
      m: {
        cluster?: string;
        controller: string;
        namespace: string;
        name: string;
        reason?: string;
      },
      // The primary's version the relay holds: this mode reads the primary from the informer.
      _resourceVersion?: string,
      enqueueSpan?: SpanContext,
    ) => {
      // One cluster here: a key a map or listKeys named for another cluster (the owner of a child
      // in another cluster) has no cluster to run in.
      if (m.cluster !== undefined && m.cluster !== DEFAULT_CLUSTER) {
        logger.warn(
          { controller: m.controller, key: keyString(m), cluster: m.cluster },
          'key of another cluster dropped: the in-process mode serves one cluster',
        );
        return '';
      }
      const queue = queues.get(m.controller);
      if (!queue) throw new Error(`no workqueue for controller "${m.controller}"`);
      // The relay names its enqueue span, recorded or not (an unsampled key is published outside
      // it); the resync publishes under its own.
      const enqueue = enqueueSpan ?? trace.getSpan(context.active())?.spanContext();
      if (enqueue && trace.isSpanContextValid(enqueue))
        enqueuedBy.set(`${m.controller}|${keyString(m)}`, enqueue);
      queue.add(keyString(m), m.reason === 'resync' ? 'low' : 'normal');
      return '';
    },
    flush: async () => {},
  };
  const relay = await startRelay({
    kubeConfig: options.kubeConfig,
    controllers,
    collapseMs: options.collapseMs ?? DEFAULT_IN_PROCESS_COLLAPSE_MS,
    collapseMode: options.collapseMode,
    port: options.port,
    host: options.host,
    informers: options.informers,
    logger,
    metrics,
    publisher: toQueues,
    ...(cache
      ? {
          objectStores: (plan) => cache.sinkFor(plan),
          echoOf: (resource, object) => cache.echoOf(resource, object),
        }
      : {}),
  });

  // Cloud Audit Logs' entries, mapped as the `auditLog` function maps them, into the workqueues.
  // The subscriber (and the Pub/Sub client's gRPC stack) is loaded only when configured.
  const auditLog = options.auditLog
    ? await import('./audit-log-subscription.ts')
        .then(({ subscribeToAuditLog }) =>
          subscribeToAuditLog(
            options.auditLog as AuditLogSubscriptionConfig,
            { controllers, kubeConfig: () => options.kubeConfig, logger },
            toQueues,
          ),
        )
        .catch(async (err: unknown) => {
          await relay.stop();
          throw err;
        })
    : undefined;

  const workerLoops: Promise<void>[] = [];
  for (const [name, queue] of queues) {
    for (let i = 0; i < workers; i++)
      workerLoops.push(
        runWorker(name, queue).catch((err: unknown) =>
          logger.fatal({ err, controller: name }, 'worker died'),
        ),
      );
  }

  // The resync function's enumeration (functions/runtime/resync.ts), into the workqueues.
  const resync = async (): Promise<number> => {
    const report = await resyncAll(controllers, options.kubeConfig, toQueues, logger);
    for (const [name, c] of Object.entries(report.controllers))
      if (c.error)
        logger.warn({ err: c.error, controller: name }, `${name}: resync failed; the next one tries again`);
    logger.info({ keys: report.published }, `resync added ${report.published} keys`);
    return report.published;
  };
  let timer: NodeJS.Timeout | undefined;
  if (options.resyncIntervalMs) {
    timer = setInterval(() => void resync(), options.resyncIntervalMs);
    timer.unref();
  }
  logger.info({ controllers: [...queues.keys()], workers }, 'in-process mode started');

  let stopping: Promise<void> | undefined;
  return {
    relay,
    queues,
    ...(cache ? { cache } : {}),
    resync,
    stop() {
      stopping ??= (async () => {
        if (timer) clearInterval(timer);
        await auditLog?.close();
        await relay.stop();
        for (const q of queues.values()) q.shutDown();
        await Promise.all(workerLoops);
        await backgroundEvents.flush(EVENTS_FLUSH_DEADLINE_MS);
        logger.info('in-process mode stopped');
      })();
      return stopping;
    },
  };
}
