/**
 * The `reconcile` function: one Pub/Sub push delivery = one key reconciled.
 *
 * Answers (docs/architecture.md "functions/"): `204` when done, when the failure is terminal (Warning Event +
 * ERROR log) and when the message is malformed (ERROR log; a poison message is never retried).
 * A failure a retry may fix (`transient`, `error`) is acknowledged too (`204`) and retried by the
 * function itself (functions/runtime/retry.ts): the key is requeued after a per-key backoff, or after the
 * delay the failure asked for, and dead-lettered after the configured attempts — because on Cloud
 * Pub/Sub a non-2xx answer slows the pushes of the whole subscription (push backoff). `500` only
 * when that retry cannot be arranged (no requeuer, `LEVELSET_RETRY=pubsub`, a requeue or dead letter
 * that failed to publish): Pub/Sub then redelivers with backoff and dead-letters after the
 * subscription's `max_delivery_attempts`.
 */

import { setTimeout as delay } from 'node:timers/promises';
import type { Request, Response } from '@google-cloud/functions-framework';
import type { KubeConfig } from '@kubernetes/client-node';
import { type Attributes, type Context, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type {
  Controller,
  ObjectCache,
  Outcome,
  ReconcileContext,
  Referrer,
  Result,
} from '../../core/contract/controller.ts';
import {
  type ControllerKey,
  DEFAULT_CLUSTER,
  type Key,
  keyString,
  orderingKeyOf,
} from '../../core/contract/key.ts';
import { errorText, isConflict, isTransient, retryAfterMsOf, TerminalError } from '../../core/k8s/errors.ts';
import { type BackgroundEvents, createEventRecorder } from '../../core/k8s/events.ts';
import { ATTR, inSpan, SPAN, tracer } from '../../core/k8s/tracing.ts';
import { keyLogger, type Logger } from '../../core/log.ts';
import {
  type Delivery,
  decodePushEnvelope,
  type EnqueueReason,
  keyMessageOf,
  keyOfMessage,
  MalformedMessageError,
  traceContextOf,
} from '../../core/message.ts';
import { recordReconcile } from '../../core/metrics.ts';
import type { KeyPublisher } from '../../core/publish.ts';
import { flushTraces } from '../../core/tracing.ts';
import { recordDrift } from './drift.ts';
import { type RequestRules, rejectRequest } from './http.ts';
import type { Requeuer } from './requeue.ts';
import { deadLetterAttributes, type RetryConfig, readRetryConfig, retryDecision } from './retry.ts';

export interface ReconcileHandlerDeps {
  /** The registry (or a subset, in tests). */
  controllers: readonly Controller[];
  /**
   * The KubeConfig of a cluster id (functions/runtime/clusters.ts: created at the cluster's first delivery,
   * then reused), or `undefined` for a cluster this deployment does not know: the key is malformed.
   */
  kubeConfig: (cluster: string) => KubeConfig | undefined;
  /**
   * Every cluster id of the registry, handed to each reconcile with `kubeConfig`
   * (`ReconcileContext.clusters`: children in other clusters); default: none (each reconcile
   * reaches its own cluster alone).
   */
  clusters?: () => readonly string[];
  logger: Logger;
  /** What a request must satisfy before it is decoded ({@link rejectRequest}); default: no token. */
  requestRules?: RequestRules;
  /**
   * Delivers a key again when its reconcile asks (`requeueAfterMs`), and retries a failed key
   * (with {@link ReconcileHandlerDeps.retry}); default: none (the next resync; failures answer `500`).
   */
  requeuer?: Requeuer;
  /**
   * How a failed key is retried (functions/runtime/retry.ts); default: answer `500`, Pub/Sub retries. With
   * `mode: 'requeue'` it needs a {@link ReconcileHandlerDeps.requeuer} (not `none`) and
   * {@link ReconcileHandlerDeps.deadLetters}.
   */
  retry?: RetryConfig;
  /** Publishes dead letters to the dead-letter topic (unordered); made at its first use. */
  deadLetters?: () => Pick<KeyPublisher, 'publishEncoded'>;
}

/** Attempts of a reconcile that lost an optimistic-concurrency race, before answering 500. */
export const CONFLICT_ATTEMPTS = 4;

/**
 * Runs a reconcile, re-running it from a fresh read when it fails with `409 Conflict`, as
 * client-go's `retry.RetryOnConflict` (backoff 10 ms × 2ⁿ, jittered); a re-run reads live, without
 * `ctx.cache`. Two deliveries of one key racing
 * (Pub/Sub push is at-least-once) thus both succeed. Other errors are thrown at once.
 */
export async function reconcileRetryingConflicts(
  controller: Controller,
  key: Key,
  ctx: ReconcileContext,
): Promise<Result | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      // A conflict may come of a read not the latest (the in-process mode's informers, the API
      // server's watch cache): read live and consistent again.
      return await controller.reconcile(key, attempt > 1 ? freshReads(ctx) : ctx);
    } catch (err) {
      if (!isConflict(err) || attempt >= CONFLICT_ATTEMPTS) throw err;
      ctx.log.debug({ attempt, err: errorText(err) }, 'conflict; reconciling again from a fresh read');
      await delay(10 * 2 ** (attempt - 1) * (1 + Math.random()));
    }
  }
}

