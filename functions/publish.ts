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
   * Client-side batching (Pub/Sub publisher settings): up to `maxMessages` or `maxMilliseconds` per
   * publish request. Default: 1 message, so a message is sent at once. With message ordering the
   * client batches per ordering key, and every key has its own (`controller/namespace/name`), which
   * the relay has already collapsed: a batch would only hold a key back for `maxMilliseconds`
   * (the library's default 10 ms) and never carry another.
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

/** Publishes key messages with their ordering key (`controller/namespace/name`). */
export interface KeyPublisher {
  /**
   * Validates, encodes and publishes one key message.
   * @returns the Pub/Sub message id
   * @throws {import('zod').ZodError} on an invalid message; the Pub/Sub error when publishing fails
   *   (the ordering key is resumed first, so the next message for that key can be published).
   */
  publish(message: KeyMessage): Promise<string>;
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

/** Creates a {@link KeyPublisher} on an existing topic with message ordering enabled. */
export function createKeyPublisher(options: KeyPublisherOptions): KeyPublisher {
  const emulatorHost = options.emulatorHost ?? process.env.PUBSUB_EMULATOR_HOST;
  const pubsub = new PubSub({
    projectId: options.projectId,
    enableOpenTelemetryTracing: options.tracing ?? tracingEnabled(),
    ...(emulatorHost ? emulatorClientOptions(emulatorHost) : {}),
  });
  const topic = pubsub.topic(options.topic, {
    messageOrdering: true,
    batching: {
      maxMessages: options.batching?.maxMessages ?? 1,
      maxMilliseconds: options.batching?.maxMilliseconds ?? 10,
    },
    ...(options.timeoutMs !== undefined ? { gaxOpts: { timeout: options.timeoutMs } } : {}),
  });
  return {
    topic,
    async publish(message) {
      const encoded = encodeKeyMessage(message);
      try {
        return await topic.publishMessage(encoded);
      } catch (err) {
        // With ordering on, a failed publish pauses its ordering key until resumed.
        topic.resumePublishing(encoded.orderingKey);
        throw err;
      }
    },
    async flush() {
      await topic.flush();
    },
    async close() {
      await topic.flush();
      await pubsub.close();
    },
  };
}
