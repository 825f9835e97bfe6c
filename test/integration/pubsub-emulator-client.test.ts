// Levelset's Pub/Sub clients under the emulator (core/publish.ts emulatorClientOptions) ask
// nothing of Google's auth library: no Application Default Credentials lookup, hence no probe of
// the GCE metadata server, whose failure off Google Cloud prints `MetadataLookupWarning` (it did
// in npm start, the tests and npm run bench).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createSubscriber } from '../../cli/pubsub.ts';
import { createKeyPublisher } from '../../core/publish.ts';
import { ensureKeysTopology, type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';

let emulator: PubSubEmulator;
const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);

before(async () => {
  // As on a developer's machine: nothing tells the auth library that no metadata server exists.
  delete process.env.METADATA_SERVER_DETECTION;
  delete process.env.GCE_METADATA_HOST;
  delete process.env.PUBSUB_EMULATOR_HOST;
  process.on('warning', onWarning);
  emulator = await startPubSubEmulator();
});

after(async () => {
  process.off('warning', onWarning);
  await emulator?.stop();
});

test('topology, publisher and subscriber on the emulator: no metadata-server probe', async () => {
  const topology = await ensureKeysTopology({
    projectId: emulator.projectId,
    emulatorHost: emulator.host,
    topic: 'levelset-keys',
    pushEndpoint: 'http://127.0.0.1:9/',
  });
  const publisher = createKeyPublisher({
    projectId: emulator.projectId,
    emulatorHost: emulator.host,
    topic: 'levelset-keys',
  });
  try {
    const id = await publisher.publish({
      v: 1,
      controller: 'foo',
      namespace: 'demo',
      name: 'example-foo',
      reason: 'manual',
      enqueuedAt: new Date().toISOString(),
    });
    assert.match(id, /\S/);
  } finally {
    await publisher.close();
  }
  const subscriber = createSubscriber({
    kind: 'local',
    projectId: emulator.projectId,
    emulatorHost: emulator.host,
    topic: topology.topic,
    subscription: topology.subscription,
    deadLetterSubscription: topology.deadLetterSubscription,
    describe: 'the test emulator',
  });
  try {
    assert.deepEqual(await subscriber.pull(topology.deadLetterSubscription, 1), []);
  } finally {
    await subscriber.close();
  }
  // A probe's warning is emitted on a later tick: let the event loop run once more.
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(
    warnings.filter((w) => w.name === 'MetadataLookupWarning').map((w) => w.message),
    [],
  );
});