/** `ctx` with every read live and consistent: no informer cache, no primary's resourceVersion. */
function freshReads(ctx: ReconcileContext): ReconcileContext {
  if (!ctx.cache && ctx.primaryResourceVersion === undefined) return ctx;
  const { cache: _cache, primaryResourceVersion: _resourceVersion, ...fresh } = ctx;
  return fresh;
}

/** The options of {@link reconcileKey}, described there. */
export interface ReconcileKeyOptions {
  cluster?: string;
  kubeConfig: (cluster: string) => KubeConfig | undefined;
  clusters?: () => readonly string[];
  log: Logger;
  retriedBy: string;
  reason?: EnqueueReason;
  cache?: ObjectCache;
  /** The primary's resourceVersion the key's publisher saw (`ReconcileContext.primaryResourceVersion`); default none. */
  primaryResourceVersion?: string;
  /** The in-process mode's background Event writes; default none (each Event written before the reconcile returns). */
  backgroundEvents?: BackgroundEvents;
}

/**
 * How {@link reconcileKey} ended, the delay the reconcile asked for (`requeue`), and the delay a
 * `transient` failure or a rate limit asked for before its retry (`Retry-After`, core/k8s/errors.ts
 * `retryAfterMsOf`; `Result.rateLimited`), ms.
 */
export interface KeyOutcome {
  outcome: Outcome;
  requeueAfterMs?: number;
  retryAfterMs?: number;
  /** A quota or rate limit refused the reconcile (`Result.rateLimited`; outcome `requeue`): the caller retries the key (retry.ts `nextRetry`). */
  rateLimited?: true;
  /**
   * Keys to reconcile next, in the key's cluster: the objects that reference the primary
   * (`Result.referrers`), each for every controller whose primary is its resource. The caller
   * enqueues them (serverless: published to the keys topic; in-process: its workqueues).
   */
  referrers?: ControllerKey[];
}

/**
 * The keys of `referrers` ({@link Result.referrers}) in `cluster`: one per controller of the registry
 * whose primary is a referrer's resource (by group and kind); a resource no controller reconciles gives none.
 */
export function referrerKeys(
  controllers: ReadonlyMap<string, Controller>,
  cluster: string,
  referrers: readonly Referrer[] = [],
): ControllerKey[] {
  return referrers.flatMap(({ resource, namespace, name }) =>
    [...controllers.values()]
      .filter((c) => c.primary.group === resource.group && c.primary.kind === resource.kind)
      .map((c) => ({ cluster, controller: c.name, namespace, name })),
  );
}

/**
 * Runs one key, the same way in both modes (the `reconcile` function and the in-process workers):
 * looks the controller up, reconciles with {@link reconcileRetryingConflicts}, records a Warning
 * Event for a terminal failure, and writes the delivery's final log line with `outcome` and
 * `durationMs` (ms), `notFound: true` when the reconcile found no primary ({@link Result.notFound}),
 * `rateLimited: true` (outcome `requeue`) with the delay it named (`retryAfterMs`); a key the
 * resync enqueued (`reason`) whose reconcile changed something is drift (functions/runtime/drift.ts). Never throws: every failure is an outcome (`malformed` for an unknown
 * controller or cluster; `terminal`, `transient`, `error` as described by {@link Outcome}).
 * @param options.cluster the key's cluster id; default {@link DEFAULT_CLUSTER}.
 * @param options.kubeConfig the KubeConfig of a cluster id, `undefined` when the cluster is unknown.
 * @param options.clusters every cluster id of the registry (`ReconcileContext.clusters`); default none.
 * @param options.retriedBy who retries a `transient`/`error` outcome, for the log message (`Pub/Sub`, `the workqueue`).
 * @param options.reason why the key was enqueued (the message's `reason`): `resync` counts drift.
 * @param options.cache the in-process mode's informer cache (`ReconcileContext.cache`); default none (every read live).
 * @param options.primaryResourceVersion the primary's resourceVersion its publisher saw
 *   (`ReconcileContext.primaryResourceVersion`): the GET of the primary not older than it; default none (consistent).
 * @param options.backgroundEvents the in-process mode's Event queue (core/k8s/events.ts): Events are
 *   recorded in the background, as client-go's EventBroadcaster does; default none (the serverless
 *   mode: each Event is written before the response, as the CPU is throttled after it).
 * Each delivery is also counted in the process's Prometheus metrics (core/metrics.ts:
 * `levelset_reconcile_total`, `levelset_reconcile_duration_seconds`, by controller and outcome).
 */
