/**
 * Requeue: a reconcile that returns `{ requeueAfterMs }` gets its key delivered to `reconcile` again
 * after that delay (client-go's `workqueue.AddAfter`), instead of waiting for the next resync.
 *
 * Two mechanisms behind one {@link Requeuer}, chosen by `LEVELSET_REQUEUE` (zod-validated):
 * - `cloud-tasks` (Google Cloud): one Cloud Tasks HTTP task per requeue, `scheduleTime` = now +
 *   delay, POSTing the same Pub/Sub push envelope to the reconcile URL with an OIDC token (the queue
 *   and its IAM are in terraform/requeue.tf). Granularity: Cloud Tasks dispatches at the scheduled
 *   second or shortly after (scheduleTime has nanosecond precision, dispatch is not guaranteed
 *   sub-second). Tasks are named by key and due second, so requeues of one key due in the same
 *   second collapse into one (as the workqueue collapses a key).
 * - `local` (`npm start`, tests; no Cloud Tasks emulator exists): a timer in the function's process
 *   POSTs the same envelope to the reconcile URL when due. Granularity: Node's timers (≈1 ms) plus
 *   one local HTTP round trip. Pending requeues die with the process (the resync still brings the
 *   key back) — which is why Cloud Run, where an instance's CPU is throttled after the response,
 *   uses Cloud Tasks.
 * - `none` (default): nothing; the next resync brings the key back.
 *
 * The requeued message is the key's message (v1, or v2 naming a cluster other than the default) with `reason: "requeue"` and `enqueuedAt` = when the
 * requeue was asked for; its push envelope's `subscription` is `requeue` (no Pub/Sub involved).
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { type ControllerKey, orderingKeyOf } from './contract/key.ts';
import type { Logger } from './log.ts';
import {
  encodeKeyMessage,
  type KeyMessage,
  keyMessageOf,
  type PushEnvelope,
  withTraceContext,
} from './message.ts';

/** Schedules a key to be delivered to `reconcile` again. */
export interface Requeuer {
  /** `local`, `cloud-tasks` or `none`, for logs. */
  readonly kind: string;
  /**
   * Schedules `key` for delivery in `delayMs` (≥ 0) ms, with `reason: "requeue"`.
   * @throws {Error} when the mechanism refuses (the caller logs it; the resync remains the fallback).
   */
  requeue(key: ControllerKey, delayMs: number): Promise<void>;
  /** Cancels pending local timers. */
  close(): void;
}

const requeueEnvSchema = z.discriminatedUnion('LEVELSET_REQUEUE', [
  z.object({ LEVELSET_REQUEUE: z.literal('none') }),
  z.object({
    LEVELSET_REQUEUE: z.literal('local'),
    /** The reconcile function's URL. */
    LEVELSET_REQUEUE_URL: z.url(),
    LEVELSET_FUNCTIONS_TOKEN: z.string().optional(),
  }),
  z.object({
    LEVELSET_REQUEUE: z.literal('cloud-tasks'),
    LEVELSET_REQUEUE_URL: z.url(),
    /** Full queue name, `projects/<p>/locations/<l>/queues/<q>`. */
    LEVELSET_REQUEUE_QUEUE: z.string().regex(/^projects\/[^/]+\/locations\/[^/]+\/queues\/[^/]+$/),
    /** Service account whose OIDC token authenticates the task's call to reconcile. */
    LEVELSET_REQUEUE_INVOKER: z.email(),
  }),
]);
export type RequeueConfig = z.infer<typeof requeueEnvSchema>;

/**
 * Reads the requeue configuration (`LEVELSET_REQUEUE` and the variables its mechanism needs).
 * @throws {Error} naming every invalid or missing variable.
 */
