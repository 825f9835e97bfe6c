/**
 * The functions' entry point, for functions-framework and Cloud Run functions (runtime `nodejs24`):
 * `reconcile` (Pub/Sub push) and `resync` (Cloud Scheduler). Configuration comes from the
 * environment (see README "Configuration"; the clusters served: functions/clusters.ts); clients are
 * created once per instance, at first use.
 * Both check requests at the HTTP boundary first (`http.ts`: method, size, content type, optional
 * shared token `LEVELSET_FUNCTIONS_TOKEN`). Tracing: `LEVELSET_TRACING` (functions/tracing.ts).
 *
 *   npx functions-framework --target=reconcile --port=8081
 *   npx functions-framework --target=resync --port=8082
 */
import * as ff from '@google-cloud/functions-framework';
import { createClusterRegistry } from './clusters.ts';
import { readFunctionsConfig } from './config.ts';
import { controllers } from './controllers/index.ts';
import { readRequestRules, routeFrameworkErrors, servedTarget } from './http.ts';
import { createLogger } from './log.ts';
import { createKeyPublisher, type KeyPublisher } from './publish.ts';
import { createReconcileHandler } from './reconcile.ts';
import { createRequeuer, readRequeueConfig } from './requeue.ts';
import { createResyncHandler } from './resync.ts';
import { startTracing } from './tracing.ts';

// First: the Pub/Sub client enables its own spans only when tracing runs (functions/publish.ts).
await startTracing('functions');
const logger = createLogger('functions');

// Every cluster this deployment serves (LEVELSET_CLUSTERS; default: the one cluster of KUBECONFIG or
// KUBERNETES_ENDPOINT); validated now, each cluster's KubeConfig made at its first key.
const clusters = createClusterRegistry();

let publisher: KeyPublisher | undefined;
function sharedPublisher(): KeyPublisher {
  if (!publisher) {
    const config = readFunctionsConfig();
    publisher = createKeyPublisher({ ...config, emulatorHost: config.emulatorHost, logger });
  }
  return publisher;
}

const requestRules = readRequestRules();
const handlers = {
  reconcile: createReconcileHandler({
    controllers,
    kubeConfig: (cluster) => clusters.kubeConfig(cluster),
    logger,
    requestRules,
    requeuer: createRequeuer(readRequeueConfig(), logger),
  }),
  resync: createResyncHandler({
    controllers,
    clusters: () => clusters.ids,
    kubeConfig: (cluster) => {
      const kc = clusters.kubeConfig(cluster);
      if (!kc) throw new Error(`unknown cluster "${cluster}"`);
      return kc;
    },
    publisher: sharedPublisher,
    logger,
    requestRules,
  }),
};
ff.http('reconcile', handlers.reconcile);
ff.http('resync', handlers.resync);

// A body the framework cannot parse reaches the served function's handler, not Express's 400 page.
const served = handlers[servedTarget() as keyof typeof handlers] as
  | (typeof handlers)['reconcile']
  | undefined;
if (served) routeFrameworkErrors(served);
