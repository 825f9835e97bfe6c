/**
 * A cluster-scoped primary end to end in the in-process pipeline (informers → workqueue → the kit's
 * reconcile) against an API server (the local one, or TEST_KUBECONFIG's cluster): a cluster-scoped
 * `Realm` owns a ConfigMap in the namespace its spec names. Its key has no namespace all the way
 * through: the primary's watch, the key (and its message), the resync's enumeration, the reconcile,
 * and a namespaced child's event mapped back through its controller reference.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { z } from 'zod';
import { configmaps, customResource, defineController, isControlledBy } from '../../functions/kit/index.ts';
import { createLogger } from '../../functions/log.ts';
import { keyMessageSchema } from '../../functions/message.ts';
import { type InProcess, startInProcess } from '../../relay/in-process.ts';
import { startTestCluster, type TestCluster, uniqueSuffix } from '../support/cluster.ts';
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
    await KubernetesObjectApi.makeApiClient(cluster.kubeConfig)
      .create(crd)
      .catch((err: { code?: number }) => {
        if (err.code !== 409) throw err;
      });
    await waitFor(() => custom.listClusterCustomObject(plural).then(() => true), {
      message: 'Realms served',
    });
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
