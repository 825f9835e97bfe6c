/**
 * The kit's reads and metadata patch against an API server (the local one, or TEST_KUBECONFIG's
 * cluster): a reconcile GETs and LISTs ConfigMaps in another namespace than its primary's and
 * annotates one it does not own, each call checked against the controller's RBAC before any request.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { pino } from 'pino';
import * as z from 'zod';
import {
  configmaps,
  customResource,
  defineController,
  resourceClient,
  secrets,
} from '../../functions/kit/index.ts';
import {
  CountingKubeConfig,
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
} from '../../functions/kit/testing.ts';

const GROUP = 'kit-reads.levelset.dev';
const readers = customResource({ group: GROUP, version: 'v1', kind: 'Reader' });

const readerController = defineController({
  name: 'kit-reads',
  primary: readers,
  spec: z.object({ namespace: z.string(), name: z.string(), secret: z.boolean().optional() }),
  // Watched: `list` derived; `get` and `patch` declared.
  watches: [configmaps],
  rbac: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'patch'] }],
  async reconcile({ object, spec, get, list, patchMetadata }) {
    if (spec.secret) await get(secrets, spec.name, { namespace: spec.namespace });
    const source = await get(configmaps, spec.name, { namespace: spec.namespace });
    const labelled = await list(configmaps, { namespace: spec.namespace, labelSelector: 'team=a' });
    const everywhere = await list(configmaps, { allNamespaces: true, labelSelector: 'team=a' });
    if (source)
      await patchMetadata(
        configmaps,
        spec.name,
        { annotations: { 'kit-reads.levelset.dev/read-by': object.metadata.name } },
        { namespace: spec.namespace, resourceVersion: source.metadata?.resourceVersion ?? '' },
      );
    return {
      status: { found: source !== undefined, labelled: labelled.length, everywhere: everywhere.length },
    };
  },
});

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `readers.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { kind: 'Reader', listKind: 'ReaderList', plural: 'readers', singular: 'reader' },
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
                properties: {
                  namespace: { type: 'string' },
                  name: { type: 'string' },
                  secret: { type: 'boolean' },
                },
              },
              status: {
                type: 'object',
                properties: {
                  found: { type: 'boolean' },
                  labelled: { type: 'integer' },
                  everywhere: { type: 'integer' },
                  observedGeneration: { type: 'integer' },
                  conditions: {
                    type: 'array',
                    items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
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

describe('kit: reads in other namespaces and a metadata patch, checked against the RBAC', () => {
  let cluster: TestCluster;
  let ns: string;
  let other: string;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let t: ReconcilerForTest;
  const plural = { group: GROUP, version: 'v1', plural: 'readers' };
  const createReader = (name: string, spec: object) =>
    custom.createNamespacedCustomObject({
      ...plural,
      namespace: ns,
      body: { apiVersion: `${GROUP}/v1`, kind: 'Reader', metadata: { name }, spec },
    });

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    ns = await cluster.createNamespace('kit-reads');
    other = await cluster.createNamespace('kit-reads-other');
    await cluster.createCrd(crd, plural, ns);
    for (const [name, labels] of [
      ['source', { team: 'a', kept: 'yes' }],
      ['peer', { team: 'a' }],
    ] as const)
      await core.createNamespacedConfigMap({
        namespace: other,
        body: { metadata: { name, labels, annotations: { theirs: 'x' } }, data: { k: 'v' } },
      });
    t = reconcilerForTest(readerController, cluster.kubeconfigPath, { query: true });
  });
  after(() => cluster?.stop());

  it('GETs and LISTs in another namespace and across namespaces, and annotates a ConfigMap it does not own', async () => {
    await createReader('r', { namespace: other, name: 'source' });
    const run = await t.reconcile({ namespace: ns, name: 'r' });
    assert.equal(run.error, undefined);
    const paths = run.requests.map((r) => r.split('?')[0]);
    assert.ok(paths.includes(`GET /api/v1/namespaces/${other}/configmaps/source`), run.requests.join('\n'));
    assert.ok(paths.includes(`GET /api/v1/namespaces/${other}/configmaps`));
    assert.ok(paths.includes('GET /api/v1/configmaps'), 'all namespaces');
    assert.ok(paths.includes(`PATCH /api/v1/namespaces/${other}/configmaps/source`));
    const source = await core.readNamespacedConfigMap({ namespace: other, name: 'source' });
    assert.deepEqual(source.metadata?.annotations, {
      theirs: 'x',
      'kit-reads.levelset.dev/read-by': 'r',
    });
    assert.deepEqual(source.metadata?.labels, { team: 'a', kept: 'yes' }, 'labels untouched');
    assert.deepEqual(source.data, { k: 'v' }, 'data untouched');
    const reader = (await custom.getNamespacedCustomObject({ ...plural, namespace: ns, name: 'r' })) as {
      status: { found: boolean; labelled: number; everywhere: number };
    };
    assert.equal(reader.status.found, true);
    assert.equal(reader.status.labelled, 2);
    assert.ok(reader.status.everywhere >= 2);
  });

  it("reads the primary not older than the version its key's publisher saw, and fails while the server has not reached it", async () => {
    await createReader('versioned', { namespace: other, name: 'source' });
    const reader = (await custom.getNamespacedCustomObject({
      ...plural,
      namespace: ns,
      name: 'versioned',
    })) as {
      metadata: { resourceVersion: string };
    };
    const { resourceVersion } = reader.metadata;
    const kubeConfig = new CountingKubeConfig({ query: true });
    kubeConfig.loadFromFile(cluster.kubeconfigPath);
    const { createEventRecorder } = await import('../../core/k8s/events.ts');
    const log = pino({ level: 'silent' });
    const ctx = {
      cluster: 'default',
      kubeConfig,
      log,
      events: createEventRecorder(kubeConfig, readerController.name, log),
      primaryResourceVersion: resourceVersion,
    };
    const key = { namespace: ns, name: 'versioned' };
    await readerController.reconcile(key, ctx);
    const path = `/apis/${GROUP}/v1/namespaces/${ns}/readers/versioned`;
    assert.ok(
      kubeConfig.requests.includes(`GET ${path}?resourceVersion=${resourceVersion}`),
      kubeConfig.requests.join('\n'),
    );
    const status = (await custom.getNamespacedCustomObject({
      ...plural,
      namespace: ns,
      name: 'versioned',
    })) as {
      status?: { found?: boolean };
    };
    assert.equal(status.status?.found, true, 'reconciled from that read');
    // A version beyond the server's: kube-apiserver's watch cache waits for it (3 s), then answers
    // 504 ResourceVersionTooLarge, a transient error the key is retried for, never a stale answer.
    const ahead = String(BigInt(resourceVersion) + 1_000_000_000n);
    await assert.rejects(
      readerController.reconcile(key, { ...ctx, primaryResourceVersion: ahead }),
      (err: unknown) => {
        assert.equal((err as { code?: number }).code, 504, String(err));
        assert.match(
          String((err as { body?: unknown }).body),
          /ResourceVersionTooLarge|Too large resource version/,
        );
        return true;
      },
    );
  });

  it('a GET of an absent object is undefined, not an error', async () => {
    await createReader('absent', { namespace: other, name: 'nothing-here' });
    const run = await t.reconcile({ namespace: ns, name: 'absent' });
    assert.equal(run.error, undefined);
    assert.ok(!run.requests.some((r) => r.startsWith('PATCH ') && r.includes('/configmaps/')));
  });

  it('an API error says its status once: HTTP-Code, the request, the body', async () => {
    const client = resourceClient(cluster.kubeConfig);
    const err = await client.get(configmaps, other, 'nothing-here').then(
      () => assert.fail('a GET of an absent object throws'),
      (e: unknown) => e as Error,
    );
    assert.equal(err.message.match(/HTTP-Code/g)?.length, 1, err.message);
    assert.match(
      err.message,
      new RegExp(`^HTTP-Code: 404\nMessage: GET /api/v1/namespaces/${other}/configmaps/nothing-here\n`),
    );
  });

  it('a read the RBAC does not grant throws before any request is made', async () => {
    await createReader('secret', { namespace: other, name: 'source', secret: true });
    await assert.rejects(
      t.reconcile({ namespace: ns, name: 'secret' }),
      /^Error: kit-reads: get secrets is not in its RBAC \(declare the type in owns or watches, or add an rbac rule\)$/,
    );
    assert.ok(!t.kubeConfig.requests.some((r) => r.includes('/secrets')), 'no request for a Secret');
  });

  it('patchMetadata refuses anything but labels and annotations', async () => {
    const client = reconcilerForTest(readerController, cluster.kubeconfigPath);
    const { readsFor } = await import('../../functions/kit/reads.ts');
    const { resourceClient } = await import('../../functions/kit/client.ts');
    const reads = readsFor('kit-reads', readerController.rbac, resourceClient(client.kubeConfig), other);
    await assert.rejects(
      reads.patchMetadata(configmaps, 'source', { finalizers: ['x'] } as never),
      /patchMetadata sets labels and annotations only, not finalizers/,
    );
    assert.deepEqual(client.kubeConfig.requests, []);
  });
});
