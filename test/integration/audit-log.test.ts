/**
 * Drift seen from Cloud Audit Logs, through the whole serverless pipeline on real parts: a Topic's
 * topic deleted behind Levelset's back in the Pub/Sub emulator, its Admin Activity entry published to
 * the audit log topic (local/audit-log.ts: no Cloud Logging here), the `auditLog` function under
 * functions-framework mapping it to the Topic's key and publishing it to the keys topic, and
 * `reconcile` recreating the topic, with no resync timer running: only the audit log path can do it.
 * Levelset's own writes are dropped; a malformed entry is logged and acknowledged.
 *
 * Serverless only: the in-process mode has neither the keys topic nor the functions, and nothing in
 * it subscribes to the audit log topic.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { EMULATOR_PROJECT, findCondition, parseConditions } from '../../functions/kit/index.ts';
import { LABELS } from '../../functions/log.ts';
import { emulatorClientOptions } from '../../functions/publish.ts';
import {
  type AuditLogChange,
  auditLogEntry,
  LOCAL_FUNCTIONS_SERVICE_ACCOUNT,
  publishAuditLogEntry,
} from '../../local/audit-log.ts';
import type { LogLine } from '../../local/service.ts';
import {
  outcomeLines,
  type Pipeline,
  pushEnvelope,
  reconcilesOwed,
  serverlessStack,
  startPipeline,
} from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const CRD = new URL('../../functions/controllers/topic/crd.yaml', import.meta.url).pathname;
const [group, version, plural] = ['pubsub.levelset.dev', 'v1alpha1', 'topics'];
const PROJECT = EMULATOR_PROJECT;

// biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
type Json = any;

describe('drift from Cloud Audit Logs (serverless)', () => {
  let p: Pipeline;
  let ns: string;
  let custom: CustomObjectsApi;
  let pubsub: PubSub;

  const topicName = (name: string) => `projects/${PROJECT}/topics/k8s.${ns}.${name}`;
  const publish = (entry: unknown) => {
    const { host, projectId } = serverlessStack(p).emulator;
    return publishAuditLogEntry(host, projectId, entry);
  };
  const change = (c: Partial<AuditLogChange> & { resourceName: string }) =>
    auditLogEntry(PROJECT, {
      serviceName: 'pubsub.googleapis.com',
      methodName: 'google.pubsub.v1.Publisher.DeleteTopic',
      ...c,
    });
  /** The `auditLog` function's lines (`auditLog`: what became of an entry). */
  const auditLines = () => p.logs.filter((l) => l.service === 'auditLog').map((l) => l.line);
  const auditLineOf = (resourceName: string, outcome: string) =>
    auditLines().find((l) => l.resourceName === resourceName && l.auditLog === outcome);
  /** Outcome lines of the Topic `name`'s reconciles with `reason`. */
  const reconciles = (name: string, reason: string): LogLine[] =>
    p.logs
      .filter(({ service, line }) => {
        const labels = line[LABELS] as { controller?: string; key?: string } | undefined;
        return (
          service === 'reconcile' &&
          labels?.controller === 'topic' &&
          labels.key === `${ns}/${name}` &&
          line.reason === reason &&
          typeof line.outcome === 'string'
        );
      })
      .map(({ line }) => line);
  const createReadyTopic = async (name: string, spec: object = {}) => {
    await custom.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      body: { apiVersion: `${group}/${version}`, kind: 'Topic', metadata: { name }, spec },
    });
    await waitFor(
      async () => {
        const t: Json = await custom.getNamespacedCustomObject({
          group,
          version,
          plural,
          namespace: ns,
          name,
        });
        return findCondition(parseConditions(t?.status?.conditions), 'Ready')?.status === 'True';
      },
      { message: `Topic ${name} Ready` },
    );
    // Nothing of the relay's still owed (the finalizer's own event brings the key round once more):
    // what follows the deletion is the audit log's doing.
    await waitFor(async () => (await reconcilesOwed(p, 'topic')) <= outcomeLines(p, 'topic').length, {
      message: 'every topic key the relay published reconciled',
    });
  };
  const exists = async (r: { exists(): Promise<[boolean]> }) => (await r.exists())[0];

  before(async () => {
    p = await startPipeline(
      async (cluster) => {
        custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
        ns = await cluster.createNamespace('audit-log');
        await cluster.applyCrd(CRD, { group, version, plural }, ns);
        return {};
      },
      // No resync timer (the default 0): a topic deleted out of band comes back through its audit
      // log entry, or not at all.
      { mode: 'serverless', auditLog: true, resyncIntervalMs: 0 },
    );
    pubsub = new PubSub({ projectId: PROJECT, ...emulatorClientOptions(serverlessStack(p).emulator.host) });
  });

  after(async () => {
    await pubsub?.close();
    await p?.stop();
  });

  it('recreates a topic deleted behind its back once the audit log entry is published, with no resync', async () => {
    await createReadyTopic('orders');
    await pubsub.topic(topicName('orders')).delete();
    assert.ok(!(await exists(pubsub.topic(topicName('orders')))));
    await publish(change({ resourceName: topicName('orders') }));
    await waitFor(() => exists(pubsub.topic(topicName('orders'))), { message: 'the topic recreated' });
    const line = await waitFor(() => auditLineOf(topicName('orders'), 'published'), {
      message: 'the entry mapped to its key',
    });
    assert.deepEqual(line.keys, [`default/topic/${ns}/orders`]);
    assert.equal(line.principal, 'operator@example.com');
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

  it("drops Levelset's own write: no reconcile of its key, before a later marker's", async () => {
    await createReadyTopic('own');
    const before = reconciles('own', 'audit-log').length;
    const own = change({
      resourceName: topicName('own'),
      methodName: 'google.pubsub.v1.Publisher.UpdateTopic',
      principalEmail: LOCAL_FUNCTIONS_SERVICE_ACCOUNT,
    });
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

  it('logs a malformed entry and acknowledges it (204: never retried)', async () => {
    await publish({ textPayload: 'not an audit log entry', insertId: 'malformed-1' });
    await waitFor(
      () =>
        auditLines().find(
          (l) =>
            l.auditLog === 'malformed' && l.severity === 'ERROR' && String(l.err).includes('protoPayload'),
        ),
      { message: 'the malformed entry logged' },
    );
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
});
