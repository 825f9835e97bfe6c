/**
 * `topic`: the Topic controller (`pubsub.levelset.dev/v1alpha1`), on the Levelset controller kit
 * (docs/writing-a-controller.md, "Controllers of external resources"). A Topic stands for a Pub/Sub
 * topic and its subscriptions in the functions' project (Config Connector's model): the reconcile
 * creates what is missing (labelled with the Topic's UID), updates what differs, never adopts a topic
 * or subscription it did not create (`Ready=False/ResourceExists`), and recreates what was deleted out
 * of band; `finalize` deletes what it created before the Topic goes. Google Cloud errors are sorted by
 * the kit (`throwGoogleCloudError`). A converged Topic costs 1 Kubernetes request (GET) and 1 Pub/Sub
 * request per topic and subscription (a read each).
 */
import type { PubSub, Subscription, Topic } from '@google-cloud/pubsub';
import {
  defineController,
  googleCloudClientOptions,
  isGrpcAlreadyExists,
  isGrpcNotFound,
  messageResourceExists,
  type PrimaryObject,
  type ReconcileInput,
  TerminalError,
  throwGoogleCloudError,
} from '../../kit/index.ts';
import {
  defaultTopicId,
  OWNER_LABEL,
  type SubscriptionSpec,
  type TopicSpec,
  type TopicStatus,
  topicResource,
  topicSpecSchema,
} from './api.ts';
import { topicAuditLog } from './audit-log.ts';

type Logger = ReconcileInput<TopicSpec>['log'];

/** Reason of `Ready=False` and the Warning Event when the topic or a subscription is someone else's. */
export const RESOURCE_EXISTS = 'ResourceExists';

/**
 * The Pub/Sub emulator the controller uses, if any: `TOPIC_CONTROLLER_EMULATOR_HOST` (`host:port`,
 * e.g. the tests' fault-injecting proxy, local/grpc-proxy.ts), else `PUBSUB_EMULATOR_HOST`.
 */
const emulatorOf = (env: NodeJS.ProcessEnv) => env.TOPIC_CONTROLLER_EMULATOR_HOST ?? env.PUBSUB_EMULATOR_HOST;

/**
 * The project the topics live in: `TOPIC_CONTROLLER_PROJECT`; else, against an emulator,
 * `levelset-topics`, a project of its own that can never hold the keys topic; else the functions'
 * `GOOGLE_CLOUD_PROJECT`.
 * @throws {Error} when none applies
 */
export function topicProject(env: NodeJS.ProcessEnv = process.env): string {
  const project =
    env.TOPIC_CONTROLLER_PROJECT ?? (emulatorOf(env) ? 'levelset-topics' : env.GOOGLE_CLOUD_PROJECT);
  if (!project) throw new Error('topic: set TOPIC_CONTROLLER_PROJECT or GOOGLE_CLOUD_PROJECT');
  return project;
}

let client: PubSub | undefined;
/**
 * Makes the one Pub/Sub client of the process (it holds the gRPC channel), in {@link topicProject}.
 * `@google-cloud/pubsub` and its gRPC stack are imported here, at the first reconcile or finalize,
 * never when the functions start (cold start: the bundle loads it as a chunk of its own).
 */
async function loadPubSub(): Promise<void> {
  if (client) return;
  const { PubSub } = await import('@google-cloud/pubsub');
  client ??= new PubSub({ projectId: topicProject(), ...googleCloudClientOptions(emulatorOf(process.env)) });
}

/** The client {@link loadPubSub} made. @throws {Error} when it was not awaited first. */
function pubsub(): PubSub {
  if (!client) throw new Error('topic: loadPubSub() must be awaited before pubsub()');
  return client;
}

/** Runs one Pub/Sub call, sorting its errors (what: e.g. `create projects/p/topics/t`). */
async function call<T>(what: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (err) {
    return throwGoogleCloudError(err, what);
  }
}

/** The labels that mark what `topic` created. */
const ownedBy = (topic: PrimaryObject) => ({ [OWNER_LABEL]: topic.metadata.uid });
const isOurs = (labels: Record<string, string> | null | undefined, topic: PrimaryObject) =>
  labels?.[OWNER_LABEL] === topic.metadata.uid;

