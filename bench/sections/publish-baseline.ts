/**
 * The publish's own baseline: a bare `@google-cloud/pubsub` publish round trip (`publishMessage` →
 * resolved) to an emulator, without Levelset around it, once with the relay's client settings
 * (message ordering on, an ordering key, batching {@link ORDERED_BATCHING}) and once with the
 * library's defaults (no ordering key; a batch goes out after 100 messages or 10 ms). Beside the
 * relay's publish segment, the first says what the emulator and the client library cost on their
 * own, so the rest is what Levelset adds; the second what the relay's batching settings save.
 */
import { createServer } from 'node:http';
import { type Message, PubSub, type Subscription, type Topic } from '@google-cloud/pubsub';
import { DEFAULT_CLUSTER } from '../../core/contract/key.ts';
import { encodeKeyMessage, keyMessageOf } from '../../core/message.ts';
import { emulatorClientOptions, ORDERED_BATCHING } from '../../core/publish.ts';
import type { PubSubEmulator } from '../../local/pubsub-emulator.ts';
import { listen } from '../support.ts';

/** One round trip of each client, ms. */
export interface BarePublishTimes {
  relaySettings: number;
  libraryDefaults: number;
}

/** Bare publishers on a topic of their own in `emulator`. */
export interface BarePublishers {
  /** Publishes one key message with each client in turn, one at a time; each one's round trip. */
  once(): Promise<BarePublishTimes>;
  /** Closes the clients and the push endpoint (the topic is left to the emulator, which dies with its stack). */
  close(): Promise<void>;
}

/** Distinct keys the bare publishes rotate through, as the measured changes rotate through their objects. */
const KEYS = 16;

/**
 * Creates a topic `topicId` in `emulator` subscribed as the local stack's keys topic is, so that
 * the emulator does the same work per publish (a publish to a topic without subscriptions costs it
 * half as much, docs/architecture.md decision 37): an ordered push subscription to an endpoint
 * answering 204 at once, and a pull subscription read by a streaming subscriber that acknowledges
 * each message (the local stack's delivery watchdog). Then two clients publishing to it: the
 * relay's settings and the library's defaults. The message is a key message of `controller` as
 * the relay encodes it (the same bytes and attributes).
 */
export async function barePublishers(
  emulator: Pick<PubSubEmulator, 'host' | 'projectId'>,
  topicId: string,
  controller: string,
): Promise<BarePublishers> {
  const client = () => new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.host) });
  const endpoint = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  const admin = client();
  const subscriber = client();
  const ordered = client();
  const defaults = client();
  let pull: Subscription | undefined;
  const close = async () => {
    await pull?.close();
    await Promise.all([ordered.close(), defaults.close(), subscriber.close(), admin.close()]);
    endpoint.closeAllConnections();
    await new Promise((resolve) => endpoint.close(resolve));
  };
  try {
    const pushEndpoint = await listen(endpoint);
    const [topic] = await admin.createTopic(topicId);
    await topic.createSubscription(`${topicId}-push`, {
      pushConfig: { pushEndpoint },
      enableMessageOrdering: true,
    });
    await topic.createSubscription(`${topicId}-pull`);
  } catch (err) {
    await close();
    throw err;
  }
  pull = subscriber
    .subscription(`${topicId}-pull`)
    .on('message', (m: Message) => m.ack())
    .on('error', () => {});
  const relayTopic = ordered.topic(topicId, { messageOrdering: true, batching: { ...ORDERED_BATCHING } });
  const defaultTopic = defaults.topic(topicId);
  let i = 0;
  const roundTrip = async (topic: Topic, withOrderingKey: boolean): Promise<number> => {
    const key = { cluster: DEFAULT_CLUSTER, controller, namespace: 'bench', name: `bare-${i++ % KEYS}` };
    const { data, attributes, orderingKey } = encodeKeyMessage(
      keyMessageOf(key, 'watch', new Date().toISOString()),
    );
    const t0 = performance.now();
    await topic.publishMessage({ data, attributes, ...(withOrderingKey ? { orderingKey } : {}) });
    return performance.now() - t0;
  };
  // The first publish of each client opens its gRPC channel: not measured.
  await roundTrip(relayTopic, true);
  await roundTrip(defaultTopic, false);
  return {
    async once() {
      const relaySettings = await roundTrip(relayTopic, true);
      const libraryDefaults = await roundTrip(defaultTopic, false);
      return { relaySettings, libraryDefaults };
    },
    close,
  };
}
