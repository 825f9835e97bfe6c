/**
 * Requeue: a key comes back to `reconcile` after a delay (client-go's `workqueue.AddAfter`), either
 * because its reconcile returned `{ requeueAfterMs }`, or because it failed and is retried after a
 * per-key backoff (functions/runtime/retry.ts), instead of waiting for the next resync or answering Pub/Sub
 * non-2xx.
 *
 * A requeued key is **published to the keys topic with its ordering key**, never POSTed to the
 * function: it then reaches `reconcile` through the ordered push subscription like any live key,
 * so Pub/Sub hands out one message of a key at a time and a requeued delivery never runs beside a
 * pushed one of the same key (docs/architecture.md decision 42). Two mechanisms behind one
 * {@link Requeuer}, chosen by `LEVELSET_REQUEUE` (zod-validated):
 * - `cloud-tasks` (Google Cloud): one Cloud Tasks HTTP task per requeue, `scheduleTime` = now +
 *   delay, calling Pub/Sub's REST `projects.topics.publish` on the keys topic
 *   (`LEVELSET_REQUEUE_URL`, the topic's `…:publish` URL) with an OAuth access token of
 *   `LEVELSET_REQUEUE_INVOKER` (the queue and its IAM are in terraform/requeue.tf). Granularity:
 *   Cloud Tasks dispatches at the scheduled second or shortly after. Tasks are named by key and due
 *   second, so requeues of one key due in the same second collapse into one (as the workqueue
 *   collapses a key).
 * - `local` (`npm start`, tests; no Cloud Tasks emulator exists): a timer in the function's process
 *   publishes to the keys topic of `LEVELSET_TOPIC` (the emulator's under `PUBSUB_EMULATOR_HOST`)
 *   when due. Granularity: Node's timers (≈1 ms) plus one publish. Pending requeues die with the
 *   process (the resync still brings the key back) — which is why Cloud Run, where an instance's
 *   CPU is throttled after the response, uses Cloud Tasks.
 * - `none` (default): nothing; the next resync brings the key back, and a failed key is retried by
 *   Pub/Sub (`500`).
 *
 * The requeued message is a key message (core/message.ts) with the active trace context in its
 * attributes, so the requeued delivery continues the key's trace, and, for a retry, its counts
 * ({@link ATTEMPT_ATTRIBUTE}, {@link RATE_LIMITED_ATTRIBUTE}).
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { readFunctionsConfig } from '../../core/config.ts';
import { orderingKeyOf } from '../../core/contract/key.ts';
import type { Logger } from '../../core/log.ts';
import {
  ATTEMPT_ATTRIBUTE,
  encodeKeyMessage,
  FIRST_DELIVERY,
  type KeyMessage,
  keyOfMessage,
  RATE_LIMITED_ATTRIBUTE,
  type RetryCounts,
  withTraceContext,
} from '../../core/message.ts';

/** Schedules a key message to be published to the keys topic again. */
export interface Requeuer {
  /** `local`, `cloud-tasks` or `none`, for logs. */
  readonly kind: string;
  /**
   * Publishes `message` to the keys topic, with its ordering key, in `delayMs` (≥ 0) ms.
   * @param counts the key's retry counts the message carries ({@link RetryCounts}); none: a first delivery.
   * @throws {Error} when the mechanism refuses (the caller logs it; Pub/Sub's retry or the resync remains).
   */
  requeue(message: KeyMessage, delayMs: number, counts?: RetryCounts): Promise<void>;
  /** Cancels pending local timers and closes the publisher. */
  close(): void;
}

/** The `…/topics/<topic>:publish` URL of Pub/Sub's REST API, global or regional endpoint. */
const publishUrl = z
  .url()
  .regex(/\/v1\/projects\/[^/]+\/topics\/[^/:]+:publish$/, 'a Pub/Sub topics.publish URL');

