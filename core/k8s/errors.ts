/**
 * How a reconcile failure is answered (docs/architecture.md "functions/"): terminal failures are acknowledged
 * (`204`) and reported; transient ones are retried after a per-key backoff or the delay they ask for
 * ({@link retryAfterMsOf}; functions/runtime/retry.ts). How one is described
 * in a log line ({@link errorText}).
 */
import { ApiException, type KubernetesObject } from '@kubernetes/client-node';
import { RetryAfterError } from '../contract/retry-after.ts';

/**
 * A failure no retry can fix (invalid spec, a target owned by someone else). `reconcile` answers
 * `204`, records a Warning Event with `reason` on `object` when given, and logs at ERROR.
 */
export class TerminalError extends Error {
  override readonly name = 'TerminalError';
  /** UpperCamelCase Event reason, e.g. `ErrResourceExists` (Kubernetes API conventions: events). */
  readonly reason: string;
  /** The object the Warning Event is recorded on (usually the primary); none: no Event. */
  readonly object: KubernetesObject | undefined;
  constructor(reason: string, message: string, options: { cause?: unknown; object?: KubernetesObject } = {}) {
    super(message, { cause: options.cause });
    this.reason = reason;
    this.object = options.object;
  }
}

/** One failed write of a reconcile's independent writes: the operation, its target, the API status (if any). */
export interface FailedWrite {
  /** e.g. `create`, `update`, `delete`. */
  op: string;
  /** What was written, e.g. a namespace or `namespace/name`. */
  target: string;
  /** The API status; `undefined` for a network error. */
  status: number | undefined;
  error: unknown;
}

/**
 * Some of a reconcile's independent writes failed; the others were done. Not a TerminalError: the key
 * is retried and the next reconcile re-reads everything. It is answered as {@link FailedWritesError.status}:
 * `409` when every failure is a 409 (so `reconcile` re-runs from a fresh read, as client-go's
 * `retry.RetryOnConflict`), else the first failure's status (`undefined`: a network error, transient).
 * `cause` is the first failure's error.
 */
export class FailedWritesError extends Error {
  override readonly name = 'FailedWritesError';
  readonly failures: FailedWrite[];
  /** The status the failures are answered as (see the class comment). */
  readonly status: number | undefined;
  /** @param subject what was written, for the message, e.g. `copies of team-a/db-creds` */
  constructor(subject: string, failures: FailedWrite[]) {
    const what = failures.map((f) => `${f.op} ${f.target}${f.status ? ` (${f.status})` : ''}`).join(', ');
    super(`${failures.length} write(s) of ${subject} failed: ${what}`, { cause: failures[0]?.error });
    this.failures = failures;
    this.status = failures.every((f) => f.status === 409) ? 409 : failures[0]?.status;
  }
}

/**
 * The HTTP status of a Kubernetes API error, or `undefined` when `err` is not one; a
 * {@link FailedWritesError} is answered as its `status`.
 */
export function apiStatusOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  if (err instanceof FailedWritesError) return err.status;
  const code = (err as { code?: unknown; statusCode?: unknown } | null)?.code;
  return typeof code === 'number' && code >= 100 && code < 600 ? code : undefined;
}

/** True for a Kubernetes `404 NotFound`. */
export function isNotFound(err: unknown): boolean {
  return apiStatusOf(err) === 404;
}

/** True for a Kubernetes `409` (`Conflict` on a stale resourceVersion, or `AlreadyExists`). */
export function isConflict(err: unknown): boolean {
  return apiStatusOf(err) === 409;
}

/**
 * The `Status` an API error's body holds (`reason`, `details.causes`), or `undefined` when it holds
 * none (not an {@link ApiException}, or a body that is not a JSON `Status`).
 */
export function apiStatusBodyOf(
  err: unknown,
): { reason?: string; details?: { causes?: { reason?: string }[] } } | undefined {
  if (!(err instanceof ApiException)) return undefined;
  const body: unknown = err.body;
  try {
    const parsed = typeof body === 'string' ? JSON.parse(body) : body;
    return parsed && typeof parsed === 'object' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True for a create refused because its namespace is being deleted: kube-apiserver's
 * NamespaceLifecycle admission answers `403 Forbidden` with the cause `NamespaceTerminating`
 * (apimachinery's `NamespaceTerminatingCause`; a `StatusCause`'s type is its JSON `reason`), and so
 * does the local API server.
 */
export function isNamespaceTerminating(err: unknown): boolean {
  return (
    apiStatusOf(err) === 403 &&
    (apiStatusBodyOf(err)?.details?.causes ?? []).some((c) => c.reason === 'NamespaceTerminating')
  );
}

/**
 * True when a retry may succeed: 409 conflict, 429, 5xx, timeouts, and network errors (no status).
 * Everything else from the API server (400, 401, 403, 404, 422) would fail again the same way.
 * Source of the rule: client-go's `retry.DefaultRetry` / apimachinery `IsServerTimeout`,
 * `IsTooManyRequests`, `IsConflict`, `IsInternalError`.
 */
export function isTransient(err: unknown): boolean {
  if (err instanceof TerminalError) return false;
  const status = apiStatusOf(err);
  if (status === undefined) return true;
  return status === 409 || status === 429 || status === 408 || status >= 500;
}

/**
 * The delay a failure asks for before the next attempt, ms, or `undefined` when it asks for none: a
 * {@link RetryAfterError}'s `retryAfterMs`; a Kubernetes `429` or `503` whose `Retry-After` header is
 * in delta-seconds (the form kube-apiserver writes, RFC 9110 §10.2.3; an HTTP-date is not honoured);
 * the longest of a {@link FailedWritesError}'s failures; that of an error's `cause` (3 levels at most).
 * Source of the rule: client-go's rest client, which waits for `Retry-After` on 429 and 503.
 */
export function retryAfterMsOf(err: unknown, depth = 0): number | undefined {
  if (err instanceof RetryAfterError) return err.retryAfterMs;
  if (err instanceof FailedWritesError) {
    // Independent writes: wait for the longest delay any of them asked for.
    const asked = err.failures
      .map((f) => retryAfterMsOf(f.error, depth + 1))
      .filter((ms) => ms !== undefined);
    return asked.length ? Math.max(...asked) : undefined;
  }
  // A wrapped API error (`new Error(…, { cause })`), a few levels deep at most.
  if (!(err instanceof ApiException) && err instanceof Error && depth < 3)
    return retryAfterMsOf(err.cause, depth + 1);
  if (!(err instanceof ApiException) || (err.code !== 429 && err.code !== 503)) return undefined;
  const headers = (err.headers ?? {}) as Record<string, string | undefined>;
  const value = Object.entries(headers).find(([name]) => name.toLowerCase() === 'retry-after')?.[1];
  return value !== undefined && /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : undefined;
}

/**
 * A one-line description of an error for logs: for API errors `<code> <reason>: <message>` from
 * the `Status` body, never the request or response headers.
 */
export function errorText(err: unknown): string {
  if (err instanceof ApiException) {
    let body: unknown = err.body;
    if (typeof body === 'string') {
      try {
        body = JSON.parse(body);
      } catch {
        // not JSON: keep the code only
      }
    }
    const status = body as { reason?: string; message?: string } | undefined;
    return `${err.code} ${status?.reason ?? ''}: ${status?.message ?? ''}`.trim();
  }
  return err instanceof Error ? err.message : String(err);
}