/** The live metadata of a topic or subscription, or `undefined` when it does not exist. */
async function read<M>(what: string, resource: { getMetadata(): Promise<unknown> }): Promise<M | undefined> {
  try {
    return ((await resource.getMetadata()) as [M])[0];
  } catch (err) {
    if (isGrpcNotFound(err)) return undefined;
    return throwGoogleCloudError(err, `read ${what}`);
  }
}

/**
 * Deletes a topic or subscription if it exists and `owner` created it; gone already is success.
 * `dryRun` (a plan): reads, logs what it would delete, deletes nothing.
 */
async function deleteIfOurs(
  resource: Topic | Subscription,
  owner: PrimaryObject,
  log: Logger,
  dryRun = false,
): Promise<void> {
  const live = await read<{ labels?: Record<string, string> | null }>(resource.name, resource);
  if (!live || !isOurs(live.labels, owner)) return; // gone, or not ours: never delete it
  if (dryRun) {
    log.info({ resource: resource.name }, 'dry-run: would delete');
    return;
  }
  try {
    await resource.delete();
  } catch (err) {
    if (!isGrpcNotFound(err)) throwGoogleCloudError(err, `delete ${resource.name}`);
  }
}

/**
 * Creates the topic, or updates its labels and retention when they differ; refuses one not ours.
 * `dryRun` (a plan): reads, logs what it would write, writes nothing.
 */
async function ensureTopic(
  object: PrimaryObject,
  spec: TopicSpec,
  log: Logger,
  dryRun: boolean,
): Promise<Topic> {
  const topic = pubsub().topic(
    spec.topicId ?? defaultTopicId(object.metadata.namespace, object.metadata.name),
  );
  const labels = { ...spec.labels, ...ownedBy(object) };
  const retention = spec.messageRetentionDuration
    ? { messageRetentionDuration: { seconds: Number.parseInt(spec.messageRetentionDuration, 10) } }
    : {};
  const live = await read<{
    labels?: Record<string, string> | null;
    messageRetentionDuration?: { seconds?: unknown } | null;
  }>(topic.name, topic);
  if (!live) {
    if (dryRun) {
      log.info({ topic: topic.name }, 'dry-run: would create topic');
      return topic;
    }
    try {
      await pubsub().createTopic({ name: topic.name, labels, ...retention });
      log.info({ topic: topic.name }, 'created topic');
      return topic;
    } catch (err) {
      if (!isGrpcAlreadyExists(err)) throwGoogleCloudError(err, `create ${topic.name}`);
      return ensureTopic(object, spec, log, dryRun); // created meanwhile: read it again (and refuse it unless ours)
    }
  }
  if (!isOurs(live.labels, object))
    throw new TerminalError(RESOURCE_EXISTS, messageResourceExists(topic.name, 'Topic'));
  const sameLabels =
    JSON.stringify(Object.entries(live.labels ?? {}).sort()) ===
    JSON.stringify(Object.entries(labels).sort());
  const sameRetention =
    !retention.messageRetentionDuration ||
    Number(live.messageRetentionDuration?.seconds) === retention.messageRetentionDuration.seconds;
  if ((!sameLabels || !sameRetention) && dryRun)
    log.info({ topic: topic.name }, 'dry-run: would update topic');
  else if (!sameLabels || !sameRetention)
    await call(`update ${topic.name}`, () => topic.setMetadata({ labels, ...retention }));
  return topic;
}

/**
 * Creates a subscription of `topic`, or updates its ack deadline and dead letter when they differ.
 * `dryRun` (a plan): reads, logs what it would write, writes nothing.
 */
