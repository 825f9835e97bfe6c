/**
 * The relay process's configuration, from the environment, validated with zod.
 */
import * as z from 'zod';
import { DEFAULT_CLUSTER } from '../core/contract/key.ts';
import { clusterId } from '../core/contract/names.ts';
import { DEFAULT_WATCH_SILENCE_TIMEOUT_MS } from './informer.ts';
import { DEFAULT_MAX_IN_FLIGHT } from './pipeline.ts';
import { DEFAULT_RETRY_BUFFER_KEYS } from './retry-buffer.ts';

/** Default collapse window in ms (`RELAY_COLLAPSE_MS`). */
export const DEFAULT_COLLAPSE_MS = 250;
/** Default port of `/healthz`, `/readyz`, `/metrics` (`RELAY_PORT`). */
export const DEFAULT_PORT = 8080;
/** Default time the Pub/Sub client may retry one publish, ms (`RELAY_PUBLISH_TIMEOUT_MS`). */
export const DEFAULT_PUBLISH_TIMEOUT_MS = 30_000;
/** Default keys topic id (`LEVELSET_TOPIC`). */
export const DEFAULT_TOPIC = 'levelset-keys';

/** Pub/Sub topic id rule (Pub/Sub resource names): 3–255 chars, starts with a letter, no `goog` prefix. */
const topicId = z
  .string()
  .regex(
    /^[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$/,
    'must be a Pub/Sub topic id (3-255 chars, starting with a letter)',
  )
  .refine((s) => !s.toLowerCase().startsWith('goog'), 'must not start with "goog"');

/** An environment variable that is unset or empty is absent. */
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const envSchema = z
  .object({
    KUBECONFIG: optional(z.string()),
    RELAY_CLUSTER: optional(clusterId),
    GOOGLE_CLOUD_PROJECT: optional(
      z.string().regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/, 'must be a Google Cloud project id'),
    ),
    PUBSUB_EMULATOR_HOST: optional(z.string().regex(/^[^\s:/]+:\d+$/, 'must be host:port')),
    LEVELSET_TOPIC: optional(topicId),
    RELAY_COLLAPSE_MS: optional(z.coerce.number().int().min(0).max(60_000)),
    RELAY_PORT: optional(z.coerce.number().int().min(0).max(65_535)),
    RELAY_WATCH_SILENCE_TIMEOUT_MS: optional(z.coerce.number().int().min(1_000).max(3_600_000)),
    RELAY_RETRY_BUFFER_KEYS: optional(z.coerce.number().int().min(1).max(1_000_000)),
    RELAY_PUBLISH_TIMEOUT_MS: optional(z.coerce.number().int().min(100).max(600_000)),
    RELAY_MAX_IN_FLIGHT: optional(z.coerce.number().int().min(1).max(100_000)),
    LOG_LEVEL: optional(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])),
  })
  .superRefine(
    (env, ctx) => {
      if (!env.GOOGLE_CLOUD_PROJECT && !env.PUBSUB_EMULATOR_HOST) {
        ctx.addIssue({
          code: 'custom',
          path: ['GOOGLE_CLOUD_PROJECT'],
          message: 'required (it defaults to "local-project" only when PUBSUB_EMULATOR_HOST is set)',
        });
      }
    },
    { when: () => true },
  ); // report a missing project along with any other bad variable

export interface RelayConfig {
  /** `KUBECONFIG` as given (read by `loadKubeConfig`); `undefined`: `~/.kube/config`, then in-cluster. */
  kubeconfig: string | undefined;
  /** The id of the cluster the relay runs in, named in every key message (a DNS-1123 label). Default `default`. */
  cluster: string;
  projectId: string;
  /** `host:port` of the Pub/Sub emulator, when used. */
  emulatorHost: string | undefined;
  /** Keys topic id. Default `levelset-keys`. */
  topic: string;
  /** Collapse window in ms. Default 250. */
  collapseMs: number;
  /** Health/metrics port. Default 8080. */
  port: number;
  /** ms a watch may stay silent (no event, no bookmark) before it is watched again. Default 90 000. */
  watchSilenceTimeoutMs: number;
  /** Keys the publish retry buffer holds at most. Default 10 000. */
  retryBufferKeys: number;
  /** ms the Pub/Sub client may retry one publish before the key goes to the retry buffer. Default 30 000. */
  publishTimeoutMs: number;
  /** Key publishes pending at once at most; the next wait in FIFO order. Default 1000. */
  maxInFlight: number;
  logLevel: string;
}

/** Invalid configuration; the message names every bad variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Reads the relay's configuration from `env`: `KUBECONFIG`, `RELAY_CLUSTER` (the cluster's id, a
 * DNS-1123 label; default `default`), `GOOGLE_CLOUD_PROJECT` (default
 * `local-project` when `PUBSUB_EMULATOR_HOST` is set), `LEVELSET_TOPIC` (default `levelset-keys`),
 * `RELAY_COLLAPSE_MS` (ms, default 250), `RELAY_PORT` (default 8080),
 * `RELAY_WATCH_SILENCE_TIMEOUT_MS` (ms, 1 000–3 600 000, default 90 000: kube-apiserver bookmarks
 * about once a minute), `RELAY_RETRY_BUFFER_KEYS` (default 10 000), `RELAY_PUBLISH_TIMEOUT_MS` (ms,
 * 100–600 000, default 30 000), `RELAY_MAX_IN_FLIGHT` (publishes pending at once, 1–100 000, default
 * 1000), `LOG_LEVEL` (default `info`).
 * @throws {ConfigError} listing each invalid variable.
 */
export function loadRelayConfig(env: NodeJS.ProcessEnv = process.env): RelayConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`invalid relay configuration: ${issues.join('; ')}`);
  }
  const e = parsed.data;
  return {
    kubeconfig: e.KUBECONFIG,
    cluster: e.RELAY_CLUSTER ?? DEFAULT_CLUSTER,
    projectId: e.GOOGLE_CLOUD_PROJECT ?? 'local-project',
    emulatorHost: e.PUBSUB_EMULATOR_HOST,
    topic: e.LEVELSET_TOPIC ?? DEFAULT_TOPIC,
    collapseMs: e.RELAY_COLLAPSE_MS ?? DEFAULT_COLLAPSE_MS,
    port: e.RELAY_PORT ?? DEFAULT_PORT,
    watchSilenceTimeoutMs: e.RELAY_WATCH_SILENCE_TIMEOUT_MS ?? DEFAULT_WATCH_SILENCE_TIMEOUT_MS,
    retryBufferKeys: e.RELAY_RETRY_BUFFER_KEYS ?? DEFAULT_RETRY_BUFFER_KEYS,
    publishTimeoutMs: e.RELAY_PUBLISH_TIMEOUT_MS ?? DEFAULT_PUBLISH_TIMEOUT_MS,
    maxInFlight: e.RELAY_MAX_IN_FLIGHT ?? DEFAULT_MAX_IN_FLIGHT,
    logLevel: e.LOG_LEVEL ?? 'info',
  };
}
