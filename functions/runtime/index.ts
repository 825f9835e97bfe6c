/**
 * The functions' runtime, for functions-framework and Cloud Run functions (runtime `nodejs24`):
 * {@link registerFunctions} registers, for a registry's controllers, `reconcile` (Pub/Sub push), `resync` (Cloud Scheduler) and `auditLog` (Pub/Sub push from the
 * audit log sink's topic: functions/runtime/audit-log.ts). Configuration comes from the
 * environment (see README "Configuration"; the clusters served: functions/runtime/clusters.ts); clients are
 * created once per instance, at first use.
 * Each checks requests at the HTTP boundary first (`http.ts`: method, size, content type, optional
 * shared token `LEVELSET_FUNCTIONS_TOKEN`). Tracing: `LEVELSET_TRACING` (core/tracing.ts).
 * `LEVELSET_METRICS_PORT`: serve the process's Prometheus metrics there (core/metrics.ts): the
 * reconcile's figures, and for any target prom-client's process defaults (heap, RSS).
 *
 * Cold start: an instance serves one target, so what only `resync` or `auditLog` needs (the resync,
 * the audit log's mapping, the Pub/Sub publisher and its gRPC stack) is imported at its first
 * request, not when `reconcile` starts
 * (`npm run bench`, cold start). Deployed as one esbuild bundle (`levelset build`, cli/build/index.ts), in
 * which these dynamic imports are chunks of their own; its entry imports the project's registry and
 * calls {@link registerFunctions}. Locally, functions/runtime/main.ts is that entry with the project's
 * registry loaded at start (core/project.ts):
 *
 *   npx functions-framework --source=functions/runtime/main.ts --target=reconcile --port=8081
 */

import type { Request, Response } from '@google-cloud/functions-framework';
import * as ff from '@google-cloud/functions-framework';
import type { AdmissionWebhook } from '../../core/contract/admission.ts';
import type { Controller } from '../../core/contract/controller.ts';
import { createLogger } from '../../core/log.ts';
import { readMetricsPort, serveMetrics } from '../../core/metrics.ts';
import { readRequestBudget } from '../../core/request-budget.ts';
import { startTracing } from '../../core/tracing.ts';
import { createAdmissionHandler, readAdmissionPathToken } from './admission.ts';
import { createClusterRegistry } from './clusters.ts';
import { readRequestRules, routeFrameworkErrors, servedTarget, withoutRequestDomains } from './http.ts';
import { createReconcileHandler } from './reconcile.ts';
import { createRequeuer, readRequeueConfig } from './requeue.ts';
import { readRetryConfig } from './retry.ts';

type Handler = (req: Request, res: Response) => Promise<void>;

/**
 * Registers the functions `reconcile`, `resync` and `auditLog` with functions-framework for
 * `controllers`, and `admission` for `webhooks` (functions/runtime/admission.ts: each at `/<name>`;
 * its own Cloud Run service, decision 55), and starts what they share (tracing, the clusters, the metrics port): call it once,
 * from the module functions-framework loads (the bundle's entry, functions/runtime/main.ts).
 * @throws {Error} on invalid configuration in the environment (clusters, requeue, retry, tracing)
 */
