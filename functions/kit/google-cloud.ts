/**
 * Google Cloud API errors sorted the way the kit sorts Kubernetes API errors (core/k8s/errors.ts):
 * what no retry can fix becomes a {@link TerminalError} (the kit answers `Ready=False/<reason>` + a
 * Warning Event, and the message is acknowledged: no hot loop; the next resync tries again), the rest
 * is rethrown as it is and retried by Pub/Sub with backoff.
 *
 * The client libraries (`@google-cloud/pubsub` and every other gRPC client, through google-gax)
 * throw errors carrying the canonical gRPC code as `code` (google.rpc.Code). Which codes are worth a
 * retry follows Google's API design guide ("Errors: retrying errors"): UNAVAILABLE, DEADLINE_EXCEEDED
 * (and ABORTED, INTERNAL, UNKNOWN) may succeed later; PERMISSION_DENIED, INVALID_ARGUMENT,
 * FAILED_PRECONDITION and OUT_OF_RANGE need someone to change something. RESOURCE_EXHAUSTED (a
 * quota or rate limit) is retried after the delay it asks for (rate-limits.ts), never at once.
 *
 * Also here: the configuration every controller's Google Cloud clients share ({@link googleCloudConfig}:
 * the project, the emulator, the per-API call rate), and the per-API limiter ({@link apiLimiter}).
 */
import type { PubSub } from '@google-cloud/pubsub';
import { TokenBucket } from 'limiter';
import * as z from 'zod';
import { TerminalError } from '../../core/k8s/errors.ts';

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
  [GRPC.FAILED_PRECONDITION]: 'FailedPrecondition',
  [GRPC.OUT_OF_RANGE]: 'OutOfRange',
};

/** The gRPC code of a Google Cloud client error, or `undefined` when `err` carries none. */
export function grpcCodeOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= 16 ? code : undefined;
}

/**
 * Decodes the `google.rpc.Status` a gRPC error carries in its binary metadata
 * (`grpc-status-details-bin`) into its `statusDetails` (a `RetryInfo`, an `ErrorInfo`, …), with
 * google-gax's own decoder (`GoogleError.parseGRPCStatusDetails`). google-gax does this on its
 * promise path only: an error of a method called with a callback (the Pub/Sub client's
 * `topic.getMetadata()`, `createTopic()`, …) reaches the caller with the details still encoded, so a
 * RESOURCE_EXHAUSTED's retry delay would not be read (rate-limits.ts `rateLimitOf`). google-gax is
 * loaded only for such an error, when the client that threw it has loaded it already.
 * @returns `err`, with `statusDetails` set when its metadata held details (a detail that does not
 *   decode is left out, as google-gax leaves it)
 */