const requeueEnvSchema = z.discriminatedUnion('LEVELSET_REQUEUE', [
  z.object({ LEVELSET_REQUEUE: z.literal('none') }),
  z.object({ LEVELSET_REQUEUE: z.literal('local') }),
  z.object({
    LEVELSET_REQUEUE: z.literal('cloud-tasks'),
    /** The keys topic's publish URL, `https://<endpoint>/v1/projects/<p>/topics/<t>:publish`. */
    LEVELSET_REQUEUE_URL: publishUrl,
    /** Full queue name, `projects/<p>/locations/<l>/queues/<q>`. */
    LEVELSET_REQUEUE_QUEUE: z.string().regex(/^projects\/[^/]+\/locations\/[^/]+\/queues\/[^/]+$/),
    /** Service account whose OAuth token authenticates the task's publish (`roles/pubsub.publisher` on the topic). */
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

/** A message as Pub/Sub's REST `PubsubMessage` carries it: base64 `data`, attributes, ordering key. */
export interface RequeuedMessage {
  data: string;
  attributes: Record<string, string>;
  orderingKey: string;
}

/**
 * The Pub/Sub message of a requeue: `message` encoded as the relay publishes it (validated; the same
 * data, attributes and ordering key), plus the active trace context (the `requeue` span) and the
 * counts that differ from a first delivery's: {@link ATTEMPT_ATTRIBUTE} from the second attempt,
 * {@link RATE_LIMITED_ATTRIBUTE} from the first rate limit.
 * @throws {import('zod').ZodError} when `message` is not a valid key message.
 */
export function requeuedMessage(message: KeyMessage, counts: RetryCounts = FIRST_DELIVERY): RequeuedMessage {
  const { data, attributes, orderingKey } = encodeKeyMessage(message);
  const { attempt, rateLimited } = counts;
  const retried = {
    ...(attempt > 1 ? { [ATTEMPT_ATTRIBUTE]: String(attempt) } : {}),
    ...(rateLimited > 0 ? { [RATE_LIMITED_ATTRIBUTE]: String(rateLimited) } : {}),
  };
  return {
    data: data.toString('base64'),
    attributes: withTraceContext({ ...attributes, ...retried }),
    orderingKey,
  };
}

/** A {@link Requeuer} that does nothing: the next resync brings the key back. */
export function noRequeuer(): Requeuer {
  return { kind: 'none', requeue: async () => {}, close() {} };
}

/** Publishes one {@link RequeuedMessage} to the keys topic; what the `local` mechanism needs of a Pub/Sub client. */
export type PublishRequeued = (message: RequeuedMessage) => Promise<unknown>;

/** The `local` mechanism: a timer, then a publish of the message to the keys topic. */
export function timerRequeuer(options: {
  publish: PublishRequeued;
  logger: Logger;
  close?: () => void;
}): Requeuer {
  const timers = new Set<NodeJS.Timeout>();
  return {
    kind: 'local',
    async requeue(message, delayMs, counts) {
      const requeued = requeuedMessage(message, counts);
      const timer = setTimeout(() => {
        timers.delete(timer);
        options
          .publish(requeued)
          .catch((err: Error) =>
            options.logger.warn(
              { err: err.message, controller: message.controller },
              'requeue publish failed; the next resync brings the key back',
            ),
          );
      }, delayMs);
      timer.unref();
      timers.add(timer);
    },
    close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      options.close?.();
    },
  };
}

/** Minimal surface of `@google-cloud/tasks`' CloudTasksClient used here. */
export interface TasksClient {
  createTask(request: { parent: string; task: CloudTask }): Promise<unknown>;
}

/** The OAuth scope of the task's access token: Pub/Sub's. */
export const PUBSUB_SCOPE = 'https://www.googleapis.com/auth/pubsub';

/** A Cloud Tasks v2 HTTP task (google.cloud.tasks.v2.Task), as {@link cloudTask} builds it. */
export interface CloudTask {
  name: string;
  scheduleTime: { seconds: number; nanos: number };
  httpRequest: {
    url: string;
    httpMethod: 'POST';
    headers: Record<string, string>;
    /** JSON `{"messages":[RequeuedMessage]}`, Pub/Sub's `PublishRequest`. */
    body: Buffer;
    oauthToken: { serviceAccountEmail: string; scope: string };
  };
}

/**
 * The Cloud Tasks task of one requeue: due at `now + delayMs`, publishing
 * {@link requeuedMessage}`(message, counts)` to the keys topic through Pub/Sub's REST API, named
 * `<queue>/tasks/<sha256(cluster/controller/namespace/name)[:32]>-<due second>` so that requeues of
 * one key due in the same second collapse (Cloud Tasks refuses a second task of the same name:
 * ALREADY_EXISTS).
 */
export function cloudTask(
  config: Extract<RequeueConfig, { LEVELSET_REQUEUE: 'cloud-tasks' }>,
  message: KeyMessage,
  delayMs: number,
  options: { counts?: RetryCounts; now?: Date } = {},
): CloudTask {
  const now = options.now ?? new Date();
  const due = now.getTime() + Math.max(0, delayMs);
  const id = createHash('sha256')
    .update(orderingKeyOf(keyOfMessage(message)))
    .digest('hex');
  return {
    name: `${config.LEVELSET_REQUEUE_QUEUE}/tasks/${id.slice(0, 32)}-${Math.floor(due / 1000)}`,
    scheduleTime: { seconds: Math.floor(due / 1000), nanos: (due % 1000) * 1_000_000 },
    httpRequest: {
      url: config.LEVELSET_REQUEUE_URL,
      httpMethod: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: Buffer.from(JSON.stringify({ messages: [requeuedMessage(message, options.counts)] })),
      oauthToken: { serviceAccountEmail: config.LEVELSET_REQUEUE_INVOKER, scope: PUBSUB_SCOPE },
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
    async requeue(message, delayMs, counts) {
      try {
        await client.createTask({
          parent: config.LEVELSET_REQUEUE_QUEUE,
          task: cloudTask(config, message, delayMs, counts ? { counts } : {}),
        });
      } catch (err) {
        if ((err as { code?: number }).code !== ALREADY_EXISTS) throw err;
      }
    },
    close() {},
  };
}

/**
 * The {@link Requeuer} the configuration selects. The Cloud Tasks client, and the Pub/Sub client of
 * the `local` mechanism, are loaded and created at first use (their gRPC stacks are not needed
 * elsewhere; the keys topic is read from the functions' configuration, core/config.ts).
 * @throws {Error} for `local` when the functions' configuration is invalid.
 */
export function createRequeuer(config: RequeueConfig, logger: Logger): Requeuer {
  switch (config.LEVELSET_REQUEUE) {
    case 'none':
      return noRequeuer();
    case 'local': {
      const functions = readFunctionsConfig();
      let publisher: Promise<import('../../core/publish.ts').KeyPublisher> | undefined;
      const load = () =>
        (publisher ??= import('../../core/publish.ts').then((m) =>
          m.createKeyPublisher({
            projectId: functions.projectId,
            topic: functions.topic,
            emulatorHost: functions.emulatorHost,
            logger,
            // The message carries the requeue span's context itself (requeuedMessage), as a Cloud
            // Tasks publish does: the requeued delivery is that span's child in both.
            tracing: false,
          }),
        ));
      return timerRequeuer({
        publish: async (m) => (await load()).publishEncoded({ ...m, data: Buffer.from(m.data, 'base64') }),
        logger,
        close: () => void publisher?.then((p) => p.close()).catch(() => {}),
      });
    }
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
