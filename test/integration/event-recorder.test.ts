/**
 * The Event recorder (core/k8s/events.ts) against an API server (local, or a real cluster
 * with TEST_KUBECONFIG): core/v1 Events with metav1.Time timestamps; a repeat of the same
 * (object, type, reason, message) counts on the existing Event, from this process (1 PATCH) or from
 * another instance (POST 409, GET, PATCH), and concurrent counts are not lost; `kubectl get events`
 * shows them.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CoreV1Api, type KubernetesObject, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createEventRecorder, eventName, forgetEventCounts } from '../../core/k8s/events.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { CountingKubeConfig } from '../support/counting-kubeconfig.ts';

const run = promisify(execFile);
const log = pino({ level: 'silent' });
const methods = (requests: string[]) => requests.map((r) => r.split(' ')[0]);

describe('Event recorder', () => {
  let cluster: TestCluster;
  let kc: CountingKubeConfig;
  let core: CoreV1Api;
  let ns: string;
  let regarding: KubernetesObject;

  before(async () => {
    cluster = await startTestCluster();
    kc = new CountingKubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    ns = await cluster.createNamespace('events');
    const cm = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'subject' } },
    });
    regarding = { apiVersion: 'v1', kind: 'ConfigMap', metadata: cm.metadata };
  });

  after(async () => {
    forgetEventCounts();
    await cluster?.stop();
  });

  const eventsOf = async (reason: string) =>
    (await core.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.reason === reason);
  const record = async (reason: string, message = 'the message') => {
    kc.requests = [];
    await createEventRecorder(kc, 'test', log).record(regarding, 'Normal', reason, message);
    return kc.requests;
  };
  const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

  test('first occurrence: one POST of a core/v1 Event with whole-second timestamps', async () => {
    forgetEventCounts();
    assert.deepEqual(methods(await record('First')), ['POST']);
    const [event, ...others] = await eventsOf('First');
    assert.equal(others.length, 0);
    assert.ok(event);
    assert.equal(
      event.metadata.name,
      eventName('levelset.dev/test', regarding, 'Normal', 'First', 'the message'),
    );
    assert.equal(event.count, 1);
    assert.equal(event.type, 'Normal');
    assert.equal(event.message, 'the message');
    assert.equal(event.source?.component, 'levelset.dev/test');
    assert.equal(event.reportingComponent, 'levelset.dev/test');
    assert.equal(event.involvedObject.uid, regarding.metadata?.uid);
    assert.equal(event.firstTimestamp?.getTime(), event.lastTimestamp?.getTime());
  });

  test('a repeat in this process: one PATCH, count 2, no new Event', async () => {
    forgetEventCounts();
    await record('Repeat');
    const requests = await record('Repeat');
    assert.deepEqual(methods(requests), ['PATCH']);
    const events = await eventsOf('Repeat');
    assert.equal(events.length, 1);
    assert.equal(events[0]?.count, 2);
    assert.ok((events[0]?.lastTimestamp?.getTime() ?? 0) >= (events[0]?.firstTimestamp?.getTime() ?? 0));
  });

  test('a repeat from another instance (no cached count): POST 409, GET, PATCH; count 2', async () => {
    forgetEventCounts();
    await record('OtherInstance');
    forgetEventCounts(); // a fresh function instance
    assert.deepEqual(methods(await record('OtherInstance')), ['POST', 'GET', 'PATCH']);
    const events = await eventsOf('OtherInstance');
    assert.equal(events.length, 1);
    assert.equal(events[0]?.count, 2);
  });

  test('a count moved by another instance is not lost: PATCH 422 (test op), GET, PATCH', async () => {
    forgetEventCounts();
    await record('Concurrent');
    const name = eventName('levelset.dev/test', regarding, 'Normal', 'Concurrent', 'the message');
    await core.patchNamespacedEvent(
      { name, namespace: ns, body: [{ op: 'replace', path: '/count', value: 5 }] },
      jsonPatch,
    );
    assert.deepEqual(methods(await record('Concurrent')), ['PATCH', 'GET', 'PATCH']);
    assert.equal((await eventsOf('Concurrent'))[0]?.count, 6);
  });

  test('another message, type or object is another Event; a deleted Event is created again', async () => {
    forgetEventCounts();
    await record('Distinct', 'one');
    await record('Distinct', 'two');
    assert.equal((await eventsOf('Distinct')).length, 2);
    const name = eventName('levelset.dev/test', regarding, 'Normal', 'Distinct', 'one');
    await core.deleteNamespacedEvent({ name, namespace: ns });
    assert.deepEqual(methods(await record('Distinct', 'one')), ['PATCH', 'POST']);
    const again = (await eventsOf('Distinct')).find((e) => e.message === 'one');
    assert.equal(again?.count, 1);
  });

  test('kubectl get events lists them (core/v1), with the count', async () => {
    forgetEventCounts();
    await record('Shown');
    await record('Shown');
    const { stdout } = await run('kubectl', [
      '--kubeconfig',
      cluster.kubeconfigPath,
      'get',
      'events',
      '-n',
      ns,
      '-o',
      'custom-columns=API:.apiVersion,REASON:.reason,COUNT:.count,OBJECT:.involvedObject.name,LAST:.lastTimestamp',
    ]);
    const line = stdout.split('\n').find((l) => l.includes('Shown'));
    assert.ok(line, stdout);
    assert.match(line, /^v1\s+Shown\s+2\s+subject\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });
});
