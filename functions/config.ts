/**
 * Environment configuration of the functions, validated with zod at first use.
 * Controller-specific settings live in each controller's module.
 */
import { z } from 'zod';

const functionsEnvSchema = z.object({
  /** Keys topic id. */
  LEVELSET_TOPIC: z.string().min(1).default('levelset-keys'),
  /** Project of the keys topic; on Cloud Run it is set by Terraform. */
  GOOGLE_CLOUD_PROJECT: z.string().min(1).optional(),
  /** `host:port` of a Pub/Sub emulator (local runs and tests). */
  PUBSUB_EMULATOR_HOST: z.string().min(1).optional(),
});

export interface FunctionsConfig {
  topic: string;
  projectId: string;
  emulatorHost: string | undefined;
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
  return { topic: e.LEVELSET_TOPIC, projectId, emulatorHost: e.PUBSUB_EMULATOR_HOST };
}
