/**
 * Publishing key messages to the keys topic: the one publisher the relay, `resync` and tools share.
 */
import { PubSub, type Topic } from '@google-cloud/pubsub';
import type { Logger } from './log.ts';
import { encodeKeyMessage, type KeyMessage } from './message.ts';
import { tracingEnabled } from './tracing.ts';

export interface KeyPublisherOptions {
  /** Google Cloud project of the topic. */
  projectId: string;
  /** Topic id (not the full resource name), e.g. `levelset-keys`. */
  topic: string;
  /** `host:port` of a Pub/Sub emulator; default `PUBSUB_EMULATOR_HOST` when set. */
  emulatorHost?: string;
  logger?: Logger;
  /**
   * Whether each message carries its ordering key (`controller/namespace/name`, the relay's live
   * keys); default `true`. `false`: no ordering key (the resync's keys, docs/architecture.md decision
   * 32), so that the client batches messages of any keys into one publish request, and Pub/Sub keeps
   * no per-key ordering state for them.
   */
  ordering?: boolean;
  /**
   * Client-side batching (Pub/Sub publisher settings): up to `maxMessages` or `maxMilliseconds` (ms)
   * per publish request. Default with ordering: {@link ORDERED_BATCHING}. Default without
   * ordering: {@link UNORDERED_BATCHING}.
   */
  batching?: { maxMessages?: number; maxMilliseconds?: number };
  /**
   * ms the client library may spend on one publish, retries of UNAVAILABLE etc. included (gax
   * `timeout`, which also bounds the total retry time); default the library's 600 000 for Publish.
   * The relay shortens it so that an outage moves keys into its bounded retry buffer instead of an
   * unbounded queue of pending messages.
   */
  timeoutMs?: number;
  /**
   * The Pub/Sub client's own OpenTelemetry spans (`enableOpenTelemetryTracing`): a `<topic> create`
   * span under the active span, whose W3C context it writes into the message attribute
   * `googclient_traceparent`, and a `<topic> send` span per publish request. Default: whether this
   * process traces ({@link tracingEnabled}; start tracing before creating the publisher).
   */
  tracing?: boolean;
}

/**
 * Batching of messages with an ordering key: 1 message, sent at once, and 0 ms. With message
 * ordering the client batches per ordering key, and every key has its own, which the relay has
 * already collapsed: a batch of more would only hold a key back and never carry another. The
 * client still holds a key's next message while its previous publish is in flight (that is the
 * per-key order), and then waited out what was left of `maxMilliseconds` since that message
 * arrived: with the library's 10 ms, a trailing edge right behind its leading one took 1.5× as
 * long to be accepted (docs/architecture.md decision 37); 0 sends it as soon as the previous one
 * is accepted.
 */
export const ORDERED_BATCHING = { maxMessages: 1, maxMilliseconds: 0 } as const;

/**
 * Batching of messages without ordering key: up to 1000 messages (Pub/Sub's limit per publish
 * request, with 10 MB; a key message is under 1 KB with its attributes, so 1000 stay under the
 * client's 1 MiB default `maxBytes`) or 20 ms, whichever comes first.
 */
export const UNORDERED_BATCHING = { maxMessages: 1000, maxMilliseconds: 20 } as const;

/** A message ready for Pub/Sub: its bytes, attributes and (for an ordered publisher) ordering key. */
export interface EncodedMessage {
  data: Buffer;
  attributes: Record<string, string>;
  orderingKey?: string;
}

/** Publishes key messages, each with its ordering key (`controller/namespace/name`) or none ({@link KeyPublisherOptions.ordering}). */
export interface KeyPublisher {
  /**
   * Validates, encodes and publishes one key message, with its primary's `resourceVersion` when
   * given (core/message.ts `RESOURCE_VERSION_ATTRIBUTE`).
   * @returns the Pub/Sub message id
   * @throws {import('zod').ZodError} on an invalid message; the Pub/Sub error when publishing fails
   *   (with ordering, the ordering key is resumed first, so the next message for that key can be
   *   published).
   */
  publish(message: KeyMessage, resourceVersion?: string): Promise<string>;
  /**
   * Publishes a message already encoded (a requeued key message with its trace context and attempt,
   * functions/runtime/requeue.ts; a dead letter, functions/runtime/retry.ts): its ordering key only when this
   * publisher orders.
   * @returns the Pub/Sub message id
   * @throws the Pub/Sub error when publishing fails (the ordering key is resumed first).
   */
  publishEncoded(message: EncodedMessage): Promise<string>;
  /** Sends every batched message now; resolves when Pub/Sub has accepted them. */
  flush(): Promise<void>;
  /** Flushes, then closes the client. */
  close(): Promise<void>;
  readonly topic: Topic;
}

/**
 * The `PubSub` client options for the Pub/Sub emulator at `host` (`host:port`): plaintext, no
 * credentials, and the universe domain given. Without it google-gax asks google-auth-library for
 * the credentials' universe domain, which looks for Application Default Credentials and probes
 * the GCE metadata server: off Google Cloud, a `MetadataLookupWarning … ENOTFOUND` on stderr.
 */
export function emulatorClientOptions(host: string): {
  apiEndpoint: string;
  emulatorMode: true;
  universeDomain: string;
} {
  return { apiEndpoint: host, emulatorMode: true, universeDomain: 'googleapis.com' };
}

/** Creates a {@link KeyPublisher} on an existing topic, with message ordering unless `ordering: false`. */
export function createKeyPublisher(options: KeyPublisherOptions): KeyPublisher {
  const emulatorHost = options.emulatorHost ?? process.env.PUBSUB_EMULATOR_HOST;
  const pubsub = new PubSub({
    projectId: options.projectId,
    enableOpenTelemetryTracing: options.tracing ?? tracingEnabled(),
    ...(emulatorHost ? emulatorClientOptions(emulatorHost) : {}),
  });
  const ordering = options.ordering ?? true;
  const batching = ordering ? ORDERED_BATCHING : UNORDERED_BATCHING;
  const topic = pubsub.topic(options.topic, {
    messageOrdering: ordering,
    batching: {
      maxMessages: options.batching?.maxMessages ?? batching.maxMessages,
      maxMilliseconds: options.batching?.maxMilliseconds ?? batching.maxMilliseconds,
    },
    ...(options.timeoutMs !== undefined ? { gaxOpts: { timeout: options.timeoutMs } } : {}),
  });
  const publishEncoded = async (encoded: EncodedMessage): Promise<string> => {
    const { orderingKey, ...unordered } = encoded;
    if (!ordering || orderingKey === undefined) return topic.publishMessage(unordered);
    try {
      return await topic.publishMessage({ ...unordered, orderingKey });
    } catch (err) {
      // With ordering on, a failed publish pauses its ordering key until resumed.
      topic.resumePublishing(orderingKey);
      throw err;
    }
  };
  return {
    topic,
    publish: async (message, resourceVersion) => publishEncoded(encodeKeyMessage(message, resourceVersion)),
    publishEncoded,
    async flush() {
      await topic.flush();
    },
    async close() {
      await topic.flush();
      await pubsub.close();
    },
  };
}
