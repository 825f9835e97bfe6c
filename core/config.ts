/**
 * Environment configuration of the functions, validated with zod at first use.
 * Controller-specific settings live in each controller's module.
 */
import * as z from 'zod';

const functionsEnvSchema = z.object({
  /** Keys topic id. */
  LEVELSET_TOPIC: z.string().min(1).default('levelset-keys'),
  /** Topic id of the resync's keys; default `<LEVELSET_TOPIC>-resync` (see {@link resyncTopicOf}). */
  LEVELSET_RESYNC_TOPIC: z.string().min(1).optional(),
  /** Project of the keys topic; on Cloud Run it is set by Terraform. */
  GOOGLE_CLOUD_PROJECT: z.string().min(1).optional(),
  /** `host:port` of a Pub/Sub emulator (local runs and tests). */
  PUBSUB_EMULATOR_HOST: z.string().min(1).optional(),
  /**
   * The email of the functions' own Google service account (Terraform sets it): what Cloud Audit
   * Logs names as the caller of Levelset's own writes (functions/runtime/audit-log.ts drops those entries).
   */
  LEVELSET_FUNCTIONS_SERVICE_ACCOUNT: z.email().optional(),
});

/**
 * The topic the resync publishes to, beside the keys topic of live events: its own subscription
 * pushes to the same `reconcile` function, so a live key never waits behind a resync's backlog (a
 * single subscription would hand out the resync's 100k keys first), and the resync's keys still
 * progress at their own pace (Terraform's and the local stack's resync subscription).
 */
export function resyncTopicOf(topic: string): string {
  return `${topic}-resync`;
}

export interface FunctionsConfig {
  topic: string;
  /** Where `resync` publishes ({@link resyncTopicOf} the keys topic unless `LEVELSET_RESYNC_TOPIC`). */
  resyncTopic: string;
  projectId: string;
  emulatorHost: string | undefined;
  /** `LEVELSET_FUNCTIONS_SERVICE_ACCOUNT`: the principal of Levelset's own writes in Cloud Audit Logs. */
  serviceAccount: string | undefined;
}

/**
 * Reads and validates the functions' environment.
 * @throws {Error} naming every invalid variable; `GOOGLE_CLOUD_PROJECT` is required unless
 *   `PUBSUB_EMULATOR_HOST` is set (then it defaults to `local-project`).
 */
export function readFunctionsConfig(env: NodeJS.ProcessEnv = process.env): FunctionsConfig {
  const parsed = functionsEnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new Error(
      `invalid environment: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  const e = parsed.data;
  const projectId = e.GOOGLE_CLOUD_PROJECT ?? (e.PUBSUB_EMULATOR_HOST ? 'local-project' : undefined);
  if (!projectId) throw new Error('invalid environment: GOOGLE_CLOUD_PROJECT is required');
  return {
    topic: e.LEVELSET_TOPIC,
    resyncTopic: e.LEVELSET_RESYNC_TOPIC ?? resyncTopicOf(e.LEVELSET_TOPIC),
    projectId,
    emulatorHost: e.PUBSUB_EMULATOR_HOST,
    serviceAccount: e.LEVELSET_FUNCTIONS_SERVICE_ACCOUNT,
  };
}
