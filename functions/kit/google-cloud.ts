/**
 * Google Cloud API errors sorted the way the kit sorts Kubernetes API errors (functions/k8s/errors.ts):
 * what no retry can fix becomes a {@link TerminalError} (the kit answers `Ready=False/<reason>` + a
 * Warning Event, and the message is acknowledged: no hot loop; the next resync tries again), the rest
 * is rethrown as it is and retried by Pub/Sub with backoff.
 *
 * The client libraries (`@google-cloud/pubsub` and every other gRPC client, through google-gax)
 * throw errors carrying the canonical gRPC code as `code` (google.rpc.Code). Which codes are worth a
 * retry follows Google's API design guide ("Errors: retrying errors"): UNAVAILABLE, DEADLINE_EXCEEDED
 * (and ABORTED, INTERNAL, UNKNOWN) may succeed later; PERMISSION_DENIED, INVALID_ARGUMENT,
 * FAILED_PRECONDITION, OUT_OF_RANGE and RESOURCE_EXHAUSTED (quota) need someone to change something.
 */
import { TerminalError } from '../k8s/errors.ts';

/** Canonical gRPC codes (google.rpc.Code) the kit sorts. */
export const GRPC = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  OUT_OF_RANGE: 11,
  UNAVAILABLE: 14,
} as const;

/** The terminal codes and the Event/condition reason each becomes (UpperCamelCase, as Kubernetes reasons). */
const TERMINAL: Record<number, string> = {
  [GRPC.INVALID_ARGUMENT]: 'InvalidArgument',
  [GRPC.PERMISSION_DENIED]: 'PermissionDenied',
  [GRPC.RESOURCE_EXHAUSTED]: 'ResourceExhausted',
  [GRPC.FAILED_PRECONDITION]: 'FailedPrecondition',
  [GRPC.OUT_OF_RANGE]: 'OutOfRange',
};

/** The gRPC code of a Google Cloud client error, or `undefined` when `err` carries none. */
export function grpcCodeOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= 16 ? code : undefined;
}

/** True for NOT_FOUND (e.g. a topic already deleted: success for a finalizer). */
export function isGrpcNotFound(err: unknown): boolean {
  return grpcCodeOf(err) === GRPC.NOT_FOUND;
}

/** True for ALREADY_EXISTS (a create that lost a race: read it again). */
export function isGrpcAlreadyExists(err: unknown): boolean {
  return grpcCodeOf(err) === GRPC.ALREADY_EXISTS;
}

/**
 * Sorts a Google Cloud API error: a terminal code is thrown as `TerminalError(<reason>, "<what>:
 * <the API's message>")`; anything else (UNAVAILABLE, DEADLINE_EXCEEDED, network errors…) is
 * rethrown unchanged, so the delivery answers 5xx and Pub/Sub retries it with backoff.
 * @param what what was being done, e.g. `create topic projects/p/topics/t`
 * @throws always
 */
export function throwGoogleCloudError(err: unknown, what: string): never {
  const code = grpcCodeOf(err);
  const reason = code === undefined ? undefined : TERMINAL[code];
  if (reason === undefined) throw err;
  const details = (err as { details?: unknown }).details;
  const message = typeof details === 'string' && details ? details : (err as Error).message;
  throw new TerminalError(reason, `${what}: ${message}`, { cause: err });
}

/**
 * Options for a Google Cloud client library in a controller (e.g. `new PubSub({ projectId,
 * ...googleCloudClientOptions(emulatorHost) })`): against an emulator at `emulatorHost`
 * (`host:port`), plaintext, no credentials and the universe domain given, so that
 * google-auth-library does not probe the GCE metadata server off Google Cloud (a
 * `MetadataLookupWarning` otherwise); without one, `{}`: Application Default Credentials, i.e. the
 * function's own service account on Cloud Run.
 */
export function googleCloudClientOptions(
  emulatorHost: string | undefined,
): { apiEndpoint: string; emulatorMode: true; universeDomain: string } | Record<string, never> {
  return emulatorHost
    ? { apiEndpoint: emulatorHost, emulatorMode: true, universeDomain: 'googleapis.com' }
    : {};
}