export async function registerFunctions(
  controllers: readonly Controller[],
  webhooks: readonly AdmissionWebhook[] = [],
): Promise<void> {
  // First: the Pub/Sub client enables its own spans only when tracing runs (core/publish.ts).
  await startTracing('functions');
  const logger = createLogger('functions');

  // Every cluster this deployment serves (LEVELSET_CLUSTERS; default: the one cluster of KUBECONFIG or
  // KUBERNETES_ENDPOINT); validated now, each cluster's KubeConfig made at its first key.
  const clusters = createClusterRegistry();

  const requestRules = readRequestRules();

  // Failed keys are acknowledged and requeued, then dead-lettered (functions/runtime/retry.ts): validated now.
  const requeueConfig = readRequeueConfig();
  const retry = readRetryConfig();
  // The cluster's request budget (core/request-budget.ts): each cluster's KubeConfig takes this
  // instance's share, the resync its pacing; validated now.
  const budget = readRequestBudget();

  /**
   * The dead-letter topic's publisher, made at the first dead letter (the Pub/Sub client's gRPC stack
   * is not loaded before: cold start).
   */
  let deadLetterPublisher: ReturnType<typeof import('../../core/publish.ts').createKeyPublisher> | undefined;
  const publishDeadLetter: import('../../core/publish.ts').KeyPublisher['publishEncoded'] = async (
    message,
  ) => {
    if (!deadLetterPublisher) {
      const [{ readFunctionsConfig }, { createKeyPublisher, UNORDERED_BATCHING }] = await Promise.all([
        import('../../core/config.ts'),
        import('../../core/publish.ts'),
      ]);
      const config = readFunctionsConfig();
      deadLetterPublisher ??= createKeyPublisher({
        projectId: config.projectId,
        topic: retry.deadLetterTopic,
        emulatorHost: config.emulatorHost,
        logger,
        ordering: false,
        batching: { ...UNORDERED_BATCHING, maxMilliseconds: 0 },
      });
    }
    return deadLetterPublisher.publishEncoded(message);
  };

  // The reconcile's Prometheus metrics on a port of their own, never the function's: only where a
  // scraper runs (the local stack, core/metrics.ts); Cloud Run has the log-based metrics.
  const metricsPort = readMetricsPort();
  if (metricsPort !== undefined) await serveMetrics(metricsPort);

  /** The resync handler, with its publisher, built at the first resync request. */
  let resyncHandler: Promise<Handler> | undefined;
  async function loadResyncHandler(): Promise<Handler> {
    const [{ readFunctionsConfig }, { createKeyPublisher }, { createResyncHandler, RESYNC_PUBLISHING }] =
      await Promise.all([
        import('../../core/config.ts'),
        import('../../core/publish.ts'),
        import('./resync.ts'),
      ]);
    let publisher: ReturnType<typeof createKeyPublisher> | undefined;
    return createResyncHandler({
      controllers,
      clusters: () => clusters.ids,
      kubeConfig: (cluster) => {
        const kc = clusters.kubeConfig(cluster);
        if (!kc) throw new Error(`unknown cluster "${cluster}"`);
        return kc;
      },
      publisher: () => {
        if (!publisher) {
          // The resync's own topic: live keys never queue behind its backlog (config.ts, resyncTopicOf).
          const config = readFunctionsConfig();
          publisher = createKeyPublisher({
            projectId: config.projectId,
            topic: config.resyncTopic,
            emulatorHost: config.emulatorHost,
            logger,
            ...RESYNC_PUBLISHING,
          });
        }
        return publisher;
      },
      logger,
      requestRules,
      ...(budget ? { keysPerSecond: budget.resyncKeysPerSecond, pacing: budget.resyncPacing } : {}),
      ...(budget?.resyncTimeoutSeconds !== undefined ? { timeoutSeconds: budget.resyncTimeoutSeconds } : {}),
    });
  }

  /** The audit log handler, with its publisher (the keys topic, ordered as the relay's), built at its first request. */
  let auditLogHandler: Promise<Handler> | undefined;
  async function loadAuditLogHandler(): Promise<Handler> {
    const [{ readFunctionsConfig }, { createKeyPublisher }, { createAuditLogHandler }] = await Promise.all([
      import('../../core/config.ts'),
      import('../../core/publish.ts'),
      import('./audit-log.ts'),
    ]);
    const config = readFunctionsConfig();
    let publisher: ReturnType<typeof createKeyPublisher> | undefined;
    return createAuditLogHandler({
      controllers,
      clusters: () => clusters.ids,
      kubeConfig: (cluster) => clusters.kubeConfig(cluster),
      publisher: () => {
        publisher ??= createKeyPublisher({
          projectId: config.projectId,
          topic: config.topic,
          emulatorHost: config.emulatorHost,
          logger,
        });
        return publisher;
      },
      serviceAccount: () => {
        if (!config.serviceAccount) throw new Error('LEVELSET_FUNCTIONS_SERVICE_ACCOUNT is not set');
        return config.serviceAccount;
      },
      logger,
      requestRules,
    });
  }

  // No request runs in a node:domain: the framework's per-request domain would turn on async hooks
  // that cost every promise of the process (http.ts, withoutRequestDomains).
  withoutRequestDomains();
  const handlers: Record<'reconcile' | 'resync' | 'auditLog' | 'admission', Handler> = {
    reconcile: createReconcileHandler({
      controllers,
      kubeConfig: (cluster) => clusters.kubeConfig(cluster),
      clusters: () => clusters.ids,
      logger,
      requestRules,
      requeuer: createRequeuer(requeueConfig, logger),
      retry,
      deadLetters: () => ({ publishEncoded: publishDeadLetter }),
    }),
    resync: async (req, res) => {
      resyncHandler ??= loadResyncHandler();
      await (await resyncHandler)(req, res);
    },
    auditLog: async (req, res) => {
      auditLogHandler ??= loadAuditLogHandler();
      await (await auditLogHandler)(req, res);
    },
    admission: createAdmissionHandler({ webhooks, logger, pathToken: readAdmissionPathToken() }),
  };
  ff.http('reconcile', handlers.reconcile);
  ff.http('admission', handlers.admission);
  ff.http('resync', handlers.resync);
  ff.http('auditLog', handlers.auditLog);

  // A body the framework cannot parse reaches the served function's handler, not Express's 400 page.
  const served = handlers[servedTarget() as keyof typeof handlers] as Handler | undefined;
  if (served) routeFrameworkErrors(served);
}