async function ensureSubscription(
  object: PrimaryObject,
  topic: Topic,
  spec: SubscriptionSpec,
  log: Logger,
  dryRun: boolean,
): Promise<string> {
  const subscription = pubsub().subscription(spec.id);
  const settings = {
    ackDeadlineSeconds: spec.ackDeadlineSeconds ?? 10,
    deadLetterPolicy: spec.deadLetter
      ? {
          deadLetterTopic: pubsub().topic(spec.deadLetter.topicId).name,
          maxDeliveryAttempts: spec.deadLetter.maxDeliveryAttempts ?? 5,
        }
      : null,
  };
  type Live = { labels?: Record<string, string> | null; topic?: string | null } & Partial<typeof settings>;
  const live = await read<Live>(subscription.name, subscription);
  if (!live) {
    if (dryRun) {
      log.info({ subscription: subscription.name }, 'dry-run: would create subscription');
      return subscription.name;
    }
    try {
      await topic.createSubscription(spec.id, { labels: ownedBy(object), ...settings });
      log.info({ subscription: subscription.name }, 'created subscription');
      return subscription.name;
    } catch (err) {
      if (!isGrpcAlreadyExists(err)) throwGoogleCloudError(err, `create ${subscription.name}`);
      return ensureSubscription(object, topic, spec, log, dryRun);
    }
  }
  if (!isOurs(live.labels, object))
    throw new TerminalError(RESOURCE_EXISTS, messageResourceExists(subscription.name, 'Topic'));
  if (live.topic !== topic.name) {
    // Ours, of another topic (`_deleted-topic_` once its topic was deleted): a subscription's topic
    // cannot change, so it is replaced.
    await deleteIfOurs(subscription, object, log, dryRun);
    if (dryRun) {
      log.info({ subscription: subscription.name }, 'dry-run: would create subscription');
      return subscription.name;
    }
    return ensureSubscription(object, topic, spec, log, dryRun);
  }
  const liveDeadLetter = live.deadLetterPolicy?.deadLetterTopic
    ? {
        deadLetterTopic: live.deadLetterPolicy.deadLetterTopic,
        maxDeliveryAttempts: live.deadLetterPolicy.maxDeliveryAttempts,
      }
    : null;
  if (
    live.ackDeadlineSeconds !== settings.ackDeadlineSeconds ||
    JSON.stringify(liveDeadLetter) !== JSON.stringify(settings.deadLetterPolicy)
  )
    if (dryRun) log.info({ subscription: subscription.name }, 'dry-run: would update subscription');
    else await call(`update ${subscription.name}`, () => subscription.setMetadata(settings));
  return subscription.name;
}

/** The `topic` controller module (registered in `functions/controllers/index.ts`). */
export const topicController = defineController({
  name: 'topic',
  primary: topicResource,
  spec: topicSpecSchema,
  synced: false,
  auditLog: topicAuditLog,
  async reconcile({ object, spec, log, dryRun }) {
    await loadPubSub();
    const status = (object.status ?? {}) as TopicStatus;
    const topic = await ensureTopic(object, spec, log, dryRun);
    const subscriptions: string[] = [];
    for (const s of spec.subscriptions ?? [])
      subscriptions.push(await ensureSubscription(object, topic, s, log, dryRun));
    // What this Topic created before and no longer wants (a renamed topic, a removed subscription).
    for (const name of status.subscriptions ?? [])
      if (!subscriptions.includes(name)) await deleteIfOurs(pubsub().subscription(name), object, log, dryRun);
    if (status.topic && status.topic !== topic.name)
      await deleteIfOurs(pubsub().topic(status.topic), object, log, dryRun);
    return {
      status: { topic: topic.name, subscriptions },
      ready: { status: true, reason: 'TopicReady', message: `${topic.name} exists` },
    };
  },
  async finalize({ object, spec, log }) {
    await loadPubSub();
    const status = (object.status ?? {}) as TopicStatus;
    const subscriptions = new Set([
      ...(status.subscriptions ?? []),
      ...(spec?.subscriptions ?? []).map((s) => pubsub().subscription(s.id).name),
    ]);
    for (const name of subscriptions) await deleteIfOurs(pubsub().subscription(name), object, log);
    const topicId = spec?.topicId ?? defaultTopicId(object.metadata.namespace, object.metadata.name);
    for (const name of new Set([status.topic, pubsub().topic(topicId).name]))
      if (name) await deleteIfOurs(pubsub().topic(name), object, log);
    return undefined; // done: the kit removes the finalizer
  },
});
