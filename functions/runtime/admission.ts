/**
 * The `admission` function: the project's admission webhooks (core/contract/admission.ts), each
 * served at `/<name>` of one HTTP function (`/<token>/<name>` with `LEVELSET_ADMISSION_PATH_TOKEN`), on a Cloud Run service of its own (docs/architecture.md,
 * decision 55). The API server POSTs an admission.k8s.io/v1 `AdmissionReview`; the answer is always
 * `200` with a review (core/admission.ts `answerAdmission`: a throw or a missed deadline answered
 * per the webhook's failure policy), except for a request that is not a review at all (`400`), a
 * path naming no webhook (`404`), another method (`405`) or content type (`415`).
 *
 * Observability, as for reconciles: an `admission` span per call (kind `SERVER`, continuing a
 * `traceparent` the caller sent; attributes `levelset.webhook`, `levelset.admission.operation`,
 * `levelset.resource`, `levelset.admission.outcome`, and the object's `levelset.key` with
 * `levelset.outcome` `success` for an admitted call, so that `levelset trace` shows it among the
 * key's traces and a denial's trace is always exported: core/tracing-sdk.ts), one log line per denial or failure
 * (`outcome`, `durationMs`, the webhook as a Cloud Logging label; never the object), and the
 * prom-client metrics `levelset_admission_duration_seconds` (by webhook and outcome) and
 * `levelset_admission_denied_total` (by webhook and reason), served with the reconcile's when
 * `LEVELSET_METRICS_PORT` is set (core/metrics.ts).
 */
import { timingSafeEqual } from 'node:crypto';
import type { Request, Response } from '@google-cloud/functions-framework';
import { context, propagation, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { Counter, Histogram } from 'prom-client';
import * as z from 'zod';
import { type AdmissionReviewResponse, answerAdmission } from '../../core/admission.ts';
import type { AdmissionWebhook } from '../../core/contract/admission.ts';
import { ATTR, SPAN, tracer } from '../../core/k8s/tracing.ts';
import { LABELS, type Logger } from '../../core/log.ts';
import { DURATION_BUCKETS_SECONDS } from '../../core/metrics.ts';

/**
 * Largest review accepted, bytes: an object and its old version, each at most etcd's default
 * 1.5 MiB request (kube-apiserver refuses larger writes), with room for the envelope.
 */
export const MAX_ADMISSION_BODY_BYTES = 4 * 1024 * 1024;

export const admissionDuration = new Histogram({
  name: 'levelset_admission_duration_seconds',
  help: 'Seconds an admission webhook took to answer, by webhook and outcome (allowed, denied, patched, failed, malformed).',
  labelNames: ['webhook', 'outcome'] as const,
  buckets: [...DURATION_BUCKETS_SECONDS],
});

export const admissionDenied = new Counter({
  name: 'levelset_admission_denied_total',
  help: 'Admission requests denied, by webhook and reason (the denial status reason, InternalError for a failing handler under failurePolicy Fail).',
  labelNames: ['webhook', 'reason'] as const,
});

export interface AdmissionHandlerDeps {
  webhooks: readonly AdmissionWebhook[];
  logger: Logger;
  /**
   * A secret first path segment (`/<token>/<name>`), where the API server cannot authenticate
   * (terraform/admission.tf, `LEVELSET_ADMISSION_PATH_TOKEN`); a request without it is a 404.
   */
  pathToken?: string;
}

/** `LEVELSET_ADMISSION_PATH_TOKEN`: unset or empty (none), else at least 32 characters of [A-Za-z0-9_-]. */
const pathTokenSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{32,}$/, 'must be at least 32 characters of letters, digits, _ and -')
  .optional();

/**
 * The path token of the environment.
 * @throws {Error} naming `LEVELSET_ADMISSION_PATH_TOKEN` when it is set and malformed
 */
