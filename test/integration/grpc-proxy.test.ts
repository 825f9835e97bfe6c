/**
 * The shared gRPC proxy's model of topic label updates (local/grpc-proxy.ts, `topicLabels`), in front
 * of the real Pub/Sub emulator, through the Pub/Sub client: what the emulator refuses without it; a
 * label update answered with the updated Topic (the whole map replaced) and read back by GetTopic and
 * ListTopics, while the emulator's own topic keeps its labels; NOT_FOUND for a missing topic; the
 * mask's other paths applied by the emulator, and its refusal of them answered unchanged; the overlay
 * ended by a delete; what the model answered counted and marked in the records.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import protos from '@google-cloud/pubsub/build/protos/protos.js';
import { emulatorClientOptions } from '../../core/publish.ts';
import { type GrpcProxy, startGrpcProxy } from '../../local/grpc-proxy.ts';
import { type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';

const PUBLISHER = '/google.pubsub.v1.Publisher/';
const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;

describe('grpc proxy: the topic labels model', () => {
  let emulator: PubSubEmulator;
  let proxy: GrpcProxy;
  /** Through the proxy, as Levelset's controllers call Pub/Sub in the tests. */
  let viaProxy: PubSub;
  /** Straight to the emulator: what it holds itself. */
  let direct: PubSub;
  let n = 0;
  const newId = () => `labels-${++n}`;
  const labelsVia = async (client: PubSub, id: string) => (await client.topic(id).getMetadata())[0].labels;
  const rejection = (promise: Promise<unknown>) =>
    promise.then(
      () => assert.fail('answered'),
      (err: { code?: number; details?: string }) => err,
    );

  before(async () => {
    emulator = await startPubSubEmulator();
    proxy = await startGrpcProxy(emulator.host, { topicLabels: true });
    viaProxy = new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(proxy.host) });
    direct = new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.host) });
  });
  after(async () => {
    await viaProxy?.close();
    await direct?.close();
    await proxy?.close();
    await emulator?.stop();
  });

  it('without the model, the emulator refuses a label update (what the model stands in for)', async () => {
    const id = newId();
    await viaProxy.createTopic({ name: id, labels: { a: '1' } });
    proxy.topicLabels = false;
    try {
      const err = await rejection(viaProxy.topic(id).setMetadata({ labels: { a: '2' } }));
      assert.equal(err.code, INVALID_ARGUMENT);
      assert.match(err.details ?? '', /labels is not a known Topic field/);
    } finally {
      proxy.topicLabels = true;
    }
    assert.deepEqual(await labelsVia(viaProxy, id), { a: '1' });
  });

  it('answers a label update with the updated Topic, the whole map replaced, and GetTopic and ListTopics read it back', async () => {
    const id = newId();
    const [topic] = await viaProxy.createTopic({ name: id, labels: { a: '1', b: '2' } });
    proxy.modelled.clear();
    const kept = proxy.record(/\/UpdateTopic$/);
    try {
      const [updated] = await topic.setMetadata({ labels: { b: '3', c: '4' } });
      assert.equal(updated.name, topic.name);
      assert.deepEqual(updated.labels, { b: '3', c: '4' }, 'replaced as a whole');
    } finally {
      kept.stop();
    }
    assert.deepEqual(await labelsVia(viaProxy, id), { b: '3', c: '4' });
    const [listed] = await viaProxy.getTopics();
    assert.deepEqual(listed.find((t) => t.name === topic.name)?.metadata?.labels, { b: '3', c: '4' });
    assert.deepEqual(await labelsVia(direct, id), { a: '1', b: '2' }, "the emulator's own: the overlay's");
    assert.deepEqual(
      Object.fromEntries(proxy.modelled),
      { [`${PUBLISHER}UpdateTopic`]: 1, [`${PUBLISHER}GetTopic`]: 1, [`${PUBLISHER}ListTopics`]: 1 },
      'every answer the model made or changed counted',
    );
    assert.deepEqual(
      kept.requests.map((r) => [
        protos.google.pubsub.v1.UpdateTopicRequest.decode(r.message).updateMask?.paths,
        r.modelled,
      ]),
      [[['labels'], true]],
    );
    await topic.setMetadata({ labels: {} });
    assert.deepEqual(await labelsVia(viaProxy, id), {}, 'an empty map clears them');
  });

  it('answers NOT_FOUND for a topic that does not exist, and keeps nothing of it', async () => {
    const id = newId();
    const err = await rejection(viaProxy.topic(id).setMetadata({ labels: { a: '1' } }));
    assert.equal(err.code, NOT_FOUND);
    await direct.createTopic({ name: id, labels: { created: 'past-the-proxy' } });
    assert.deepEqual(await labelsVia(viaProxy, id), { created: 'past-the-proxy' });
  });

  it("forwards the mask's other paths to the emulator, which applies them, or refuses them and nothing changes", async () => {
    const id = newId();
    const [topic] = await viaProxy.createTopic({ name: id, labels: { a: '1' } });
    const day = { seconds: 86_400 };
    const [updated] = await topic.setMetadata({ labels: { a: '2' }, messageRetentionDuration: day });
    assert.deepEqual(updated.labels, { a: '2' });
    assert.equal(Number(updated.messageRetentionDuration?.seconds), day.seconds);
    const [own] = await direct.topic(id).getMetadata();
    assert.equal(Number(own.messageRetentionDuration?.seconds), day.seconds, 'applied by the emulator');
    // Below Pub/Sub's minimum retention (10 minutes): the emulator's INVALID_ARGUMENT, as it says it.
    const err = await rejection(
      topic.setMetadata({ labels: { a: '3' }, messageRetentionDuration: { seconds: 1 } }),
    );
    assert.equal(err.code, INVALID_ARGUMENT);
    assert.match(err.details ?? '', /message_retention_duration/);
    const [after] = await viaProxy.topic(id).getMetadata();
    assert.deepEqual(after.labels, { a: '2' }, 'the labels unchanged');
    assert.equal(Number(after.messageRetentionDuration?.seconds), day.seconds);
  });

  it('a delete ends the labels it set: the topic created again has the labels it was created with', async () => {
    const id = newId();
    const [topic] = await viaProxy.createTopic({ name: id, labels: { a: '1' } });
    await topic.setMetadata({ labels: { a: 'set' } });
    await topic.delete();
    await viaProxy.createTopic({ name: id, labels: { a: 'again' } });
    assert.deepEqual(await labelsVia(viaProxy, id), { a: 'again' });
    // Deleted past the proxy: its NOT_FOUND ends the entry too.
    await viaProxy.topic(id).setMetadata({ labels: { a: 'set' } });
    await direct.topic(id).delete();
    assert.equal(
      (await rejection(viaProxy.topic(id).getMetadata())).code,
      NOT_FOUND,
      'gone, as the emulator says',
    );
    await direct.createTopic({ name: id, labels: { a: 'fresh' } });
    assert.deepEqual(await labelsVia(viaProxy, id), { a: 'fresh' });
  });
});
