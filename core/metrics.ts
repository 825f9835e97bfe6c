/**
 * The reconcile's own Prometheus metrics (prom-client, the process's default registry, beside
 * `levelset_drift_corrected_total` of functions/runtime/drift.ts), counted by `reconcileKey`
 * (functions/runtime/reconcile.ts) in both modes, and the `/metrics` server that exposes them when `LEVELSET_METRICS_PORT` is set.
 *
 * Where each figure is read:
 * - locally, `levelset dev` sets `LEVELSET_METRICS_PORT` for the `reconcile` function and records
 *   its URL in `.levelset/stack.json` (`reconcileMetricsUrl`); `levelset status --watch` reads it;
 * - on Google Cloud, Cloud Run instances are not scraped and the port is never set: the same
 *   figures are Terraform's log-based metrics of the final line (terraform/monitoring.tf:
 *   `reconcile_outcomes` counts the lines, `reconcile_duration` reads `durationMs`).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, collectDefaultMetrics, Histogram, register } from 'prom-client';
import * as z from 'zod';
import type { Outcome } from './contract/controller.ts';

/** Reconcile deliveries, by controller and outcome: what `reconcile_outcomes` counts in the cloud. */
export const RECONCILE_TOTAL_METRIC = 'levelset_reconcile_total';
/** Seconds of a reconcile (its final line's `durationMs` / 1000), by controller and outcome. */
export const RECONCILE_DURATION_METRIC = 'levelset_reconcile_duration_seconds';

/**
 * The duration buckets, seconds: 5 ms × 2ⁱ for i = 0…19 (5 ms to 43.7 min), the
 * `exponential_buckets` (scale 5, growth factor 2, 20 finite buckets) of Terraform's
 * `reconcile_duration` log-based metric, so a quantile read locally and one in Cloud Monitoring
 * interpolate within the same bounds.
 */
export const DURATION_BUCKETS_SECONDS: readonly number[] = Array.from(
  { length: 20 },
  (_, i) => (5 * 2 ** i) / 1000,
);

export const reconcileTotal = new Counter({
  name: RECONCILE_TOTAL_METRIC,
  help: 'Reconcile deliveries by controller and outcome (success, requeue, transient, terminal, malformed, error).',
  labelNames: ['controller', 'outcome'] as const,
});

export const reconcileDuration = new Histogram({
  name: RECONCILE_DURATION_METRIC,
  help: 'Reconcile duration in seconds (the final line durationMs), by controller and outcome.',
  labelNames: ['controller', 'outcome'] as const,
  buckets: [...DURATION_BUCKETS_SECONDS],
});

/** Writes the API server refused as wasted: `409` (a stale resourceVersion, AlreadyExists), `403` into a terminating namespace, `422`. */
export const REJECTED_WRITES_METRIC = 'levelset_rejected_writes_total';

/**
 * Rejected writes, labelled as kube-apiserver's `apiserver_request_total` is: `verb` (create,
 * update, patch, delete), `resource` (plural, `.group` for a named group: `deployments.apps`),
 * `code` (`409`, `403`, `422`) and `reason` (the `Status` reason: `AlreadyExists`, `Conflict`,
 * `Invalid`; `NamespaceTerminating` for the 403). Other 403s (RBAC) are not counted here.
 * Counted by core/k8s/rest.ts for every request a Levelset process sends, in both modes.
 */
export const rejectedWrites = new Counter({
  name: REJECTED_WRITES_METRIC,
  help: 'Writes the API server rejected: 409 (conflict, already exists), 403 (namespace terminating), 422 (invalid), by verb, resource, code and reason.',
  labelNames: ['verb', 'resource', 'code', 'reason'] as const,
});

/**
 * Counts one delivery's outcome and, when it has one, its duration.
 * @param controller the controller label: a registered controller's name, or `unknown` (a message
 *   naming no registered controller, so that a poison message cannot add label values at will)
 * @param durationMs milliseconds, as on the final line; `undefined` for an outcome without one (`malformed`)
 */
export function recordReconcile(controller: string, outcome: Outcome, durationMs: number | undefined): void {
  reconcileTotal.inc({ controller, outcome });
  if (durationMs !== undefined) reconcileDuration.observe({ controller, outcome }, durationMs / 1000);
}

/** `LEVELSET_METRICS_PORT`: a TCP port, or unset (no metrics server). */
const metricsPort = z.coerce.number().int().min(1).max(65_535).optional();

/**
 * The metrics port of the environment.
 * @throws {z.ZodError} when `LEVELSET_METRICS_PORT` is set but not a port (1–65535)
 */
export function readMetricsPort(env: NodeJS.ProcessEnv = process.env): number | undefined {
  return metricsPort.parse(env.LEVELSET_METRICS_PORT || undefined);
}

/**
 * Serves the default registry as Prometheus text at `GET /metrics` on `127.0.0.1:port` (0: a free
 * port); anything else is 404, a method other than GET/HEAD 405. The registry then holds
 * prom-client's default process metrics too (`process_resident_memory_bytes`,
 * `nodejs_heap_size_used_bytes`, …), as a Go controller's client_golang serves its own: the
 * process's memory over time (`npm run soak` reads it).
 * @returns the server and the port it bound
 * @throws the listen error (`EADDRINUSE`)
 */
export async function serveMetrics(port: number): Promise<{ server: Server; port: number }> {
  if (!register.getSingleMetric('nodejs_heap_size_used_bytes')) collectDefaultMetrics();
  const server = createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if ((req.url ?? '/').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    register.metrics().then(
      (text) => res.writeHead(200, { 'content-type': register.contentType }).end(text),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.unref();
  return { server, port: (server.address() as AddressInfo).port };
}
