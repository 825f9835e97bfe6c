/**
 * The `resync` function (Cloud Scheduler, OIDC): publishes every key of every controller, so that
 * an event the relay missed — a deletion while it was down included — is still reconciled
 * (client-go's informer resync, done from the API server's state rather than a cache).
 */
import type { Request, Response } from '@google-cloud/functions-framework';
import type { KubeConfig } from '@kubernetes/client-node';
import { context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import * as z from 'zod';
import type { Controller, ResyncContext } from '../../core/contract/controller.ts';
import { DEFAULT_CLUSTER, type Key, keyString, type MappedKey } from '../../core/contract/key.ts';
import { clusterId } from '../../core/contract/names.ts';
import { errorText, isNotFound } from '../../core/k8s/errors.ts';
import { listMetadataPaged } from '../../core/k8s/list.ts';
import { ATTR, SPAN, tracer } from '../../core/k8s/tracing.ts';
import type { Logger } from '../../core/log.ts';
import { keyMessageOf } from '../../core/message.ts';
import type { KeyPublisher, KeyPublisherOptions } from '../../core/publish.ts';
import {
  type ClientLimits,
  limitsOf,
  RESYNC_DEADLINE_MARGIN_SECONDS,
  requestLimiter,
} from '../../core/request-budget.ts';
import { flushTraces } from '../../core/tracing.ts';
import { type RequestRules, rejectRequest } from './http.ts';

/**
 * How the resync's publisher publishes (docs/architecture.md decision 33): key messages without
 * ordering key, so that the client batches up to 1000 keys of any controller into one publish
 * request ({@link import('../../core/publish.ts').UNORDERED_BATCHING}) and Pub/Sub keeps no ordering state per
 * key. A resync key needs no order: its subscription is not the live keys' (decision 29), and the
 * reconcile is level-driven and safe to run twice at once.
 */
export const RESYNC_PUBLISHING = { ordering: false } as const satisfies Partial<KeyPublisherOptions>;

/**
 * Publishes a resync keeps outstanding at most, per controller: a few publish requests of
 * {@link RESYNC_PUBLISHING}'s batches in flight while the next LIST page is read. Bounds its memory
 * (about 1 KB a key outstanding), whatever the number of keys; Cloud Run's default instance is 512 MiB.
 */
export const RESYNC_MAX_IN_FLIGHT = 4000;

/** A primary's key as its LIST gave it, with the object's `resourceVersion` in that LIST. */
export interface ListedKey extends Key {
  resourceVersion?: string;
}

/**
 * The keys of every primary object (paginated metadata-only LIST: names only, parsed as plain JSON,
 * decision 33), each with its resourceVersion, published with it so that its reconcile reads the
 * primary not older than the LIST saw it (core/message.ts `RESOURCE_VERSION_ATTRIBUTE`): the default `listKeys`.
 */
export async function* listPrimaryKeys(controller: Controller, ctx: ResyncContext): AsyncIterable<ListedKey> {
  for await (const obj of listMetadataPaged(ctx.kubeConfig, controller.primary)) {
    const { namespace = '', name = '', resourceVersion } = obj.metadata ?? {};
    yield resourceVersion ? { namespace, name, resourceVersion } : { namespace, name };
  }
}

/**
 * Per-controller result of one resync: keys published, or the error that stopped it, or why it was
 * skipped (its resource is not served: a CRD not installed).
 */
export interface ResyncReport {
  /** The cluster enumerated; for a fleet's report ({@link resyncClusters}) the clusters, comma-separated. */
  cluster: string;
  controllers: Record<string, { published: number; error?: string; skipped?: string; deferred?: boolean }>;
  published: number;
  durationMs: number;
  /**
   * The run reached its deadline ({@link ResyncOptions.deadline}) before every key was published: the
   * keys not yet published are left to the next run, which starts again from the first key (set
   * only then; per controller too).
   */
  deferred?: boolean;
}

/** Options of {@link resyncAll} for tools (`levelset resync`). */
export interface ResyncOptions {
  /** The cluster `kubeConfig` reaches, named in every key published; default {@link DEFAULT_CLUSTER}. */
  cluster?: string;
  /** Enumerate only: count the keys, publish nothing (`published` then counts the keys found). */
  dryRun?: boolean;
  /** Called after each key is published (or found, with `dryRun`) with the controller's count so far. */
  onKey?: (controller: string, count: number) => void;
  /**
   * At most this many keys published per second, every controller together (the request budget's
   * pacing, core/request-budget.ts `resyncKeysPerSecond`); default: as fast as the publisher takes them.
   */
  keysPerSecond?: number;
  /**
   * The pacing as a sliding window (core/request-budget.ts `resyncPacing`), in place of
   * {@link keysPerSecond}'s `limitsOf(keysPerSecond)`.
   */
  pacing?: ClientLimits;
  /**
   * `Date.now()` (ms) after which no key is published: the rest of the run's keys are deferred to the
   * next run ({@link ResyncReport.deferred}); default: none.
   */
  deadline?: number;
}

/**
 * Enumerates and publishes every controller's keys (`reason: "resync"`). A failing controller does
 * not stop the others; its error is in the report. Traced as one `resync` span per controller (its
 * LISTs under it) and, per key, an `enqueue` span starting the key's own trace (`levelset.cause`
 * `resync`, linked to the `resync` span), under which the key is published: each key's reconcile is
 * a trace of its own, sampled on its own, as a watch event's.
 */
export async function resyncAll(
  controllers: readonly Controller[],
  kubeConfig: KubeConfig,
  publisher: Pick<KeyPublisher, 'publish'>,
  logger: Logger,
  options: ResyncOptions = {},
): Promise<ResyncReport> {
  const started = performance.now();
  const cluster = options.cluster ?? DEFAULT_CLUSTER;
  const report: ResyncReport = { cluster, controllers: {}, published: 0, durationMs: 0 };
  const keysPerSecond = options.keysPerSecond;
  const pacing = options.pacing ?? (keysPerSecond ? limitsOf(keysPerSecond) : undefined);
  const paced = pacing ? requestLimiter(pacing) : undefined;
  const deadline = options.deadline;
  await Promise.all(
    controllers.map((controller) =>
      tracer().startActiveSpan(
        SPAN.resync,
        { root: true, attributes: { [ATTR.controller]: controller.name, [ATTR.cluster]: cluster } },
        (run) => resyncController(controller, run).finally(() => run.end()),
      ),
    ),
  );
  async function resyncController(controller: Controller, run: Span): Promise<void> {
    const ctx: ResyncContext = {
      cluster,
      kubeConfig,
      log: logger.child({ cluster, controller: controller.name }),
    };
    const keys: AsyncIterable<MappedKey & ListedKey> = controller.listKeys
      ? controller.listKeys(ctx)
      : listPrimaryKeys(controller, ctx);
    const entry: ResyncReport['controllers'][string] = { published: 0 };
    report.controllers[controller.name] = entry;
    const enqueuedAt = new Date().toISOString();
    // Streamed: a page of keys is published while the next is read, with at most
    // RESYNC_MAX_IN_FLIGHT publishes outstanding, so memory stays bounded however many keys.
    const inFlight = new Set<Promise<void>>();
    let enumerated = 0;
    let failure: { err: unknown } | undefined;
    try {
      let done = 0;
      const counted = () => options.onKey?.(controller.name, ++done);
      for await (const key of keys) {
        enumerated++;
        if (options.dryRun) {
          entry.published++;
          counted();
          continue;
        }
        await paced?.();
        if (deadline !== undefined && Date.now() >= deadline) {
          // The run's deadline: this key and the rest are left to the next run (decision 64).
          entry.deferred = true;
          report.deferred = true;
          break;
        }
        const keySpan = tracer().startSpan(SPAN.enqueue, {
          root: true,
          kind: SpanKind.PRODUCER,
          links: [{ context: run.spanContext() }],
          attributes: {
            [ATTR.controller]: controller.name,
            [ATTR.cluster]: key.cluster ?? cluster,
            [ATTR.key]: keyString(key),
            [ATTR.cause]: 'resync',
          },
        });
        const p = context
          .with(trace.setSpan(ROOT_CONTEXT, keySpan), () =>
            publisher.publish(
              // A key naming another cluster (the owner of a child in this one) is that cluster's.
              keyMessageOf(
                {
                  cluster: key.cluster ?? cluster,
                  controller: controller.name,
                  namespace: key.namespace,
                  name: key.name,
                },
                'resync',
                enqueuedAt,
              ),
              // A controller's own listKeys gives no version: its reconcile reads the latest.
              controller.listKeys ? undefined : key.resourceVersion,
            ),
          )
          .then(
            () => {
              entry.published++;
              counted();
            },
            (err: unknown) => {
              keySpan.setStatus({ code: SpanStatusCode.ERROR, message: errorText(err) });
              failure ??= { err };
            },
          )
          .finally(() => {
            keySpan.end();
            inFlight.delete(p);
          });
        inFlight.add(p);
        if (inFlight.size >= RESYNC_MAX_IN_FLIGHT) await Promise.race(inFlight);
        if (failure) throw failure.err;
      }
      await Promise.all(inFlight);
      if (failure) throw failure.err;
    } catch (err) {
      await Promise.allSettled(inFlight);
      if (isNotFound(err) && enumerated === 0) {
        // The resource type is not served (a CRD not installed yet): nothing to resync, not a failure.
        entry.skipped = 'resource not served';
        ctx.log.warn({ err: errorText(err) }, `${controller.name}: resource not served; nothing to resync`);
      } else {
        entry.error = errorText(err);
        run.setStatus({ code: SpanStatusCode.ERROR, message: entry.error });
      }
    }
  }
  report.published = Object.values(report.controllers).reduce((n, c) => n + c.published, 0);
  report.durationMs = Math.round(performance.now() - started);
  return report;
}

/** A fleet's resync: each cluster's report, and their sums per controller. */
export interface FleetResyncReport extends ResyncReport {
  clusters: Record<string, ResyncReport>;
}

/**
 * Resyncs every cluster in `clusters` one after the other (bounded memory: one cluster's
 * enumeration at a time), each against its own KubeConfig. A cluster that fails does not stop the
 * others. The sums: `controllers[name].published` over every cluster, `error` each failing
 * cluster's (`cluster: error`), `skipped` when skipped in every cluster.
 */
export async function resyncClusters(
  controllers: readonly Controller[],
  clusters: readonly string[],
  kubeConfig: (cluster: string) => KubeConfig,
  publisher: Pick<KeyPublisher, 'publish'>,
  logger: Logger,
  options: Pick<ResyncOptions, 'keysPerSecond' | 'pacing' | 'deadline'> = {},
): Promise<FleetResyncReport> {
  const started = performance.now();
  const fleet: FleetResyncReport = {
    cluster: clusters.join(','),
    clusters: {},
    controllers: {},
    published: 0,
    durationMs: 0,
  };
  for (const cluster of clusters) {
    let report: ResyncReport;
    try {
      report = await resyncAll(controllers, kubeConfig(cluster), publisher, logger, { ...options, cluster });
    } catch (err) {
      // The cluster's KubeConfig could not be made: every controller of it failed.
      const error = errorText(err);
      report = { cluster, controllers: {}, published: 0, durationMs: 0 };
      for (const c of controllers) report.controllers[c.name] = { published: 0, error };
    }
    fleet.clusters[cluster] = report;
    if (report.deferred) fleet.deferred = true;
    for (const [name, entry] of Object.entries(report.controllers)) {
      const sum = fleet.controllers[name] ?? { published: 0 };
      fleet.controllers[name] = sum;
      sum.published += entry.published;
      if (entry.error) sum.error = [sum.error, `${cluster}: ${entry.error}`].filter(Boolean).join('; ');
    }
  }
  for (const [name, sum] of Object.entries(fleet.controllers)) {
    const skipped = Object.values(fleet.clusters).map((r) => r.controllers[name]?.skipped);
    if (skipped.every((s) => s !== undefined)) sum.skipped = skipped[0];
  }
  fleet.published = Object.values(fleet.controllers).reduce((n, c) => n + c.published, 0);
  fleet.durationMs = Math.round(performance.now() - started);
  return fleet;
}

/**
 * The body of a resync request: empty (every cluster of the registry: the local timer, a
 * single-cluster deployment's scheduler job) or `{"cluster": "<id>"}` (one Cloud Scheduler job per
 * cluster, terraform/main.tf).
 */
export const resyncRequestSchema = z.strictObject({ cluster: clusterId.optional() });

export interface ResyncHandlerDeps {
  controllers: readonly Controller[];
  /** The ids of every cluster of the registry (functions/runtime/clusters.ts); default `[default]`. */
  clusters?: () => readonly string[];
  /** The KubeConfig of a cluster of {@link clusters}. */
  kubeConfig: (cluster: string) => KubeConfig;
  publisher: () => KeyPublisher;
  logger: Logger;
  /** What a request must satisfy ({@link rejectRequest}; an empty body is accepted); default: no token. */
  requestRules?: RequestRules;
  /** Keys published per second per cluster (the request budget's pacing); default: unpaced. */
  keysPerSecond?: number;
  /** The pacing as a sliding window (core/request-budget.ts `resyncPacing`); default: from {@link keysPerSecond}. */
  pacing?: ClientLimits;
  /**
   * The run's timeout, seconds (`LEVELSET_RESYNC_TIMEOUT_SECONDS`): a request publishes no key after
   * `timeoutSeconds − RESYNC_DEADLINE_MARGIN_SECONDS` from its start; default: no deadline.
   */
  timeoutSeconds?: number;
}

/**
 * Builds the HTTP handler: answers `200` with a {@link FleetResyncReport} as JSON (`deferred: true`
 * when the run reached its deadline, {@link ResyncHandlerDeps.timeoutSeconds}, with keys left for the
 * next run: logged as an error), or `500` with the
 * report when any controller failed in any cluster (Cloud Scheduler's retry config then applies); a
 * request that breaks the HTTP rules ({@link rejectRequest}) gets their status (401, 405, 413, 415,
 * 400) and `{error}`, and nothing is published. The body ({@link resyncRequestSchema}) names one
 * cluster, or none for every cluster; an invalid body or an unknown cluster answers `400`.
 */
export function createResyncHandler(deps: ResyncHandlerDeps): (req: Request, res: Response) => Promise<void> {
  const rules: RequestRules = { ...deps.requestRules, allowEmptyBody: true };
  return async (req, res) => {
    const rejection = rejectRequest(req, rules);
    if (rejection) {
      deps.logger.error({ err: rejection.reason }, 'resync request refused');
      res.status(rejection.status).json({ error: rejection.reason });
      return;
    }
    const known = deps.clusters?.() ?? [DEFAULT_CLUSTER];
    const body = resyncRequestSchema.safeParse(
      req.body === undefined || req.body === '' || (Buffer.isBuffer(req.body) && req.body.length === 0)
        ? {}
        : req.body,
    );
    const named = body.success ? body.data.cluster : undefined;
    const refusal = !body.success
      ? `invalid resync request: ${body.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')}`
      : named !== undefined && !known.includes(named)
        ? `unknown cluster "${named}": one of ${known.join(', ')}`
        : undefined;
    if (refusal) {
      deps.logger.error({ err: refusal }, 'resync request refused');
      res.status(400).json({ error: refusal });
      return;
    }
    try {
      const report = await resyncClusters(
        deps.controllers,
        named !== undefined ? [named] : known,
        deps.kubeConfig,
        deps.publisher(),
        deps.logger,
        {
          ...(deps.keysPerSecond ? { keysPerSecond: deps.keysPerSecond } : {}),
          ...(deps.pacing ? { pacing: deps.pacing } : {}),
          ...(deps.timeoutSeconds !== undefined
            ? { deadline: Date.now() + (deps.timeoutSeconds - RESYNC_DEADLINE_MARGIN_SECONDS) * 1000 }
            : {}),
        },
      );
      const failed = Object.entries(report.controllers).filter(([, c]) => c.error);
      if (failed.length)
        deps.logger.error({ report }, `resync failed for ${failed.map(([n]) => n).join(', ')}`);
      else if (report.deferred)
        // Not a failure (the next run starts again), but the keys past the deadline were not resynced.
        deps.logger.error(
          { report },
          `resync published ${report.published} keys and reached its deadline: the rest are left to the next run; raise resync_timeout_seconds (at most 1800) or kubernetes_request_budget`,
        );
      else deps.logger.info({ report }, `resync published ${report.published} keys`);
      await flushTraces();
      res.status(failed.length ? 500 : 200).json(report);
    } catch (err) {
      deps.logger.error({ err: errorText(err) }, 'resync failed');
      res.status(500).json({ error: errorText(err) });
    }
  };
}
