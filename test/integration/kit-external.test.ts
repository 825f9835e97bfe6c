/**
 * The kit's external resources (functions/kit/external.ts) against an API server (the local one, or
 * TEST_KUBECONFIG's cluster), with an external client over a Map defined here: `observe` answers a
 * missing resource `{ exists: false }`, which the kit creates, while a NOT_FOUND thrown by `observe`
 * is an error (retried), not "missing"; a change `mustRecreate` declares is a delete then a create,
 * never an update; a call past its kind's deadline ends with its signal aborted. The type-level
 * checks at the end are compiled by `tsc -p tsconfig.json`: a misspelt status field is a type error.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import * as z from 'zod';
import { defineExternalResource, type ExternalClient, type Labels } from '../../functions/kit/external.ts';
import { GRPC } from '../../functions/kit/google-cloud.ts';
import { customResource, findCondition, parseConditions } from '../../functions/kit/index.ts';
import {
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
} from '../../functions/kit/testing.ts';

const GROUP = 'kit-external.levelset.dev';
const widgets = customResource({ group: GROUP, version: 'v1', kind: 'Widget' });
const plural = { group: GROUP, version: 'v1', plural: 'widgets' };

/** The "cloud": each thing's size (immutable) and colour, and its labels; every call the client got. */
type Thing = { size: number; colour: string; labels: Labels };
const cloud = new Map<string, Thing>();
const calls: string[] = [];
let observeFails: Error | undefined;
let stall = false;
const signals: AbortSignal[] = [];

const things: ExternalClient<Omit<Thing, 'labels'>, Thing> = {
  service: 'things.example.com',
  async observe(name, signal) {
    calls.push('observe');
    signals.push(signal);
    if (stall) return new Promise(() => {});
    if (observeFails) throw observeFails;
    const thing = cloud.get(name);
    return thing ? { exists: true, observed: thing, labels: thing.labels } : { exists: false };
  },
  isUpToDate: (d, live) => d.size === live.size && d.colour === live.colour,
  mustRecreate: (_name, d, live) => d.size !== live.size,
  async create(name, d, labels) {
    calls.push('create');
    cloud.set(name, { ...d, labels });
  },
  async update(name, d, labels) {
    calls.push('update');
    cloud.set(name, { ...d, labels });
  },
  async setLabels(name, labels, live) {
    calls.push('setLabels');
    cloud.set(name, { ...live, labels });
  },
  async delete(name) {
    calls.push('delete');
    cloud.delete(name);
  },
};

