/**
 * The AdmissionReview boundary, shared by the `admission` function (functions/runtime/admission.ts)
 * and the kit's test helper (functions/kit/webhook-testing.ts): the admission.k8s.io/v1
 * `AdmissionReview` request validated with zod, the webhook's `admit` run under a deadline, and the
 * answer per the webhook's `failurePolicy` when it throws, so the API server always gets a
 * well-formed review and never a 5xx to retry (core/contract/admission.ts).
 *
 * Why answer a throw ourselves rather than with a 500: kube-apiserver treats a non-2xx answer as a
 * failed call (`webhookutil.ErrCallingWebhook`, "failed calling webhook") and applies the same
 * failure policy, but its message would be the HTTP error's, not the handler's; answering in the
 * review keeps the handler's message and tells the client which webhook failed.
 */
import { type Logger, pino } from 'pino';
import * as z from 'zod';
import type {
  AdmissionContext,
  AdmissionRequest,
  AdmissionResponse,
  AdmissionWebhook,
} from './contract/admission.ts';

const groupVersionKind = z.object({ group: z.string(), version: z.string(), kind: z.string() });
const groupVersionResource = z.object({ group: z.string(), version: z.string(), resource: z.string() });
const kubeObject = z.looseObject({ apiVersion: z.string().optional(), kind: z.string().optional() });

/** admission.k8s.io/v1 `AdmissionRequest` (unknown fields kept: a newer API server may add some). */
export const admissionRequestSchema = z.looseObject({
  uid: z.string().min(1),
  kind: groupVersionKind,
  resource: groupVersionResource,
  subResource: z.string().optional(),
  requestKind: groupVersionKind.optional(),
  requestResource: groupVersionResource.optional(),
  requestSubResource: z.string().optional(),
  name: z.string().optional(),
  namespace: z.string().optional(),
  operation: z.enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']),
  userInfo: z
    .looseObject({
      username: z.string().optional(),
      uid: z.string().optional(),
      groups: z.array(z.string()).optional(),
      extra: z.record(z.string(), z.array(z.string())).optional(),
    })
    .default({}),
  object: kubeObject.nullish(),
  oldObject: kubeObject.nullish(),
  dryRun: z.boolean().optional(),
  options: z.record(z.string(), z.unknown()).nullish(),
});

/** admission.k8s.io/v1 `AdmissionReview` as an API server sends it. */
export const admissionReviewSchema = z.object({
  apiVersion: z.literal('admission.k8s.io/v1'),
  kind: z.literal('AdmissionReview'),
  request: admissionRequestSchema,
});

/** The review sent back: the request's `apiVersion`/`kind` and the `response` (uid echoed). */
export interface AdmissionReviewResponse {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

/** How a review ended, for logs, spans and metrics. */
export type AdmissionOutcome = 'allowed' | 'denied' | 'patched' | 'failed' | 'malformed';

/** One answered review. */
export interface AdmissionAnswer {
  /** HTTP status: 200 with a review, or 400 when the body had no request to answer (no `uid`). */
  status: 200 | 400;
  body: AdmissionReviewResponse | { message: string };
  outcome: AdmissionOutcome;
  /** The request as validated (absent when malformed). */
  request?: AdmissionRequest;
  /** The handler's error, or why the review was malformed. */
  error?: string;
}

/**
 * The share of `timeoutSeconds` a handler gets before the answer is given up on and made per the
 * failure policy: the rest is the network and the API server's own margin, so that the policy
 * applied is ours and carries the reason, rather than the API server's timeout.
 */
export const HANDLER_DEADLINE_SHARE = 0.8;

/** Thrown inside {@link answerAdmission} when the handler did not settle before its deadline. */
class DeadlineExceeded extends Error {}

function review(response: AdmissionResponse): AdmissionReviewResponse {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
}

/**
 * The answer for a failed handler per the webhook's `failurePolicy`: `Fail` denies with the error's
 * message, code 500 and reason `InternalError` (what kube-apiserver's own failing-closed call gives:
 * `apierrors.NewInternalError`); `Ignore` allows, with a warning saying the webhook failed.
 */
export function failureAnswer(
  webhook: Pick<AdmissionWebhook, 'name' | 'failurePolicy'>,
  uid: string,
  message: string,
): AdmissionResponse {
  if (webhook.failurePolicy === 'Ignore')
    return {
      uid,
      allowed: true,
      warnings: [`webhook ${webhook.name} failed and its failurePolicy is Ignore: ${message}`],
    };
  return { uid, allowed: false, status: { code: 500, reason: 'InternalError', message } };
}

/**
 * Answers one AdmissionReview body for `webhook`: validates it, runs `webhook.admit` within
 * {@link HANDLER_DEADLINE_SHARE} of its `timeoutSeconds`, and answers a throw, a timeout or a
 * malformed request that carries a `uid` per the failure policy ({@link failureAnswer}). A body
 * without a `uid` cannot be answered: 400 with the reason. Never throws.
 * @param body the parsed JSON body
 * @param ctx the handler's context (its logger)
 */
export async function answerAdmission(
  webhook: AdmissionWebhook,
  body: unknown,
  ctx: AdmissionContext,
): Promise<AdmissionAnswer> {
  const parsed = admissionReviewSchema.safeParse(body);
  if (!parsed.success) {
    const reason = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || 'body'}: ${i.message}`)
      .join('; ');
    const uid = (body as { request?: { uid?: unknown } } | undefined)?.request?.uid;
    if (typeof uid !== 'string' || uid === '')
      return {
        status: 400,
        body: { message: `not an admission.k8s.io/v1 AdmissionReview: ${reason}` },
        outcome: 'malformed',
        error: reason,
      };
    const message = `malformed AdmissionReview: ${reason}`;
    return {
      status: 200,
      body: review(failureAnswer(webhook, uid, message)),
      outcome: 'malformed',
      error: message,
    };
  }
  const r = parsed.data.request;
  const request: AdmissionRequest = {
    ...r,
    name: r.name ?? '',
    namespace: r.namespace ?? '',
    userInfo: r.userInfo,
    object: (r.object ?? undefined) as AdmissionRequest['object'],
    oldObject: (r.oldObject ?? undefined) as AdmissionRequest['oldObject'],
    dryRun: r.dryRun ?? false,
    options: r.options ?? undefined,
  };
  const deadlineMs = Math.round(webhook.timeoutSeconds * 1000 * HANDLER_DEADLINE_SHARE);
  let timer: NodeJS.Timeout | undefined;
  try {
    const response = await Promise.race([
      webhook.admit(request, ctx),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new DeadlineExceeded(`no answer within ${deadlineMs} ms`)),
          deadlineMs,
        );
      }),
    ]);
    const answer: AdmissionResponse = { ...response, uid: request.uid };
    const outcome: AdmissionOutcome = !answer.allowed ? 'denied' : answer.patch ? 'patched' : 'allowed';
    return { status: 200, body: review(answer), outcome, request };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return {
      status: 200,
      body: review(failureAnswer(webhook, request.uid, message)),
      outcome: 'failed',
      request,
      error: message,
    };
  } finally {
    clearTimeout(timer);
  }
}

/** A logger that writes nothing (the test helper's default). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