export function readAdmissionPathToken(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const parsed = pathTokenSchema.safeParse(env.LEVELSET_ADMISSION_PATH_TOKEN || undefined);
  if (!parsed.success) throw new Error(`LEVELSET_ADMISSION_PATH_TOKEN ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/** The webhook name a request path names, or `undefined` when the path lacks the token. */
function webhookNameOf(path: string, token: string | undefined): string | undefined {
  const segments = path.split('/').filter(Boolean);
  if (token === undefined) return segments.length === 1 ? segments[0] : undefined;
  if (segments.length !== 2) return undefined;
  const given = Buffer.from(segments[0] ?? '');
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected) ? segments[1] : undefined;
}

/**
 * The `admission` HTTP handler for `webhooks`, routed by the request's path (`/<name>`).
 * @throws {Error} when two webhooks share a name (at creation)
 */
export function createAdmissionHandler(
  deps: AdmissionHandlerDeps,
): (req: Request, res: Response) => Promise<void> {
  const byName = new Map<string, AdmissionWebhook>();
  for (const w of deps.webhooks) {
    if (byName.has(w.name)) throw new Error(`two webhooks are named "${w.name}"`);
    byName.set(w.name, w);
  }
  return async (req, res) => {
    const started = performance.now();
    const name = webhookNameOf(req.path ?? '/', deps.pathToken);
    const webhook = name === undefined ? undefined : byName.get(name);
    if (!webhook) {
      // The path is not logged: it may hold a wrong guess of the token.
      deps.logger.warn({ method: req.method }, 'admission request for no webhook');
      res.status(404).json({ message: 'no webhook is served at this path' });
      return;
    }
    if (req.method !== 'POST') {
      res.status(405).set('Allow', 'POST').end();
      return;
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > MAX_ADMISSION_BODY_BYTES) {
      res.status(413).json({ message: `body of ${declared} bytes exceeds ${MAX_ADMISSION_BODY_BYTES}` });
      return;
    }
    if (!req.is('application/json')) {
      res
        .status(415)
        .json({ message: `content type ${req.headers['content-type'] ?? '(none)'} not accepted` });
      return;
    }
    const log = deps.logger.child({ [LABELS]: { webhook: webhook.name } });
    const parent = propagation.extract(context.active(), req.headers);
    await tracer().startActiveSpan(
      SPAN.admission,
      { kind: SpanKind.SERVER, attributes: { [ATTR.webhook]: webhook.name } },
      parent,
      async (span) => {
        try {
          const answer = await answerAdmission(webhook, req.body, { log });
          const durationMs = Math.round(performance.now() - started);
          const request = answer.request;
          if (request) {
            const { group, version, resource } = request.resource;
            span.setAttributes({
              [ATTR.admissionOperation]: request.operation,
              [ATTR.resource]: [group, version, resource].filter(Boolean).join('/'),
              [ATTR.admissionUid]: request.uid,
              [ATTR.admissionDryRun]: request.dryRun,
            });
          }
          span.setAttribute(ATTR.admissionOutcome, answer.outcome);
          // The key's (levelset trace finds the call among the key's traces) and the export decision's
          // outcome: a denial or failure is always exported, an admitted call as a successful key is.
          if (request?.name)
            span.setAttribute(
              ATTR.key,
              request.namespace ? `${request.namespace}/${request.name}` : request.name,
            );
          span.setAttribute(
            ATTR.outcome,
            answer.outcome === 'allowed' || answer.outcome === 'patched' ? 'success' : answer.outcome,
          );
          admissionDuration.observe({ webhook: webhook.name, outcome: answer.outcome }, durationMs / 1000);
          const response =
            answer.status === 200 ? (answer.body as AdmissionReviewResponse).response : undefined;
          if (response && !response.allowed) {
            const reason = response.status?.reason ?? 'Forbidden';
            admissionDenied.inc({ webhook: webhook.name, reason });
            span.setStatus({ code: SpanStatusCode.ERROR, message: answer.outcome });
          }
          const line = {
            outcome: answer.outcome,
            durationMs,
            operation: request?.operation,
            resource: request?.resource.resource,
            namespace: request?.namespace || undefined,
            name: request?.name || undefined,
            uid: request?.uid,
            user: request?.userInfo.username,
            dryRun: request?.dryRun || undefined,
            ...(response?.status ? { code: response.status.code, reason: response.status.reason } : {}),
            ...(answer.error ? { err: answer.error } : {}),
          };
          if (answer.outcome === 'failed' || answer.outcome === 'malformed')
            log.error(line, `admission webhook failed; answered per failurePolicy ${webhook.failurePolicy}`);
          else if (answer.outcome === 'denied')
            log.info(line, `admission denied: ${response?.status?.message ?? ''}`);
          else log.debug(line, 'admission allowed');
          res.status(answer.status).json(answer.body);
        } finally {
          span.end();
        }
      },
    );
  };
}