export async function reconcileKey(
  controllers: ReadonlyMap<string, Controller>,
  controllerName: string,
  key: Key,
  options: ReconcileKeyOptions,
): Promise<KeyOutcome> {
  const { durationMs, ...result } = await reconcileKeyLogged(controllers, controllerName, key, options);
  recordReconcile(controllers.has(controllerName) ? controllerName : 'unknown', result.outcome, durationMs);
  return result;
}

/** {@link reconcileKey} without the metrics; also answers the final line's `durationMs` (none for `malformed`). */
async function reconcileKeyLogged(
  controllers: ReadonlyMap<string, Controller>,
  controllerName: string,
  key: Key,
  options: ReconcileKeyOptions,
): Promise<KeyOutcome & { durationMs?: number }> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const { log } = options;
  const controller = controllers.get(controllerName);
  if (!controller) {
    log.error(
      { outcome: 'malformed' satisfies Outcome },
      `unknown controller "${controllerName}": message dropped`,
    );
    return { outcome: 'malformed' };
  }
  // A key names an object of the primary's scope: `namespace/name` when namespaced, `name` alone
  // when cluster-scoped (client-go's MetaNamespaceKeyFunc); anything else can never be reconciled.
  if (controller.primary.namespaced !== (key.namespace !== '')) {
    log.error(
      { outcome: 'malformed' satisfies Outcome },
      controller.primary.namespaced
        ? `key without a namespace for "${controllerName}", whose ${controller.primary.kind} is namespaced: message dropped`
        : `key with a namespace for "${controllerName}", whose ${controller.primary.kind} is cluster-scoped: message dropped`,
    );
    return { outcome: 'malformed' };
  }
  const cluster = options.cluster ?? DEFAULT_CLUSTER;
  const kubeConfig = options.kubeConfig(cluster);
  if (!kubeConfig) {
    // A cluster this deployment has no connection to (LEVELSET_CLUSTERS): no retry can reach it.
    log.error({ outcome: 'malformed' satisfies Outcome }, `unknown cluster "${cluster}": message dropped`);
    return { outcome: 'malformed' };
  }
  const recorder = createEventRecorder(kubeConfig, controller.name, log);
  const events = options.backgroundEvents ? options.backgroundEvents.wrap(recorder) : recorder;
  try {
    const directory = options.clusters
      ? { ids: options.clusters(), kubeConfig: options.kubeConfig }
      : undefined;
    const ctx = {
      cluster,
      kubeConfig,
      log,
      events,
      ...(directory ? { clusters: directory } : {}),
      ...(options.cache ? { cache: options.cache } : {}),
      ...(options.primaryResourceVersion !== undefined
        ? { primaryResourceVersion: options.primaryResourceVersion }
        : {}),
    };
    const result = await reconcileRetryingConflicts(controller, key, ctx);
    const limited = result?.rateLimited ? ({ rateLimited: true, ...result.rateLimited } as const) : undefined;
    const requeueAfterMs = limited ? undefined : result?.requeueAfterMs;
    const outcome: Outcome = limited || requeueAfterMs !== undefined ? 'requeue' : 'success';
    const notFound = result?.notFound ? true : undefined;
    const durationMs = elapsed();
    log.info(
      { outcome, durationMs, requeueAfterMs, notFound, ...limited },
      limited ? 'rate limited' : notFound ? 'not found: nothing to do' : 'reconciled',
    );
    recordDrift(controller.name, options.reason, result, log);
    const referrers = referrerKeys(controllers, cluster, result?.referrers);
    return {
      outcome,
      durationMs,
      ...limited,
      ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}),
      ...(referrers.length > 0 ? { referrers } : {}),
    };
  } catch (err) {
    if (err instanceof TerminalError) {
      if (err.object) await events.record(err.object, 'Warning', err.reason, err.message);
      const durationMs = elapsed();
      log.error(
        {
          outcome: 'terminal' satisfies Outcome,
          durationMs,
          // `reason` is the delivery's (watch, resync, manual), on every line of the key.
          eventReason: err.reason,
          err: err.message,
        },
        'reconcile failed terminally; not retried',
      );
      return { outcome: 'terminal', durationMs };
    }
    const outcome: Outcome = isTransient(err) ? 'transient' : 'error';
    const retryAfterMs = outcome === 'transient' ? retryAfterMsOf(err) : undefined;
    const line = { outcome, durationMs: elapsed(), err: errorText(err), retryAfterMs };
    if (outcome === 'transient') log.warn(line, `reconcile failed; ${options.retriedBy} will retry`);
    else log.error(line, `reconcile failed unexpectedly; ${options.retriedBy} will retry, then dead-letter`);
    return { outcome, durationMs: line.durationMs, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }
}