export function readRequeueConfig(env: NodeJS.ProcessEnv = process.env): RequeueConfig {
  const parsed = requeueEnvSchema.safeParse({ ...env, LEVELSET_REQUEUE: env.LEVELSET_REQUEUE ?? 'none' });
  if (!parsed.success)
    throw new Error(
      `invalid requeue configuration: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'LEVELSET_REQUEUE'}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

/**
 * The push envelope body a requeue delivers: the shape `reconcile` decodes from Pub/Sub, with the
 * active trace context (the `requeue` span) in its attributes, so the requeued delivery continues
 * the key's trace.
 */
export function requeueEnvelope(key: ControllerKey, now = new Date()): { message: KeyMessage; body: string } {
  const message = keyMessageOf(key, 'requeue', now.toISOString());
  // Encoded as the relay publishes it (validated; the same data and attributes).
  const { data, attributes } = encodeKeyMessage(message);
  const body: PushEnvelope = {
    message: {
      data: data.toString('base64'),
      attributes: withTraceContext(attributes),
      messageId: `requeue-${now.getTime()}`,
    },
    subscription: 'requeue',
  };
  return { message, body: JSON.stringify(body) };
}

/** A {@link Requeuer} that does nothing: the next resync brings the key back. */
export function noRequeuer(): Requeuer {
  return { kind: 'none', requeue: async () => {}, close() {} };
}

/** The `local` mechanism: a timer, then a POST of the envelope to `url`. */
export function timerRequeuer(options: { url: string; token?: string; logger: Logger }): Requeuer {
  const timers = new Set<NodeJS.Timeout>();
  const target = new URL(options.url);
  if (options.token) target.searchParams.set('token', options.token);
  return {
    kind: 'local',
    async requeue(key, delayMs) {
      const { body } = requeueEnvelope(key);
      const timer = setTimeout(() => {
        timers.delete(timer);
        fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
          .then((res) => res.body?.cancel())
          .catch((err: Error) =>
            options.logger.warn({ err: err.message, controller: key.controller }, 'requeue delivery failed'),
          );
      }, delayMs);
      timer.unref();
      timers.add(timer);
    },
    close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}

/** Minimal surface of `@google-cloud/tasks`' CloudTasksClient used here. */
export interface TasksClient {
  createTask(request: { parent: string; task: CloudTask }): Promise<unknown>;
}

/** A Cloud Tasks v2 HTTP task (google.cloud.tasks.v2.Task), as {@link cloudTask} builds it. */
export interface CloudTask {
  name: string;
  scheduleTime: { seconds: number; nanos: number };
  httpRequest: {
    url: string;
    httpMethod: 'POST';
    headers: Record<string, string>;
    body: Buffer;
    oidcToken: { serviceAccountEmail: string; audience: string };
  };
}

/**
 * The Cloud Tasks task of one requeue: due at `now + delayMs`, named
 * `<queue>/tasks/<sha256(cluster/controller/namespace/name)[:32]>-<due second>` so that requeues of one key
 * due in the same second collapse (Cloud Tasks refuses a second task of the same name: ALREADY_EXISTS).
 */
export function cloudTask(
  config: Extract<RequeueConfig, { LEVELSET_REQUEUE: 'cloud-tasks' }>,
  key: ControllerKey,
  delayMs: number,
  now = new Date(),
): CloudTask {
  const due = now.getTime() + Math.max(0, delayMs);
  const id = createHash('sha256').update(orderingKeyOf(key)).digest('hex');
  return {
    name: `${config.LEVELSET_REQUEUE_QUEUE}/tasks/${id.slice(0, 32)}-${Math.floor(due / 1000)}`,
    scheduleTime: { seconds: Math.floor(due / 1000), nanos: (due % 1000) * 1_000_000 },
    httpRequest: {
      url: config.LEVELSET_REQUEUE_URL,
      httpMethod: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: Buffer.from(requeueEnvelope(key, now).body),
      oidcToken: {
        serviceAccountEmail: config.LEVELSET_REQUEUE_INVOKER,
        audience: config.LEVELSET_REQUEUE_URL,
      },
    },
  };
}

/** gRPC status ALREADY_EXISTS: a task of that name exists (the requeue collapsed into it). */
const ALREADY_EXISTS = 6;

/** The `cloud-tasks` mechanism. */
export function cloudTasksRequeuer(
  config: Extract<RequeueConfig, { LEVELSET_REQUEUE: 'cloud-tasks' }>,
  client: TasksClient,
): Requeuer {
  return {
    kind: 'cloud-tasks',
    async requeue(key, delayMs) {
      try {
        await client.createTask({
          parent: config.LEVELSET_REQUEUE_QUEUE,
          task: cloudTask(config, key, delayMs),
        });
      } catch (err) {
        if ((err as { code?: number }).code !== ALREADY_EXISTS) throw err;
      }
    },
    close() {},
  };
}

/**
 * The {@link Requeuer} the configuration selects. The Cloud Tasks client is loaded and created at
 * first use (its gRPC stack is not needed elsewhere).
 */
export function createRequeuer(config: RequeueConfig, logger: Logger): Requeuer {
  switch (config.LEVELSET_REQUEUE) {
    case 'none':
      return noRequeuer();
    case 'local':
      return timerRequeuer({
        url: config.LEVELSET_REQUEUE_URL,
        token: config.LEVELSET_FUNCTIONS_TOKEN,
        logger,
      });
    case 'cloud-tasks': {
      let client: Promise<TasksClient> | undefined;
      const lazy: TasksClient = {
        async createTask(request) {
          client ??= import('@google-cloud/tasks').then(
            (m) => new m.CloudTasksClient() as unknown as TasksClient,
          );
          return (await client).createTask(request);
        },
      };
      return cloudTasksRequeuer(config, lazy);
    }
  }
}
