/**
 * Pull-subscription operations the CLI needs beyond publishing (core/publish.ts publishes):
 * synchronous pull, lease release (modifyAckDeadline 0, Pub/Sub's nack) and acknowledge, with
 * @google-cloud/pubsub's generated `SubscriberClient` on the emulator or Google Cloud.
 */
import { PubSub, v1 } from '@google-cloud/pubsub';
import { emulatorClientOptions } from '../core/publish.ts';
import { CliError, firstLine } from './errors.ts';
import type { Target } from './target.ts';

/** A pulled message; `ackId` is valid while its lease (the subscription's ack deadline) lasts. */
export interface PulledMessage {
  ackId: string;
  messageId: string;
  data: Buffer;
  attributes: Record<string, string>;
  orderingKey: string;
  /** When Pub/Sub accepted the message (for a dead letter: when it was dead-lettered). */
  publishTime: Date | undefined;
}

export interface Subscriber {
  /**
   * Pulls up to `limit` messages, returning early when the subscription has no more. The messages
   * stay leased (not redelivered) until released, acknowledged or their ack deadline passes.
   */
  pull(subscription: string, limit: number): Promise<PulledMessage[]>;
  /** Ends the leases now (modifyAckDeadline 0): the messages stay in the subscription. */
  release(subscription: string, ackIds: string[]): Promise<void>;
  /** Acknowledges: the messages are gone from the subscription. */
  ack(subscription: string, ackIds: string[]): Promise<void>;
  close(): Promise<void>;
}

/** Pub/Sub's pull returns at most 1 000 messages per request. */
const MAX_PULL = 1000;

/** gRPC status codes (grpc/doc/statuscodes.md) → what to do. */
function pubsubError(target: Target, subscription: string, err: unknown): CliError {
  const code = (err as { code?: number }).code;
  if (code === 5)
    return new CliError(
      `subscription ${subscription} not found: check --project/--topic (Terraform's topic_name) or restart \`levelset dev\``,
    );
  if (code === 7 || code === 16)
    return new CliError(
      `permission denied on ${subscription}: your identity needs roles/pubsub.subscriber there (gcloud auth application-default login)`,
    );
  if (code === 14 || code === 4)
    return new CliError(`Pub/Sub unreachable (${target.describe}): ${firstLine(err)}`);
  return new CliError(`Pub/Sub failed on ${subscription}: ${firstLine(err)}`);
}

/** A {@link Subscriber} for the target's Pub/Sub (the emulator or Google Cloud). */
export function createSubscriber(target: Target): Subscriber {
  const pubsub = new PubSub({
    projectId: target.projectId,
    ...(target.emulatorHost ? emulatorClientOptions(target.emulatorHost) : {}),
  });
  const client = new v1.SubscriberClient({ ...pubsub.options });
  const call = async <T>(subscription: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw pubsubError(target, subscription, err);
    }
  };
  return {
    async pull(subscription, limit) {
      const out: PulledMessage[] = [];
      while (out.length < limit) {
        const [response] = await call(subscription, () =>
          client.pull(
            {
              subscription,
              maxMessages: Math.min(limit - out.length, MAX_PULL),
              // Deprecated but honoured; without it an empty subscription blocks until a message arrives.
              returnImmediately: true,
            },
            { timeout: 30_000 },
          ),
        );
        const received = response.receivedMessages ?? [];
        if (received.length === 0) break;
        for (const r of received) {
          const m = r.message ?? {};
          const seconds = Number(m.publishTime?.seconds ?? Number.NaN);
          out.push({
            ackId: r.ackId ?? '',
            messageId: m.messageId ?? '',
            data: Buffer.from(m.data ?? ''),
            attributes: { ...(m.attributes ?? {}) },
            orderingKey: m.orderingKey ?? '',
            publishTime: Number.isNaN(seconds)
              ? undefined
              : new Date(seconds * 1000 + Math.round((m.publishTime?.nanos ?? 0) / 1e6)),
          });
        }
      }
      return out;
    },
    async release(subscription, ackIds) {
      for (let i = 0; i < ackIds.length; i += MAX_PULL) {
        const chunk = ackIds.slice(i, i + MAX_PULL);
        await call(subscription, () =>
          client.modifyAckDeadline({ subscription, ackIds: chunk, ackDeadlineSeconds: 0 }),
        );
      }
    },
    async ack(subscription, ackIds) {
      for (let i = 0; i < ackIds.length; i += MAX_PULL) {
        const chunk = ackIds.slice(i, i + MAX_PULL);
        await call(subscription, () => client.acknowledge({ subscription, ackIds: chunk }));
      }
    },
    async close() {
      await client.close();
      await pubsub.close();
    },
  };
}