/** Outcomes a retry may fix, or that need an operator: the `reconcile` span's status is `ERROR`. */
const FAILED: ReadonlySet<Outcome> = new Set(['terminal', 'malformed', 'transient', 'error']);

/**
 * Runs one delivery of a key under a `reconcile` span (kind `CONSUMER`) continuing `parent` (the
 * trace context the key message carried; `ROOT_CONTEXT` starts a new trace), so that every log line,
 * Kubernetes API call and child write of the reconcile is in the key's trace. The span gets the
 * outcome (`levelset.outcome`), status `ERROR` unless `success`/`requeue`, and ends after `run`
 * settles (a requeue scheduled inside `run` is its child).
 */
export async function inDeliverySpan<T extends KeyOutcome>(
  parent: Context,
  attributes: Attributes,
  run: () => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(
    SPAN.reconcile,
    { kind: SpanKind.CONSUMER, attributes },
    parent,
    async (span) => {
      try {
        const result = await run();
        span.setAttribute(ATTR.outcome, result.outcome);
        if (result.requeueAfterMs !== undefined)
          span.setAttribute(ATTR.requeueAfterMs, result.requeueAfterMs);
        if (FAILED.has(result.outcome))
          span.setStatus({ code: SpanStatusCode.ERROR, message: result.outcome });
        return result;
      } finally {
        span.end();
      }
    },
  );
}

/**
 * Milliseconds from a key message's `enqueuedAt` (when the relay, the resync or an operator
 * enqueued it; RFC 3339) to `now` (its delivery), never below 0 (the enqueuing clock may be ahead
 * of this instance's). Every line of a delivery carries it as `deliveryDelayMs`, a number, so that
 * Terraform's distribution metric `reconcile_delivery_delay` reads it (terraform/monitoring.tf, the
 * delivery SLO). It grows with each retry of a failing key: a key reconciled late counts late.
 */
export function deliveryDelayMs(enqueuedAt: string, now: number = Date.now()): number {
  return Math.max(0, Math.round(now - Date.parse(enqueuedAt)));
}

/**
 * Builds the HTTP handler for Pub/Sub push deliveries (`{message:{data,attributes,messageId,
 * publishTime},subscription}`, `data` = base64 JSON key message). A request that breaks the HTTP
 * rules ({@link rejectRequest}) or does not decode is malformed: one ERROR line and `204` (never
 * retried), except a missing or wrong token: `401`.
 */
