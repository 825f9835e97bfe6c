/**
 * Tracing through the OpenTelemetry API only (never the SDK): the tracer every part of Levelset
 * starts its spans with, the span names and attribute names one key's trace uses, and
 * {@link inSpan}. Without an SDK registered (`LEVELSET_TRACING=off`, the default; core/tracing.ts)
 * every call here is the API's no-op: no span is recorded, nothing is allocated per key beyond a
 * non-recording span object.
 *
 * One key's trace (docs/operations.md "Traces"): `enqueue` (relay or resync: the watch event that
 * mapped to the key, the first and last collapsed events as span events) → `<topic> create` (the Pub/Sub client's own
 * publish span, whose W3C context travels in the message attribute `googclient_traceparent`) →
 * `reconcile` (one per delivery, with its attempt and outcome) → the Kubernetes API calls (the
 * undici instrumentation's `GET`/`PATCH`… spans) and the kit's `child create|apply|prune` spans →
 * `requeue` → the requeued delivery's `reconcile`.
 */
import { type Attributes, type Span, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';

/** The instrumentation scope of Levelset's own spans. */
export const TRACER_NAME = 'levelset';

/** The tracer of Levelset's spans (the global provider's; a no-op one when tracing is off). */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** Span names. */
export const SPAN = {
  /** A key handed on by the relay (a watch event, a spec-index change, a publish retry) or the resync. */
  enqueue: 'enqueue',
  /** One delivery of a key to `reconcile` (or to an in-process worker). */
  reconcile: 'reconcile',
  /** A requested requeue being scheduled (local timer or Cloud Tasks task). */
  requeue: 'requeue',
  /** One resync run of one controller. */
  resync: 'resync',
  /** One AdmissionReview answered by the `admission` function (functions/runtime/admission.ts). */
  admission: 'admission',
} as const;

/** The kit's spans around each child write: `child create`, `child apply`, `child prune`. */
export type ChildOperation = 'create' | 'apply' | 'prune';

/** Attribute names of Levelset's spans (`levelset.*`), beside OpenTelemetry's semantic conventions. */
export const ATTR = {
  controller: 'levelset.controller',
  /** The key's cluster id (`default` for the cluster the functions run against). */
  cluster: 'levelset.cluster',
  /** `namespace/name` (client-go's key). */
  key: 'levelset.key',
  /** Why the key was enqueued: `watch`, `index`, `retry` (relay), `resync`, `requeue`, `manual`. */
  cause: 'levelset.cause',
  /** The watched resource, `group/version/plural` (`v1/secrets` for the core group). */
  resource: 'levelset.resource',
  /** `ADDED`, `MODIFIED`, `DELETED`. */
  eventType: 'levelset.event.type',
  resourceVersion: 'levelset.resource_version',
  /** The collapse window's edge that published the key: `leading` (at once) or `trailing` (at the window's end). */
  edge: 'levelset.collapse.edge',
  /** Events collapsed into an `enqueue` span's publish. */
  collapsed: 'levelset.collapsed',
  /** The delivery's outcome (`success`, `requeue`, `terminal`, `malformed`, `transient`, `error`). */
  outcome: 'levelset.outcome',
  /** The key message's `reason` (`watch`, `resync`, `manual`, `requeue`). */
  reason: 'levelset.reason',
  enqueuedAt: 'levelset.enqueued_at',
  /** ms a requeue asked for. */
  requeueAfterMs: 'levelset.requeue_after_ms',
  /** The child's `Kind name`. */
  child: 'levelset.child',
  /** Pub/Sub's delivery attempt (OpenTelemetry messaging semantic conventions). */
  deliveryAttempt: 'messaging.gcp_pubsub.message.delivery_attempt',
  messageId: 'messaging.message.id',
  /** The admission webhook an `admission` span answered for. */
  webhook: 'levelset.webhook',
  /** The AdmissionRequest's `operation` (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`). */
  admissionOperation: 'levelset.admission.operation',
  /** How the review ended: `allowed`, `denied`, `patched`, `failed`, `malformed` (core/admission.ts). */
  admissionOutcome: 'levelset.admission.outcome',
  admissionUid: 'levelset.admission.uid',
  admissionDryRun: 'levelset.admission.dry_run',
} as const;

/**
 * Runs `fn` inside a new active span (a child of the active one): its status is `ERROR` with the
 * message when `fn` throws (the error is rethrown), and it ends when `fn` settles.
 */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: err instanceof Error ? err.message : String(err),
      });
      throw err;
    } finally {
      span.end();
    }
  });
}
