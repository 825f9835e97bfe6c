/**
 * A cluster-scoped primary end to end, in both modes, against an API server (the local one, or
 * TEST_KUBECONFIG's cluster): in-process (informers → workqueue → the kit's reconcile), and
 * serverless on real parts (the relay → the Pub/Sub emulator → push → the `reconcile` handler under
 * functions-framework's server; the controller is the test's, so it is served by a handler of its
 * own rather than the registry's function process). A cluster-scoped
 * `Realm` owns a ConfigMap in the namespace its spec names. Its key has no namespace all the way
 * through: the primary's watch, the key (and its message), the resync's enumeration, the reconcile,
 * and a namespaced child's event mapped back through its controller reference.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as ff from '@google-cloud/functions-framework';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import * as z from 'zod';
import { createLogger } from '../../core/log.ts';
import { keyMessageSchema } from '../../core/message.ts';
import { createKeyPublisher } from '../../core/publish.ts';
import { configmaps, customResource, defineController, isControlledBy } from '../../functions/kit/index.ts';
import { startTestCluster, type TestCluster, uniqueSuffix } from '../../functions/kit/testing.ts';
import { type InProcess, startInProcess } from '../../functions/runtime/in-process.ts';
import { createReconcileHandler } from '../../functions/runtime/reconcile.ts';
import { ensureKeysTopology, type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import { type Relay, startRelay } from '../../relay/relay.ts';
import { waitFor } from '../support/wait.ts';

const GROUP = 'cluster-scoped.levelset.dev';
const realms = customResource({ group: GROUP, version: 'v1', kind: 'Realm', scope: 'Cluster' });
const seenKeys: { namespace: string; name: string }[] = [];

const realmController = defineController({
  name: 'realm',
  primary: realms,
  spec: z.object({ namespace: z.string(), greeting: z.string() }),
  owns: [configmaps],
  reconcile({ key, object, spec }) {
    seenKeys.push(key);
    return {
      children: [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `realm-${object.metadata.name}`, namespace: spec.namespace },
          data: { greeting: spec.greeting },
        },
      ],
    };
  },
});

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `realms.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Cluster',
    names: { kind: 'Realm', listKind: 'RealmList', plural: 'realms', singular: 'realm' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: { namespace: { type: 'string' }, greeting: { type: 'string' } },
              },
              status: {
                type: 'object',
                properties: {
                  observedGeneration: { type: 'integer' },
                  conditions: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: Object.fromEntries(
                        ['type', 'status', 'reason', 'message', 'lastTransitionTime'].map((k) => [
                          k,
                          { type: 'string' },
                        ]),
                      ),
                    },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};

describe('a cluster-scoped primary end to end (in-process)', () => {
  let cluster: TestCluster;
  let running: InProcess;
  let ns: string;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  const name = `r-${uniqueSuffix()}`;
  const plural = { group: GROUP, version: 'v1', plural: 'realms' };

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    await cluster.createCrd(crd, plural);
    ns = await cluster.createNamespace('realm');
    running = await startInProcess({
      kubeConfig: cluster.kubeConfig,
      controllers: [realmController],
      workers: 2,
      port: 0,
      host: '127.0.0.1',
      logger: createLogger('relay', { write: () => {} }),
      reconcileLogger: createLogger('functions', { write: () => {} }),
    });
    await running.relay.whenReady();
  });
  after(async () => {
    await running?.stop();
    await custom?.deleteClusterCustomObject({ ...plural, name }).catch(() => undefined);
    await cluster?.stop();
  });

  it('reconciles by a key without namespace and creates the namespaced child with a controller reference', async () => {
    await custom.createClusterCustomObject({
      ...plural,
      body: {
        apiVersion: `${GROUP}/v1`,
        kind: 'Realm',
        metadata: { name },
        spec: { namespace: ns, greeting: 'hi' },
      },
    });
    const child = await waitFor(
      () => core.readNamespacedConfigMap({ namespace: ns, name: `realm-${name}` }).catch(() => undefined),
      { message: 'the Realm child' },
    );
    const realm = await custom.getClusterCustomObject({ ...plural, name });
    assert.ok(isControlledBy(child, realm as { metadata: { uid: string } }));
    assert.deepEqual(seenKeys.at(-1), { namespace: '', name });
    assert.ok(
      seenKeys.every((k) => k.namespace === ''),
      JSON.stringify(seenKeys),
    );
    // The same key as a message (the serverless mode's): valid, namespace "".
    assert.ok(
      keyMessageSchema.safeParse({
        v: 1,
        controller: 'realm',
        namespace: '',
        name,
        reason: 'watch',
        enqueuedAt: new Date().toISOString(),
      }).success,
    );
  });

  it("maps a namespaced child's change back to the cluster-scoped key, and restores it", async () => {
    const before = seenKeys.length;
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: `realm-${name}`, body: { data: { greeting: 'edited' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor(
      async () =>
        (await core.readNamespacedConfigMap({ namespace: ns, name: `realm-${name}` })).data?.greeting ===
        'hi',
      { message: 'the child restored by a reconcile of the Realm' },
    );
    assert.ok(seenKeys.length > before);
    assert.deepEqual(seenKeys.at(-1), { namespace: '', name });
  });

  it('the resync enumerates cluster-scoped keys', async () => {
    const before = seenKeys.length;
    assert.ok((await running.resync()) >= 1);
    await waitFor(() => seenKeys.length > before, { message: 'a reconcile from the resync' });
    assert.deepEqual(seenKeys.at(-1), { namespace: '', name });
  });
});

describe('a cluster-scoped primary end to end (serverless: relay → Pub/Sub emulator → reconcile)', () => {
  let cluster: TestCluster;
  let emulator: PubSubEmulator;
  let relay: Relay;
  let server: import('node:http').Server;
  let publisher: ReturnType<typeof createKeyPublisher>;
  let ns: string;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  const outcomes: { outcome: string; key: string }[] = [];
  const name = `s-${uniqueSuffix()}`;
  const plural = { group: GROUP, version: 'v1', plural: 'realms' };

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    await cluster.createCrd(crd, plural);
    ns = await cluster.createNamespace('realm-sls');
    ff.http(
      'reconcile-realm',
      createReconcileHandler({
        controllers: [realmController],
        kubeConfig: () => cluster.kubeConfig,
        logger: createLogger('functions', {
          write: (s: string) => {
            const line = JSON.parse(s);
            if (line.outcome)
              outcomes.push({ outcome: line.outcome, key: line['logging.googleapis.com/labels']?.key });
          },
        }),
      }),
    );
    server = getTestServer('reconcile-realm');
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    emulator = await startPubSubEmulator();
    await ensureKeysTopology({
      projectId: emulator.projectId,
      emulatorHost: emulator.host,
      topic: 'realm-keys',
      pushEndpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    });
    publisher = createKeyPublisher({
      projectId: emulator.projectId,
      topic: 'realm-keys',
      emulatorHost: emulator.host,
      logger: createLogger('relay', { write: () => {} }),
    });
    relay = await startRelay({
      kubeConfig: cluster.kubeConfig,
      publisher,
      controllers: [realmController],
      port: 0,
      host: '127.0.0.1',
      logger: createLogger('relay', { write: () => {} }),
    });
    await relay.whenReady();
  });
  after(async () => {
    await relay?.stop();
    await publisher?.close();
    await new Promise((resolve) => server?.close(resolve));
    await emulator?.stop();
    await custom?.deleteClusterCustomObject({ ...plural, name }).catch(() => undefined);
    await cluster?.stop();
  });

  it('a key without namespace crosses Pub/Sub and is reconciled', async () => {
    await custom.createClusterCustomObject({
      ...plural,
      body: {
        apiVersion: `${GROUP}/v1`,
        kind: 'Realm',
        metadata: { name },
        spec: { namespace: ns, greeting: 'hello' },
      },
    });
    const child = await waitFor(
      () => core.readNamespacedConfigMap({ namespace: ns, name: `realm-${name}` }).catch(() => undefined),
      { message: 'the Realm child, through Pub/Sub' },
    );
    assert.equal(child.data?.greeting, 'hello');
    await waitFor(() => outcomes.some((o) => o.key === name && o.outcome === 'success'), {
      message: 'a success outcome for the key "<name>" (no namespace)',
    });
  });
});