export function createReconcileHandler(
  deps: ReconcileHandlerDeps,
): (req: Request, res: Response) => Promise<void> {
  const byName = new Map(deps.controllers.map((c) => [c.name, c]));
  /** The backoff of rate-limited keys: the retry configuration's, else its defaults (client-go's). */
  const backoff = deps.retry ?? readRetryConfig({});
  /** The last run queued per key: a key's next delivery waits for it. */
  const tails = new Map<string, Promise<unknown>>();
  const serialisedPerKey = <T>(id: string, run: () => Promise<T>): Promise<T> => {
    const result = (tails.get(id) ?? Promise.resolve()).then(run);
    const tail = result.catch(() => undefined);
    tails.set(id, tail);
    void tail.then(() => {
      if (tails.get(id) === tail) tails.delete(id);
    });
    return result;
  };
  return async (req, res) => {
    let decoded: ReturnType<typeof decodePushEnvelope>;
    const rejection = rejectRequest(req, deps.requestRules);
    if (rejection?.status === 405) {
      // Not a delivery: Pub/Sub only POSTs. The caller is told which method is allowed.
      deps.logger.error({ outcome: 'malformed' satisfies Outcome, err: rejection.reason }, 'request refused');
      res.status(405).set('Allow', 'POST').end();
      return;
    }
    if (rejection?.status === 401) {
      // Not a delivery at all: the caller is told, and a misconfigured push is retried, then dead-lettered.
      deps.logger.error({ outcome: 'malformed' satisfies Outcome, err: rejection.reason }, 'request refused');
      res.status(401).end();
      return;
    }
    try {
      if (rejection) throw new MalformedMessageError(rejection.reason);
      decoded = decodePushEnvelope(req.body);
    } catch (err) {
      deps.logger.error(
        { outcome: 'malformed' satisfies Outcome, err: errorText(err) },
        'malformed message dropped',
      );
      res.status(204).end();
      return;
    }
    const { message, messageId, deliveryAttempt } = decoded;
    const controllerKey = keyOfMessage(message);
    const key = { namespace: message.namespace, name: message.name };
    const log = keyLogger(deps.logger, controllerKey).child({
      messageId,
      reason: message.reason,
      enqueuedAt: message.enqueuedAt,
      deliveryDelayMs: deliveryDelayMs(message.enqueuedAt),
    });
    // Deliveries of one key are serialised within an instance, as a workqueue's processing set
    // does: Pub/Sub's ordering keys serialise them across instances, but the emulator's push does
    // not, and two reconciles of one key at once can write a stale read last.
    const attributes: Attributes = {
      [ATTR.controller]: message.controller,
      [ATTR.cluster]: controllerKey.cluster,
      [ATTR.key]: keyString(key),
      [ATTR.reason]: message.reason,
      [ATTR.enqueuedAt]: message.enqueuedAt,
      [ATTR.messageId]: messageId,
      // The key's attempt: its requeued retries (the message's `attempt`) and Pub/Sub's own redeliveries.
      ...(deliveryAttempt !== undefined || decoded.attempt > 1
        ? { [ATTR.deliveryAttempt]: decoded.attempt + (deliveryAttempt ?? 1) - 1 }
        : {}),
    };
    const { retry, requeuer, deadLetters } = deps;
    const requeuing = requeuer && requeuer.kind !== 'none' ? requeuer : undefined;
    const retrying =
      retry?.mode === 'requeue' && requeuing && deadLetters
        ? { config: retry, requeuer: requeuing, deadLetters }
        : undefined;
    const { status } = await inDeliverySpan(traceContextOf(decoded.attributes), attributes, async () => {
      const result = await serialisedPerKey(orderingKeyOf(controllerKey), () =>
        reconcileKey(byName, message.controller, key, {
          cluster: controllerKey.cluster,
          kubeConfig: deps.kubeConfig,
          ...(deps.clusters ? { clusters: deps.clusters } : {}),
          log,
          retriedBy: retrying ? 'a requeue' : 'Pub/Sub',
          reason: message.reason,
          ...(decoded.resourceVersion !== undefined
            ? { primaryResourceVersion: decoded.resourceVersion }
            : {}),
        }),
      );
      const { requeueAfterMs } = result;
      if (requeueAfterMs !== undefined && deps.requeuer) {
        const requeuer = deps.requeuer;
        await inSpan(
          SPAN.requeue,
          { [ATTR.requeueAfterMs]: requeueAfterMs, 'levelset.requeuer': requeuer.kind },
          // A new message (reason `requeue`, attempts from 1): the key succeeded.
          () =>
            requeuer.requeue(
              keyMessageOf(controllerKey, 'requeue', new Date().toISOString()),
              requeueAfterMs,
            ),
        ).catch((err) => {
          log.warn({ err: errorText(err) }, 'requeue failed; the next resync brings the key back');
        });
      }
      if (result.referrers && deps.requeuer && deps.requeuer.kind !== 'none') {
        // Published now, as a requeue is (the keys topic, each key's ordering key), with this
        // delivery's reason: a resync's or an audit log entry's drift reaches them with its source.
        const requeuer = deps.requeuer;
        const enqueuedAt = new Date().toISOString();
        await Promise.all(
          result.referrers.map((referrer) =>
            requeuer.requeue(keyMessageOf(referrer, message.reason, enqueuedAt), 0).catch((err) => {
              log.warn(
                { err: errorText(err), referrer: orderingKeyOf(referrer) },
                'referrer not enqueued; the next resync brings it',
              );
            }),
          ),
        );
        log.info({ referrers: result.referrers.map(orderingKeyOf) }, 'referrers enqueued');
      }
      const failed = result.outcome === 'transient' || result.outcome === 'error';
      // A rate limit is retried by any requeuer, never answered 500 (Pub/Sub would dead-letter it).
      const limited = result.rateLimited && requeuing ? { config: backoff, requeuer: requeuing } : undefined;
      const status = failed
        ? retrying
          ? await retryKey(retrying, decoded, result, log)
          : 500
        : limited
          ? await retryKey(limited, decoded, result, log)
          : 204;
      return { ...result, status };
    });
    // Cloud Run throttles an instance's CPU once it answered: the delivery's spans leave first.
    await flushTraces();
    res.status(status).end();
  };
}

