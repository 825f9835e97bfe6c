/**
 * Relay benchmark: messages published for a burst of updates to one object, and the time from a
 * watch event to Pub/Sub accepting its key message, at a given collapse window (default: the
 * relay's default, 250 ms). Runs against a fresh local API server (or `--kubeconfig`) and the real
 * Pub/Sub emulator.
 *
 *   npx node relay/bench.ts [--updates 100] [--samples 20] [--collapse-ms 250] [--kubeconfig FILE]
 *
 * Prints one JSON object (times in ms).
 */
import { parseArgs } from 'node:util';
import { PubSub } from '@google-cloud/pubsub';
import {
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { Controller, ResourceType } from '../functions/controllers/types.ts';
import { createLogger } from '../functions/log.ts';
import { type KeyMessage, keyMessageSchema } from '../functions/message.ts';
import { createKeyPublisher } from '../functions/publish.ts';
import { startLocalApiServer } from '../local/apiserver/index.ts';
import { startPubSubEmulator } from '../local/pubsub-emulator.ts';
import { DEFAULT_COLLAPSE_MS } from './config.ts';
import { startRelay } from './relay.ts';

const { values: args } = parseArgs({
  options: {
    updates: { type: 'string', default: '100' },
    samples: { type: 'string', default: '20' },
    'collapse-ms': { type: 'string', default: String(DEFAULT_COLLAPSE_MS) },
    kubeconfig: { type: 'string' },
  },
});
const updates = Number(args.updates);
const samples = Number(args.samples);
const collapseMs = Number(args['collapse-ms']);

const configmaps: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
  const r = (x: number) => Math.round(x * 10) / 10;
  return {
    n: s.length,
    min: r(s[0] ?? Number.NaN),
    p50: r(q(0.5)),
    p95: r(q(0.95)),
    max: r(s.at(-1) ?? Number.NaN),
  };
};

const local = args.kubeconfig ? undefined : await startLocalApiServer();
const emulator = await startPubSubEmulator();
const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(args.kubeconfig ?? (local as NonNullable<typeof local>).kubeconfigPath);
const core = kubeConfig.makeApiClient(CoreV1Api);
const ns = `relay-bench-${Date.now().toString(36)}`;
await core.createNamespace({ body: { metadata: { name: ns } } });

const pubsub = new PubSub({ projectId: emulator.projectId, apiEndpoint: emulator.host, emulatorMode: true });
const topic = 'relay-bench-keys';
await pubsub.createTopic(topic);
const [subscription] = await pubsub
  .topic(topic)
  .createSubscription('relay-bench', { enableMessageOrdering: true });
const received: { message: KeyMessage; at: number }[] = [];
subscription.on('message', (m) => {
  received.push({
    message: keyMessageSchema.parse(JSON.parse(m.data.toString('utf8'))),
    at: performance.timeOrigin + performance.now(),
  });
  m.ack();
});

const logger = createLogger('relay');
logger.level = 'warn';
const shared = createKeyPublisher({
  projectId: emulator.projectId,
  topic,
  emulatorHost: emulator.host,
  logger,
});
/** Event (first enqueue, the message's enqueuedAt) → Pub/Sub accepted the publish, per message. */
const eventToPublish: number[] = [];
const publisher = {
  async publish(m: KeyMessage) {
    const id = await shared.publish(m);
    eventToPublish.push(Date.now() - Date.parse(m.enqueuedAt));
    return id;
  },
  flush: () => shared.flush(),
};
const controller: Controller = {
  name: 'relay-bench',
  primary: configmaps,
  rbac: [],
  watches: [
    {
      resource: configmaps,
      namespace: ns,
      map: (e: { object: KubernetesObject }) => [{ namespace: ns, name: e.object.metadata?.name ?? '' }],
    },
  ],
  reconcile: async () => undefined,
};
const relay = await startRelay({
  kubeConfig,
  publisher,
  controllers: [controller],
  collapseMs,
  logger,
  port: 0,
});
await relay.whenReady();

const patch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const countFor = (name: string) => received.filter((r) => r.message.name === name).length;
/** Waits until no message has arrived for `quietMs`. */
async function quiet(quietMs = Math.max(1000, collapseMs * 4)): Promise<void> {
  let last = received.length;
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    await sleep(50);
    if (received.length !== last) {
      last = received.length;
      since = Date.now();
    }
  }
}

async function burst(name: string, concurrent: boolean) {
  await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
  await quiet();
  const before = countFor(name);
  const started = performance.now();
  const one = (i: number) =>
    core.patchNamespacedConfigMap({ namespace: ns, name, body: { data: { n: String(i) } } }, patch);
  if (concurrent) await Promise.all(Array.from({ length: updates }, (_, i) => one(i)));
  else for (let i = 0; i < updates; i++) await one(i);
  const durationMs = performance.now() - started;
  await quiet();
  return { updates, burstDurationMs: Math.round(durationMs), messages: countFor(name) - before };
}

const concurrentBurst = await burst('burst-concurrent', true);
const sequentialBurst = await burst('burst-sequential', false);

// Latency: one update at a time, spaced beyond the window, each to its own object.
eventToPublish.length = 0;
const updateToReceive: number[] = [];
for (let i = 0; i < samples; i++) {
  const name = `latency-${i}`;
  const t0 = performance.timeOrigin + performance.now();
  await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
  while (countFor(name) === 0) await sleep(2);
  const hit = received.find((r) => r.message.name === name);
  if (hit) updateToReceive.push(hit.at - t0);
  await sleep(20);
}

console.log(
  JSON.stringify(
    {
      collapseMs,
      concurrentBurst,
      sequentialBurst,
      eventToPublishMs: stats(eventToPublish),
      apiWriteToMessageReceivedMs: stats(updateToReceive),
      apiServer: args.kubeconfig ? 'kubeconfig' : 'local',
    },
    null,
    2,
  ),
);

await relay.stop();
await shared.close();
subscription.removeAllListeners('message');
await subscription.close();
await pubsub.close();
await core.deleteNamespace({ name: ns }).catch(() => {});
await local?.stop();
await emulator.stop();