const statusSchema = z.object({ thing: z.string().optional() });
const widgetController = defineExternalResource({
  name: 'kit-external',
  primary: widgets,
  spec: z.object({ size: z.number(), colour: z.string() }),
  status: statusSchema,
  kinds: { thing: { client: things, deadlineMs: 200 } },
  desired: ({ object, spec }) => ({
    thing: [{ name: `things/${object.metadata.name}`, desired: { size: spec.size, colour: spec.colour } }],
  }),
});

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `widgets.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { kind: 'Widget', listKind: 'WidgetList', plural: 'widgets', singular: 'widget' },
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
                properties: { size: { type: 'integer' }, colour: { type: 'string' } },
              },
              status: {
                type: 'object',
                properties: {
                  thing: { type: 'string' },
                  observedGeneration: { type: 'integer' },
                  conditions: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: {
                        ...Object.fromEntries(
                          ['type', 'status', 'reason', 'message', 'lastTransitionTime'].map((k) => [
                            k,
                            { type: 'string' },
                          ]),
                        ),
                        observedGeneration: { type: 'integer' },
                      },
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

describe('external resources: observe, recreate, deadline', () => {
  let cluster: TestCluster;
  let custom: CustomObjectsApi;
  let t: ReconcilerForTest;
  let ns: string;
  const create = (name: string, spec: object) =>
    custom.createNamespacedCustomObject({
      ...plural,
      namespace: ns,
      body: { apiVersion: `${GROUP}/v1`, kind: 'Widget', metadata: { name }, spec },
    });
  const get = async (name: string) =>
    (await custom.getNamespacedCustomObject({ ...plural, namespace: ns, name })) as KubernetesObject & {
      status?: { thing?: string; conditions?: unknown };
    };

  before(async () => {
    process.env.LEVELSET_CLOUD_PROJECT = 'kit-external'; // the kit's Google Cloud configuration (no call made)
    cluster = await startTestCluster();
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    ns = await cluster.createNamespace('kit-ext');
    await cluster.createCrd(crd, plural, ns);
    t = reconcilerForTest(widgetController, cluster.kubeconfigPath);
  });
  after(async () => {
    observeFails = undefined;
    stall = false;
    try {
      if (t) await t.deleteAll(ns);
    } finally {
      await cluster?.stop();
    }
  });
  beforeEach(() => {
    calls.length = 0;
  });

  it('observe answers a missing resource { exists: false }, and the kit creates it', async () => {
    assert.deepEqual(await things.observe('things/a', AbortSignal.timeout(1000)), { exists: false });
    calls.length = 0;
    await create('a', { size: 1, colour: 'red' });
    const run = await t.reconcile({ namespace: ns, name: 'a' });
    assert.equal(run.error, undefined, run.error?.message);
    assert.deepEqual(calls, ['observe', 'create']);
    const object = await get('a');
    assert.equal(cloud.get('things/a')?.labels['levelset-owner-uid'], object.metadata?.uid);
    assert.equal(object.status?.thing, 'things/a');
    assert.equal(findCondition(parseConditions(object.status?.conditions), 'Ready')?.status, 'True');
  });

  it('a NOT_FOUND thrown by observe is an error, retried; nothing is created on it', async () => {
    await create('b', { size: 1, colour: 'red' });
    observeFails = Object.assign(new Error('5 NOT_FOUND: thrown'), { code: GRPC.NOT_FOUND });
    try {
      await assert.rejects(t.reconcile({ namespace: ns, name: 'b' }), /NOT_FOUND: thrown/);
    } finally {
      observeFails = undefined;
    }
    assert.deepEqual(calls, ['observe']);
    assert.equal(cloud.has('things/b'), false);
  });

  it('a change mustRecreate declares is a delete then a create; another change an update', async () => {
    await custom.patchNamespacedCustomObject({
      ...plural,
      namespace: ns,
      name: 'a',
      body: [{ op: 'replace', path: '/spec/colour', value: 'blue' }],
    });
    assert.equal((await t.reconcile({ namespace: ns, name: 'a' })).error, undefined);
    assert.deepEqual(calls, ['observe', 'update']);
    calls.length = 0;
    await custom.patchNamespacedCustomObject({
      ...plural,
      namespace: ns,
      name: 'a',
      body: [{ op: 'replace', path: '/spec/size', value: 2 }],
    });
    assert.equal((await t.reconcile({ namespace: ns, name: 'a' })).error, undefined);
    assert.deepEqual(calls, ['observe', 'delete', 'create']);
    assert.deepEqual(cloud.get('things/a')?.size, 2);
  });

  it("a call past its kind's deadline ends with its signal aborted", async () => {
    stall = true;
    signals.length = 0;
    try {
      await assert.rejects(
        t.reconcile({ namespace: ns, name: 'a' }),
        /observe things\/a: no answer within 200 ms/,
      );
    } finally {
      stall = false;
    }
    assert.equal(signals.at(-1)?.aborted, true);
  });
});

/** Type-level checks, compiled by `tsc -p tsconfig.json` (never called). */
export function typeChecks(): void {
  const base = {
    name: 'types',
    primary: widgets,
    spec: z.object({ size: z.number() }),
    status: statusSchema,
  };
  const want = { size: 1, colour: 'red' };
  defineExternalResource({
    ...base,
    // @ts-expect-error a kind must be a status field (`thing`)
    kinds: { thinG: { client: things } },
    desired: () => ({}),
  });
  defineExternalResource({
    ...base,
    kinds: { thing: { client: things } },
    // @ts-expect-error `desired` returns only the kinds' fields
    desired: () => ({ things: [{ name: 'things/a', desired: want }] }),
  });
  defineExternalResource({
    ...base,
    kinds: { thing: { client: things } },
    // @ts-expect-error a resource is of its kind's Desired
    desired: () => ({ thing: [{ name: 'things/a', desired: { size: '1' } }] }),
  });
}