/**
 * What {@link retryKey} needs: the retry configuration, a requeuer that is not `none`, the dead
 * letters' publisher (for a failure; a rate limit is never dead-lettered).
 */
interface Retrying {
  config: RetryConfig;
  requeuer: Requeuer;
  deadLetters?: NonNullable<ReconcileHandlerDeps['deadLetters']>;
}

/**
 * Retries a failed or rate-limited delivery without a non-2xx answer (functions/runtime/retry.ts):
 * requeues its key message (the same `reason` and `enqueuedAt`, so its delivery delay keeps
 * growing) with the next counts after the delay {@link retryDecision} gives, or at a failure's last
 * attempt publishes it to the dead-letter topic with Pub/Sub's dead-letter attributes.
 * @returns `204` when done; `500` when the requeue or the dead letter could not be published (then
 *   Pub/Sub retries the delivery, and its own dead-letter policy applies).
 */
async function retryKey(
  { config: retry, requeuer, deadLetters }: Retrying,
  delivery: Delivery,
  result: KeyOutcome,
  log: Logger,
): Promise<number> {
  const decision = retryDecision(retry, delivery, result);
  try {
    if (decision.action === 'requeue') {
      const { counts, delayMs } = decision;
      await inSpan(
        SPAN.requeue,
        {
          [ATTR.requeueAfterMs]: delayMs,
          'levelset.requeuer': requeuer.kind,
          'levelset.attempt': counts.attempt,
          'levelset.rate_limited': counts.rateLimited,
        },
        () => requeuer.requeue(delivery.message, delayMs, counts),
      );
      log.info(
        {
          attempt: delivery.attempt,
          maxAttempts: retry.maxAttempts,
          rateLimits: counts.rateLimited,
          retryInMs: delayMs,
        },
        result.rateLimited
          ? `rate limited; retrying in ${delayMs} ms (rate limit ${counts.rateLimited})`
          : `retrying in ${delayMs} ms (attempt ${counts.attempt} of ${retry.maxAttempts})`,
      );
      return 204;
    }
    const publisher = deadLetters?.();
    if (!publisher) throw new Error('no dead-letter publisher');
    const { data, attributes } = publishedMessage(delivery);
    await publisher.publishEncoded({
      data,
      attributes: deadLetterAttributes(attributes, {
        attempts: delivery.attempt,
        // `projects/<project>/subscriptions/<id>`, as Pub/Sub's push envelope names it.
        subscription: delivery.subscription ?? '',
        projectId: delivery.subscription?.split('/')[1] ?? '',
        ...(delivery.publishTime ? { publishTime: delivery.publishTime } : {}),
      }),
    });
    log.error(
      { attempt: delivery.attempt, maxAttempts: retry.maxAttempts, deadLetterTopic: retry.deadLetterTopic },
      `dead-lettered after ${delivery.attempt} attempts`,
    );
    return 204;
  } catch (err) {
    log.warn({ err: errorText(err) }, `${decision.action} failed; answering 500 so that Pub/Sub retries`);
    return 500;
  }
}

/** A delivery's key message as published (its data and own attributes), for its dead letter. */
function publishedMessage(delivery: Delivery): { data: Buffer; attributes: Record<string, string> } {
  return { data: Buffer.from(JSON.stringify(delivery.message), 'utf8'), attributes: delivery.attributes };
}
