/**
 * Quota and rate-limit answers, sorted once for every controller of the kit: they are transient,
 * retried after the time they ask for, never at once and never given up on.
 *
 * - Google Cloud: gRPC `RESOURCE_EXHAUSTED` (8), or HTTP `429` from a REST client; the delay is the
 *   `google.rpc.RetryInfo` detail's `retryDelay` when the answer carries one (Google's API design
 *   guide, "Errors: error details"; google-gax decodes it into `statusDetails`).
 * - Kubernetes: `429 Too Many Requests` (API Priority and Fairness, max-in-flight), whose
 *   `Retry-After` header gives seconds (apimachinery `SuggestsClientDelay`).
 *
 * The kit answers one with `Result.rateLimited` (core/contract/controller.ts); the runtime waits the
 * delay it names, else the key's backoff counted in its message (functions/runtime/retry.ts).
 */
import { ApiException } from '@kubernetes/client-node';
import type { RateLimit } from '../../core/contract/controller.ts';
import { GRPC, grpcCodeOf } from './google-cloud.ts';

export type { RateLimit };

/** `google.protobuf.Duration` as google-gax decodes it (seconds may be a Long). */
type Duration = { seconds?: number | string | { toNumber(): number } | null; nanos?: number | null };

const msOf = (d: Duration): number => {
  const s = d.seconds;
  const seconds = typeof s === 'object' && s ? s.toNumber() : Number(s ?? 0);
  return Math.ceil(seconds * 1000 + (d.nanos ?? 0) / 1e6);
};

/** The `RetryInfo.retryDelay` of a Google Cloud error, ms, if it carries one. */
function retryInfoMs(err: unknown): number | undefined {
  const details = (err as { statusDetails?: unknown } | null)?.statusDetails;
  if (!Array.isArray(details)) return undefined;
  for (const d of details) {
    const delay = (d as { retryDelay?: Duration } | null)?.retryDelay;
    if (delay) return msOf(delay);
  }
  return undefined;
}

/** The `Retry-After` of a Kubernetes answer, ms (seconds in the header; an HTTP date is not sent by kube-apiserver). */
function retryAfterHeaderMs(err: ApiException<unknown>): number | undefined {
  const headers = err.headers as Record<string, string | undefined> | undefined;
  const value = headers?.['retry-after'] ?? headers?.['Retry-After'];
  const seconds = value === undefined ? Number.NaN : Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

/**
 * Whether `err` is a quota or rate-limit answer, and the delay it asks for.
 * @returns `undefined` when it is not one
 */
export function rateLimitOf(err: unknown): RateLimit | undefined {
  if (err instanceof ApiException) {
    if (err.code !== 429) return undefined;
    const ms = retryAfterHeaderMs(err);
    return ms === undefined ? {} : { retryAfterMs: ms };
  }
  const httpStatus = (err as { httpStatusCode?: unknown } | null)?.httpStatusCode;
  if (grpcCodeOf(err) !== GRPC.RESOURCE_EXHAUSTED && httpStatus !== 429) return undefined;
  const ms = retryInfoMs(err);
  return ms === undefined ? {} : { retryAfterMs: ms };
}
