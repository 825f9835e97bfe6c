/**
 * Drift seen from Cloud Audit Logs, through the whole pipeline on real parts, in both modes: a
 * Topic's topic deleted behind Levelset's back in the Pub/Sub emulator, its Admin Activity entry
 * published to the audit log topic (local/audit-log.ts: no Cloud Logging here), mapped to the Topic's
 * key by the same code in both modes (functions/runtime/audit-log.ts `handleAuditLogEntry`): serverless, the
 * `auditLog` function under functions-framework publishing it to the keys topic for `reconcile`;
 * in-process, the process's pull subscription of the audit log topic adding it to the workqueue
 * (functions/runtime/audit-log-subscription.ts). No resync timer runs: only the audit log path can recreate the topic. A
 * Subscription of that Topic, detached by Pub/Sub (`_deleted-topic_`), is replaced right after the
 * topic is back, without a resync either: the Topic's reconcile that recreated it enqueues the
 * Subscriptions that reference it (the kit's `referencedBy`). Levelset's own writes are dropped; a
 * malformed entry is logged and acknowledged.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { emulatorClientOptions } from '../../core/publish.ts';
import { EMULATOR_PROJECT } from '../../functions/kit/google-cloud.ts';
import { findCondition, parseConditions } from '../../functions/kit/index.ts';
import {
  type AuditLogChange,
  auditLogEntry,
  LOCAL_FUNCTIONS_SERVICE_ACCOUNT,
  publishAuditLogEntry,
} from '../../local/audit-log.ts';
import {
  EMULATOR_PROJECT_ID,
  type PubSubEmulator,
  startPubSubEmulator,
} from '../../local/pubsub-emulator.ts';
import type { LogLine } from '../../local/service.ts';
import type { StackMode } from '../../local/stack.ts';
import {
  outcomeLines,
  PIPELINE_MODES,
  type Pipeline,
  pushEnvelope,
  reconcilesOwed,
  serverlessStack,
  startPipeline,
} from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const controllers = new URL('../../functions/controllers/', import.meta.url);
const CRD = new URL('topic/crd.yaml', controllers).pathname;
const SUBSCRIPTION_CRD = new URL('subscription/crd.yaml', controllers).pathname;
const [group, version, plural] = ['pubsub.levelset.dev', 'v1alpha1', 'topics'];
const PROJECT = EMULATOR_PROJECT;

// biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
type Json = any;

const suite = (mode: StackMode) => () => {
  let p: Pipeline;
  let ns: string;
  let custom: CustomObjectsApi;
  let pubsub: PubSub;
  /** The in-process mode runs no emulator: the Topics' Pub/Sub and the audit log topic are this one. */
  let ownEmulator: PubSubEmulator | undefined;

  const topicName = (name: string) => `projects/${PROJECT}/topics/k8s.${ns}.${name}`;
  /** Publishes to the audit log topic, as the log sink would: the stack's emulator, or the in-process mode's. */
  const publish = (entry: unknown) => {
    const { host, projectId } = ownEmulator
      ? { host: ownEmulator.host, projectId: EMULATOR_PROJECT_ID }
      : serverlessStack(p).emulator;
    return publishAuditLogEntry(host, projectId, entry);
  };
  const change = (c: Partial<AuditLogChange> & { resourceName: string }) =>
    auditLogEntry(PROJECT, {
      serviceName: 'pubsub.googleapis.com',
      methodName: 'google.pubsub.v1.Publisher.DeleteTopic',
      ...c,
    });
  /** The lines of the audit log path (`auditLog`: what became of an entry), in either mode. */
  const auditLines = () => p.logs.map((l) => l.line).filter((l) => typeof l.auditLog === 'string');
  const auditLineOf = (resourceName: string, outcome: string) =>
    auditLines().find((l) => l.resourceName === resourceName && l.auditLog === outcome);
  /**
   * Outcome lines of `controller`'s key `name`; with `reason`, of deliveries with that reason
   * (serverless: the key message's; the in-process workqueue keeps no reason).
   */
  const reconciles = (name: string, reason?: string, controller = 'topic'): LogLine[] =>
    outcomeLines(p, controller, `${ns}/${name}`).filter((l) => reason === undefined || l.reason === reason);
  const getObject = (kind: 'topics' | 'subscriptions', name: string): Promise<Json> =>
    custom.getNamespacedCustomObject({ group, version, plural: kind, namespace: ns, name });
  const isReady = (o: Json) =>
    findCondition(parseConditions(o?.status?.conditions), 'Ready')?.status === 'True';
  /** Nothing the pipeline was handed for `controller` is still owed a reconcile. */
  const settled = (controller: string) =>
    waitFor(async () => (await reconcilesOwed(p, controller)) <= outcomeLines(p, controller).length, {
      message: `every ${controller} key handed on reconciled`,
    });
  const createReady = async (kind: 'Topic' | 'Subscription', name: string, spec: object) => {
    const objects = kind === 'Topic' ? 'topics' : 'subscriptions';
    await custom.createNamespacedCustomObject({
      group,
      version,
      plural: objects,
      namespace: ns,
      body: { apiVersion: `${group}/${version}`, kind, metadata: { name }, spec },
    });
    await waitFor(async () => isReady(await getObject(objects, name)), { message: `${kind} ${name} Ready` });
    // Nothing still owed (the finalizer's own event brings the key round once more): what follows
    // the deletion is the audit log's doing.
    await settled(kind.toLowerCase());
  };
  const createReadyTopic = (name: string, spec: object = {}) => createReady('Topic', name, spec);
  const exists = async (r: { exists(): Promise<[boolean]> }) => (await r.exists())[0];

  before(async () => {
    p = await startPipeline(
      async (cluster): Promise<Record<string, string>> => {
        custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
        ns = await cluster.createNamespace('audit-log');
        await cluster.applyCrd(CRD, { group, version, plural }, ns);
        await cluster.applyCrd(SUBSCRIPTION_CRD, { group, version, plural: 'subscriptions' }, ns);
        if (mode === 'serverless') return {};
        ownEmulator = await startPubSubEmulator();
        return { PUBSUB_EMULATOR_HOST: ownEmulator.host };
      },
      // No resync timer (the default 0): a topic deleted out of band comes back through its audit
      // log entry, or not at all.
      { mode, auditLog: true, resyncIntervalMs: 0 },
    );
    const host = ownEmulator?.host ?? serverlessStack(p).emulator.host;
    pubsub = new PubSub({ projectId: PROJECT, ...emulatorClientOptions(host) });
  });

  after(async () => {
    await pubsub?.close();
    await p?.stop();
    await ownEmulator?.stop();
  });

  it('recreates a topic deleted behind its back once the audit log entry is published, with no resync', async (t) => {
    await createReadyTopic('orders');
    const before = reconciles('orders').length;
    await pubsub.topic(topicName('orders')).delete();
    assert.ok(!(await exists(pubsub.topic(topicName('orders')))));
    const published = performance.now();
    await publish(change({ resourceName: topicName('orders') }));
    await waitFor(() => exists(pubsub.topic(topicName('orders'))), { message: 'the topic recreated' });
    // Reported, not asserted (no timing assertions): the issue asks for seconds, not a resync interval.
    t.diagnostic(
      `topic recreated ${Math.round(performance.now() - published)} ms after its entry was published`,
    );
    const line = await waitFor(() => auditLineOf(topicName('orders'), 'published'), {
      message: 'the entry mapped to its key',
    });
    assert.deepEqual(line.keys, [`default/topic/${ns}/orders`]);
    assert.equal(line.principal, 'operator@example.com');
    await waitFor(() => reconciles('orders').length > before, { message: 'a reconcile after the entry' });
    if (p.mode === 'serverless')
      await waitFor(() => reconciles('orders', 'audit-log').length > 0, {
        message: 'a reconcile with reason audit-log',
      });
    assert.equal(reconciles('orders', 'resync').length, 0, 'no resync ran');
  });

  it("finds the owner of a subscription in the Topics' status (a LIST), and recreates it", async () => {
    const subscription = `audit-sub-${ns}`;
    await createReadyTopic('with-sub', { subscriptions: [{ id: subscription }] });
    const name = `projects/${PROJECT}/subscriptions/${subscription}`;
    await pubsub.subscription(subscription).delete();
    await publish(
      change({ resourceName: name, methodName: 'google.pubsub.v1.Subscriber.DeleteSubscription' }),
    );
    await waitFor(() => exists(pubsub.subscription(subscription)), { message: 'the subscription recreated' });
    const line = await waitFor(() => auditLineOf(name, 'published'), {
      message: 'the entry mapped to its key',
    });
    assert.deepEqual(line.keys, [`default/topic/${ns}/with-sub`]);
  });

  it('replaces the Subscription its deleted topic detached as soon as the topic is back, with no resync', async (t) => {
    const subscriptionId = `audit-worker-${ns}`;
    await createReadyTopic('events');
    await createReady('Subscription', 'events-worker', { topicRef: { name: 'events' }, subscriptionId });
    const subscription = pubsub.subscription(subscriptionId);
    assert.equal((await subscription.getMetadata())[0].topic, topicName('events'));
    await settled('topic');
    const before = reconciles('events-worker', undefined, 'subscription').length;

    await pubsub.topic(topicName('events')).delete();
    assert.equal((await subscription.getMetadata())[0].topic, '_deleted-topic_', 'detached by Pub/Sub');
    const published = performance.now();
    await publish(change({ resourceName: topicName('events') }));
    await waitFor(() => exists(pubsub.topic(topicName('events'))), { message: 'the topic recreated' });
    await waitFor(async () => (await subscription.getMetadata())[0].topic === topicName('events'), {
      message: 'the subscription replaced on the recreated topic',
    });
    t.diagnostic(
      `subscription on the recreated topic ${Math.round(performance.now() - published)} ms after the entry was published`,
    );
    // Its outcome line follows the replacement.
    await waitFor(() => reconciles('events-worker', undefined, 'subscription').length > before, {
      message: 'the reconcile of the Subscription that replaced it',
    });
    assert.ok(isReady(await getObject('subscriptions', 'events-worker')), 'the Subscription Ready');
    if (p.mode === 'serverless')
      assert.ok(
        reconciles('events-worker', 'audit-log', 'subscription').length > 0,
        "enqueued with the Topic's delivery's reason",
      );
    assert.equal(reconciles('events-worker', 'resync', 'subscription').length, 0, 'no resync ran');
  });

  it("drops Levelset's own write: nothing enqueued for its key", async () => {
    await createReadyTopic('own');
    const own = change({
      resourceName: topicName('own'),
      methodName: 'google.pubsub.v1.Publisher.UpdateTopic',
      principalEmail: LOCAL_FUNCTIONS_SERVICE_ACCOUNT,
    });
    if (p.mode === 'in-process') {
      // An entry's keys are added before its line is written: once the line is there, an add
      // would have been counted (client-go's workqueue_adds_total; the queue is idle, so it counts).
      const adds = await reconcilesOwed(p, 'topic');
      await publish(own);
      await waitFor(() => auditLineOf(topicName('own'), 'own-write'), { message: 'the own write dropped' });
      assert.equal(await reconcilesOwed(p, 'topic'), adds, 'nothing added to the workqueue');
      return;
    }
    const before = reconciles('own', 'audit-log').length;
    await publish(own);
    await waitFor(() => auditLineOf(topicName('own'), 'own-write'), { message: 'the own write dropped' });
    // The marker: the same key, from someone else, published after the own write was handled. The
    // keys topic orders one key's messages, so a key the own write had published would come first.
    const marker = change({
      resourceName: topicName('own'),
      methodName: 'google.pubsub.v1.Publisher.UpdateTopic',
    });
    await publish(marker);
    const published = await waitFor(() => auditLineOf(topicName('own'), 'published'), {
      message: "the marker's key published",
    });
    const [markerId] = published.messageIds as string[];
    await waitFor(() => reconciles('own', 'audit-log').some((l) => l.messageId === markerId), {
      message: "the marker's reconcile",
    });
    assert.deepEqual(
      reconciles('own', 'audit-log')
        .slice(before)
        .map((l) => l.messageId),
      [markerId],
      'the own write reconciled nothing',
    );
  });

  it('logs a malformed entry and acknowledges it (never retried)', async () => {
    await publish({ textPayload: 'not an audit log entry', insertId: 'malformed-1' });
    await waitFor(
      () =>
        auditLines().find(
          (l) =>
            l.auditLog === 'malformed' && l.severity === 'ERROR' && String(l.err).includes('protoPayload'),
        ),
      { message: 'the malformed entry logged' },
    );
    if (p.mode !== 'serverless') return;
    const url = serverlessStack(p).auditLog?.url;
    assert.ok(url, 'the auditLog function runs');
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(pushEnvelope({ protoPayload: { '@type': 'type.googleapis.com/other' } })),
    });
    assert.equal(res.status, 204, 'acknowledged');
    await waitFor(
      () => auditLines().find((l) => l.auditLog === 'malformed' && String(l.err).includes('@type')),
      { message: 'the posted entry logged as malformed' },
    );
  });
};

for (const mode of PIPELINE_MODES) describe(`drift from Cloud Audit Logs (${mode})`, suite(mode));
