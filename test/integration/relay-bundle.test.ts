/**
 * The relay as its image runs it: `npm run package:relay`'s bundle (relay/Dockerfile builds the
 * same), started as the image runs it (with the relay's deployed V8 flags, terraform/kubernetes.tf)
 * against the local API server and the Pub/Sub emulator, becomes ready and
 * publishes a Foo's key when the Foo is created, talking HTTPS to the API server. The bundle's node_modules is the repository's (the
 * image holds the production dependencies).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Message, PubSub } from '@google-cloud/pubsub';
import { packageRelay, RELAY_MAIN } from '../../cli/build/package-relay.ts';
import { type KeyMessage, keyMessageSchema } from '../../core/message.ts';
import { emulatorClientOptions } from '../../core/publish.ts';
import { startTestCluster, type TestCluster, uniqueSuffix } from '../../functions/kit/testing.ts';
import { freePort, type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import { ALLOCATOR_ENV, repoRoot, type Service, startService } from '../../local/service.ts';
import { RELAY_NODE_OPTIONS } from '../../local/stack-services.ts';
import { type CustomResource, customObjects } from '../support/custom-objects.ts';
import { startAll } from '../support/start.ts';
import { waitFor } from '../support/wait.ts';

const foos: CustomResource = {
  group: 'samplecontroller.k8s.io',
  version: 'v1alpha1',
  plural: 'foos',
  kind: 'Foo',
};

describe('the relay bundle', () => {
  let cluster: TestCluster;
  let emulator: PubSubEmulator;
  let pubsub: PubSub;
  let relay: Service | undefined;
  let dir: string;
  let ns: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'levelset-relay-bundle-'));
    await packageRelay({ out: dir, inProcess: false }); // the relay alone runs here
    symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');
    // HTTPS with a CA, as a GKE control plane serves it: the relay's requests go through undici's
    // Agent with that CA (core/pooled-kubeconfig.ts), as deployed.
    [cluster, emulator] = await startAll([startTestCluster({ tls: true }), startPubSubEmulator()]);
    pubsub = new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.host) });
    ns = await cluster.createNamespace('relay-bundle');
    await cluster.applyCrd(join(repoRoot, 'examples', 'foo', 'controllers', 'foo', 'crd.yaml'), foos, ns);
  });

  after(async () => {
    await relay?.stop();
    await pubsub?.close();
    await Promise.allSettled([cluster?.stop(), emulator?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('is one bundle, not the TypeScript sources', () => {
    assert.doesNotMatch(readFileSync(join(dir, RELAY_MAIN), 'utf8'), /from\s*["'][^"']*\.ts["']/);
  });

  it('runs with the environment the image sets', () => {
    const dockerfile = readFileSync(join(repoRoot, 'relay', 'Dockerfile'), 'utf8');
    for (const [name, value] of Object.entries(ALLOCATOR_ENV))
      assert.match(dockerfile, new RegExp(`\\b${name}=${value}\\b`));
  });

  it("publishes a created Foo's key", async () => {
    const topic = `relay-bundle-${uniqueSuffix()}`;
    const [created] = await pubsub.createTopic(topic);
    const [subscription] = await created.createSubscription(`inbox-${uniqueSuffix()}`, {
      enableMessageOrdering: true,
    });
    const keys: KeyMessage[] = [];
    subscription.on('message', (m: Message) => {
      keys.push(keyMessageSchema.parse(JSON.parse(m.data.toString('utf8'))));
      m.ack();
    });
    const port = await freePort();
    relay = await startService({
      name: 'relay-bundle',
      // The image's command (relay/Dockerfile) with its NODE_OPTIONS (terraform/kubernetes.tf).
      args: [...RELAY_NODE_OPTIONS, join(dir, RELAY_MAIN)],
      port,
      readyPath: '/readyz',
      env: {
        ...ALLOCATOR_ENV,
        KUBECONFIG: cluster.kubeconfigPath,
        PUBSUB_EMULATOR_HOST: emulator.host,
        GOOGLE_CLOUD_PROJECT: emulator.projectId,
        LEVELSET_TOPIC: topic,
        RELAY_PORT: String(port),
      },
    });
    try {
      await customObjects(cluster.kubeConfig, foos, ns).create('bundled', {
        deploymentName: 'bundled',
        replicas: 1,
      });
      const key = await waitFor(
        () => keys.find((k) => k.controller === 'foo' && k.namespace === ns && k.name === 'bundled'),
        { message: "the Foo's key published by the bundled relay" },
      );
      assert.equal(key.name, 'bundled');
    } finally {
      subscription.removeAllListeners('message');
      await subscription.close();
    }
    await relay.stop();
    const messages = relay.logs.map((l) => l.message);
    assert.ok(messages.includes('relay stopped'), JSON.stringify(relay.logs.slice(-5)));
  });
});