export async function withStatusDetails(err: unknown): Promise<unknown> {
  const e = err as { statusDetails?: unknown; metadata?: { get?(key: string): unknown[] } } | null;
  if (!e || e.statusDetails !== undefined || typeof e.metadata?.get !== 'function') return err;
  if ((e.metadata.get('grpc-status-details-bin') ?? []).length === 0) return err;
  const { GoogleError } = await import('google-gax');
  return GoogleError.parseGRPCStatusDetails(err as Parameters<typeof GoogleError.parseGRPCStatusDetails>[0]);
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
 * rethrown unchanged, so the delivery answers 5xx and Pub/Sub retries it with backoff;
 * RESOURCE_EXHAUSTED is rethrown too, and the kit's external resources turn it into a requeue after
 * the delay it asks for (rate-limits.ts `rateLimitOf`).
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

/** The project of the controllers' cloud resources against an emulator: one of its own, never the keys topic's. */
export const EMULATOR_PROJECT = 'levelset-external';

const googleCloudEnvSchema = z.object({
  /** The project controllers create cloud resources in; default `GOOGLE_CLOUD_PROJECT`. */
  LEVELSET_CLOUD_PROJECT: z.string().min(1).optional(),
  /**
   * `host:port` of the emulator the controllers' Google clients use (a test's fault-injecting
   * proxy, local/grpc-proxy.ts); default `PUBSUB_EMULATOR_HOST`.
   */
  LEVELSET_CLOUD_EMULATOR_HOST: z.string().min(1).optional(),
  PUBSUB_EMULATOR_HOST: z.string().min(1).optional(),
  GOOGLE_CLOUD_PROJECT: z.string().min(1).optional(),
  /** Calls per second per Google API in one instance ({@link apiLimiter}); default 20. */
  LEVELSET_CLOUD_API_RATE: z.coerce.number().positive().default(20),
  /** The burst those calls may take at once; default 20. */
  LEVELSET_CLOUD_API_BURST: z.coerce.number().int().positive().default(20),
});

/** What every controller's Google Cloud clients share ({@link googleCloudConfig}). */
export interface GoogleCloudConfig {
  /** The project the controllers' cloud resources live in. */
  project: string;
  /** `host:port` of an emulator, or `undefined` on Google Cloud. */
  emulatorHost: string | undefined;
  /** Client library options (spread into e.g. `new PubSub({ projectId, ...clientOptions })`). */
  clientOptions: ReturnType<typeof googleCloudClientOptions>;
  /** Calls per second, and burst, per Google API in this instance. */
  apiRate: number;
  apiBurst: number;
}

/**
 * The configuration of the controllers' Google Cloud clients, from the environment (zod-validated):
 * the project is `LEVELSET_CLOUD_PROJECT`; else, against an emulator, {@link EMULATOR_PROJECT};
 * else `GOOGLE_CLOUD_PROJECT` (the functions' own).
 * @throws {Error} naming every invalid variable, or when no project applies
 */
export function googleCloudConfig(env: NodeJS.ProcessEnv = process.env): GoogleCloudConfig {
  const parsed = googleCloudEnvSchema.safeParse(env);
  if (!parsed.success)
    throw new Error(
      `invalid environment: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const e = parsed.data;
  const emulatorHost = e.LEVELSET_CLOUD_EMULATOR_HOST ?? e.PUBSUB_EMULATOR_HOST;
  const project = e.LEVELSET_CLOUD_PROJECT ?? (emulatorHost ? EMULATOR_PROJECT : e.GOOGLE_CLOUD_PROJECT);
  if (!project) throw new Error('invalid environment: set LEVELSET_CLOUD_PROJECT or GOOGLE_CLOUD_PROJECT');
  return {
    project,
    emulatorHost,
    clientOptions: googleCloudClientOptions(emulatorHost),
    apiRate: e.LEVELSET_CLOUD_API_RATE,
    apiBurst: e.LEVELSET_CLOUD_API_BURST,
  };
}

const limiters = new Map<string, TokenBucket>();

/**
 * The token bucket of one Google API (`pubsub.googleapis.com`) in this instance (the `limiter`
 * package): every call the kit makes to that API takes a token first, so a burst of keys (a resync)
 * spends at most `apiBurst` calls at once and `apiRate` per second after, instead of exhausting the
 * project's quota, which every instance shares.
 */
export function apiLimiter(
  service: string,
  config: Pick<GoogleCloudConfig, 'apiRate' | 'apiBurst'>,
): TokenBucket {
  let bucket = limiters.get(service);
  if (!bucket) {
    bucket = new TokenBucket({
      bucketSize: config.apiBurst,
      tokensPerInterval: config.apiRate,
      interval: 1000,
    });
    bucket.content = config.apiBurst;
    limiters.set(service, bucket);
  }
  return bucket;
}

let pubsub: Promise<PubSub> | undefined;
/**
 * The one Pub/Sub client of the process for the controllers of Pub/Sub resources (it holds the gRPC
 * channel), made with {@link googleCloudConfig} at the first call: `@google-cloud/pubsub` and its
 * gRPC stack are imported then, never when the functions start (cold start: the bundle loads it as
 * a chunk of its own).
 * @throws as {@link googleCloudConfig}, from the returned promise
 */
export function pubsubClient(): Promise<PubSub> {
  pubsub ??= import('@google-cloud/pubsub').then(({ PubSub }) => {
    const google = googleCloudConfig();
    return new PubSub({ projectId: google.project, ...google.clientOptions });
  });
  return pubsub;
}
