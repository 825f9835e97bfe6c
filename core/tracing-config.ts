/**
 * Tracing's configuration (`LEVELSET_TRACING`, `LEVELSET_TRACE_FILE`, `LEVELSET_TRACE_SAMPLE_RATIO`,
 * zod-validated) and the shape of a running setup; core/tracing.ts starts it.
 */
import * as z from 'zod';

const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const tracingEnvSchema = z
  .object({
    /** `off` (default), `file` (needs `LEVELSET_TRACE_FILE`), `cloud-trace` (needs `GOOGLE_CLOUD_PROJECT`). */
    LEVELSET_TRACING: optional(z.enum(['off', 'file', 'cloud-trace'])),
    /** The OTLP/JSON lines file of `file`. */
    LEVELSET_TRACE_FILE: optional(z.string().min(1)),
    /** Share (0–1) of the traces of successful keys exported; default 0.1. Other outcomes: all. */
    LEVELSET_TRACE_SAMPLE_RATIO: optional(z.coerce.number().min(0).max(1)),
    GOOGLE_CLOUD_PROJECT: optional(z.string().min(1)),
  })
  .superRefine((e, ctx) => {
    if (e.LEVELSET_TRACING === 'file' && !e.LEVELSET_TRACE_FILE)
      ctx.addIssue({
        code: 'custom',
        path: ['LEVELSET_TRACE_FILE'],
        message: 'required when LEVELSET_TRACING=file',
      });
    if (e.LEVELSET_TRACING === 'cloud-trace' && !e.GOOGLE_CLOUD_PROJECT)
      ctx.addIssue({
        code: 'custom',
        path: ['GOOGLE_CLOUD_PROJECT'],
        message: 'required when LEVELSET_TRACING=cloud-trace',
      });
  });

/** Tracing configuration of a process. */
export type TracingConfig =
  | { exporter: 'off' }
  | { exporter: 'file'; file: string; sampleRatio: number }
  | { exporter: 'cloud-trace'; projectId: string; sampleRatio: number };

/**
 * Default share of successful keys' traces exported (every other outcome's always are): one in a
 * hundred. A recorded relay `enqueue` span costs about 30 µs of CPU against 0.75 µs for one not
 * recorded (docs/architecture.md decisions 61 and 65), and Cloud Trace bills spans ingested.
 */
export const DEFAULT_TRACE_SAMPLE_RATIO = 0.01;

/**
 * Reads `LEVELSET_TRACING`, `LEVELSET_TRACE_FILE`, `LEVELSET_TRACE_SAMPLE_RATIO`, `GOOGLE_CLOUD_PROJECT`.
 * @throws {Error} naming every invalid or missing variable.
 */
export function readTracingConfig(env: NodeJS.ProcessEnv = process.env): TracingConfig {
  const parsed = tracingEnvSchema.safeParse(env);
  if (!parsed.success)
    throw new Error(
      `invalid tracing configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const e = parsed.data;
  const sampleRatio = e.LEVELSET_TRACE_SAMPLE_RATIO ?? DEFAULT_TRACE_SAMPLE_RATIO;
  switch (e.LEVELSET_TRACING ?? 'off') {
    case 'file':
      return { exporter: 'file', file: e.LEVELSET_TRACE_FILE as string, sampleRatio };
    case 'cloud-trace':
      return { exporter: 'cloud-trace', projectId: e.GOOGLE_CLOUD_PROJECT as string, sampleRatio };
    default:
      return { exporter: 'off' };
  }
}

/** A running tracing setup. */
export interface Tracing {
  readonly config: TracingConfig;
  /** Exports every span decided so far (a Cloud Run instance's CPU is throttled once it answered). */
  flush(): Promise<void>;
  /** Flushes and stops the provider. */
  shutdown(): Promise<void>;
}
