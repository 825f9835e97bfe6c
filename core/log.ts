/**
 * Structured logs in the shape Cloud Logging reads: one JSON object per line with `severity`,
 * `message` and `logging.googleapis.com/labels`, via pino with Google Cloud's config
 * (`@google-cloud/pino-logging-gcp-config`).
 *
 * Never pass a Secret's `data`/`stringData` to a logger: log names, namespaces and versions only.
 * As a second line of defence, paths that could carry Secret data are redacted. A line written inside
 * a span carries its trace ({@link traceFields}).
 */
import { createGcpLoggingPinoConfig } from '@google-cloud/pino-logging-gcp-config';
import { isSpanContextValid, trace } from '@opentelemetry/api';
import { type Logger, pino } from 'pino';
import { type ControllerKey, keyString } from './contract/key.ts';

export type { Logger } from 'pino';

/** Cloud Logging labels: indexed, filterable in Logs Explorer (`labels.controller="foo"`). */
export const LABELS = 'logging.googleapis.com/labels';

const redact = {
  paths: ['data', 'stringData', '*.data', '*.stringData', 'object.data', 'object.stringData', '*.*.data'],
  censor: '[REDACTED]',
};

/**
 * The active span's trace context in OpenTelemetry's log fields (`trace_id`, `span_id`,
 * `trace_flags`), which Google Cloud's pino config turns into `logging.googleapis.com/trace`
 * (`projects/<GOOGLE_CLOUD_PROJECT>/traces/<trace id>`), `logging.googleapis.com/spanId` and
 * `logging.googleapis.com/trace_sampled`: Cloud Logging then shows a key's log lines under its
 * trace. `{}` outside a span, and always when tracing is off (no span is ever active).
 */
export function traceFields(): { trace_id?: string; span_id?: string; trace_flags?: string } {
  const sc = trace.getActiveSpan()?.spanContext();
  if (!sc || !isSpanContextValid(sc)) return {};
  return { trace_id: sc.traceId, span_id: sc.spanId, trace_flags: `0${sc.traceFlags.toString(16)}` };
}

/**
 * The root logger of a process. Level from `LOG_LEVEL` (default `info`).
 *
 * Without `destination`, each line is written to stdout at once (`pino.destination({ sync: true })`),
 * not buffered: pino's asynchronous default flushes its buffer in a `process.on('exit')` hook,
 * whose synchronous write retries forever on EPIPE, so a process whose stdout's reader had gone
 * (the local stack's child after its parent died) hung in `process.exit()`, deaf to SIGTERM. On
 * EPIPE the synchronous destination stops writing instead.
 * @param component `relay`, `functions`, `local`… — becomes `serviceContext.service` (`levelset-<component>`).
 */
export function createLogger(component: string, destination?: pino.DestinationStream): Logger {
  const config = createGcpLoggingPinoConfig(
    {
      serviceContext: { service: `levelset-${component}` },
      // Given explicitly so that the config never probes the metadata server (absent off Google Cloud).
      traceGoogleCloudProjectId: process.env.GOOGLE_CLOUD_PROJECT ?? 'local',
      inihibitDiagnosticMessage: true,
    },
    { level: process.env.LOG_LEVEL ?? 'info', redact, mixin: traceFields },
  );
  return pino(config, destination ?? pino.destination({ dest: 1, sync: true }));
}

/**
 * A child logger whose lines carry the cluster, controller and key (`namespace/name`) as Cloud
 * Logging labels, so that `labels.cluster="gke-eu" AND labels.controller="secret-replicator" AND
 * labels.key="team-a/db-creds"` finds one key's story.
 */
export function keyLogger(parent: Logger, key: ControllerKey): Logger {
  return parent.child({
    [LABELS]: { cluster: key.cluster, controller: key.controller, key: keyString(key) },
  });
}
