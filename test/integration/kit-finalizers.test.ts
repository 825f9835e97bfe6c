/**
 * The kit's finalizers against an API server (the local one, or TEST_KUBECONFIG's cluster), with a
 * small controller defined here: a Gizmo "holds" an external thing (a Set in the test) while it
 * exists. Asserts what the kit promises: the finalizer is on the object before the first reconcile
 * runs; a delete calls `finalize` instead of `reconcile` until done, then removes only the kit's
 * finalizer; a requeue and a TerminalError keep it; the patches cannot overwrite a concurrent
 * change; a namespace deleted with Gizmos inside finishes; a controller without `finalize` sees
 * `deleting`.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import * as z from 'zod';
import { addFinalizer, finalizerName, removeFinalizer } from '../../functions/kit/finalizers.ts';
import {
  configmaps,
  customResource,
  defineController,
  findCondition,
  parseConditions,
  TerminalError,
} from '../../functions/kit/index.ts';
import {
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
} from '../../functions/kit/testing.ts';
import type { FinalizeResult } from '../../functions/kit/types.ts';
import { waitFor } from '../support/wait.ts';

const GROUP = 'kit-finalizers.levelset.dev';
const gizmos = customResource({ group: GROUP, version: 'v1', kind: 'Gizmo' });
const FINALIZER = finalizerName('kit-finalizers');
const OTHER = 'example.com/other-party';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The "external" world: what each Gizmo holds, and what the next finalize should do. */
const held = new Set<string>();
const seenByReconcile: { finalizers: string[] }[] = [];
let nextFinalize: () => FinalizeResult = () => undefined;
let finalizeCalls = 0;

const gizmoController = defineController({
  name: 'kit-finalizers',
  primary: gizmos,
  spec: z.object({ value: z.string() }),
  async reconcile({ key, kubeConfig }) {
    // What the API server holds when the reconcile runs (not the object as first read).
    const live = await KubernetesObjectApi.makeApiClient(kubeConfig).read({
      apiVersion: `${GROUP}/v1`,
      kind: 'Gizmo',
      metadata: { namespace: key.namespace, name: key.name },
    });
    seenByReconcile.push({ finalizers: live.metadata?.finalizers ?? [] });
    held.add(`${key.namespace}/${key.name}`);
    return {};
  },
  finalize({ key }) {
    finalizeCalls += 1;
    const result = nextFinalize();
    if (!result) held.delete(`${key.namespace}/${key.name}`);
    return result;
  },
});

/** A controller without `finalize`: it only reports what it saw. */
const deletingSeen: boolean[] = [];
const watcherController = defineController({
  name: 'kit-no-finalize',
  primary: gizmos,
  spec: z.object({ value: z.string() }),
  owns: [configmaps],
  reconcile({ object, deleting }) {
    deletingSeen.push(deleting);
    return {
      children: [
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${object.metadata.name}-c` }, data: {} },
      ],
    };
  },
});

/**
 * A controller whose Gizmos are held by the ConfigMaps that name them (`data.gizmo`), and whose
 * `finalize` counts: references that hold (functions/kit/references.ts).
 */
let referencedFinalizeCalls = 0;
const referencedController = defineController({
  name: 'kit-references',
  primary: gizmos,
  spec: z.object({ value: z.string() }),
  referencedBy: [
    {
      resource: configmaps,
      references: (cm) => {
        const gizmo = (cm as { data?: { gizmo?: string } }).data?.gizmo;
        return gizmo ? [`${cm.metadata?.namespace}/${gizmo}`] : [];
      },
    },
  ],
  reconcile: () => ({}),
  finalize() {
    referencedFinalizeCalls += 1;
    return undefined;
  },
});

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `gizmos.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { kind: 'Gizmo', listKind: 'GizmoList', plural: 'gizmos', singular: 'gizmo' },
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
              spec: { type: 'object', properties: { value: { type: 'string' } } },
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

// biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
type Json = any;

describe('kit: finalizers', () => {
  let cluster: TestCluster;
  let ns: string;
  let t: ReconcilerForTest;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  const plural = { group: GROUP, version: 'v1', plural: 'gizmos' };
  const get = (name: string, namespace = ns): Promise<Json> =>
    custom.getNamespacedCustomObject({ ...plural, namespace, name });
  const create = (name: string, finalizers?: string[], namespace = ns) =>
    custom.createNamespacedCustomObject({
      ...plural,
      namespace,
      body: {
        apiVersion: `${GROUP}/v1`,
        kind: 'Gizmo',
        metadata: { name, ...(finalizers ? { finalizers } : {}) },
        spec: { value: 'v' },
      },
    });
  const remove = (name: string, namespace = ns) =>
    custom.deleteNamespacedCustomObject({ ...plural, namespace, name });
  const gone = (name: string, namespace = ns) =>
    get(name, namespace).then(
      () => false,
      (err: unknown) => err instanceof ApiException && err.code === 404,
    );
  const methods = (requests: string[]) => requests.map((r) => r.split(' ')[0]);

  before(async () => {
    cluster = await startTestCluster();
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    ns = await cluster.createNamespace('kit-fin');
    await cluster.createCrd(crd, plural, ns);
    t = reconcilerForTest(gizmoController, cluster.kubeconfigPath);
  });
  after(async () => {
    // What the tests left carries finalizers that no controller removes once this file ends (on a
    // real cluster its namespaces would stay Terminating): this file's Gizmos are its own to clear.
    if (custom) {
      const { items } = (await custom.listClusterCustomObject(plural)) as { items: KubernetesObject[] };
      for (const { metadata } of items)
        await custom.patchNamespacedCustomObject(
          {
            ...plural,
            namespace: metadata?.namespace ?? '',
            name: metadata?.name ?? '',
            body: { metadata: { finalizers: null } },
          },
          mergePatch,
        );
    }
    await cluster?.stop();
  });
  beforeEach(() => {
    nextFinalize = () => undefined;
    finalizeCalls = 0;
  });

  it('adds its finalizer before the reconcile runs, once: GET, PATCH, then the reconcile', async () => {
    await create('a');
    seenByReconcile.length = 0;
    const first = await t.reconcile({ namespace: ns, name: 'a' });
    assert.equal(first.error, undefined, first.error?.message);
    assert.deepEqual(methods(first.requests).slice(0, 3), ['GET', 'PATCH', 'GET'], first.requests.join(', '));
    assert.deepEqual(
      seenByReconcile,
      [{ finalizers: [FINALIZER] }],
      'the reconcile ran with the finalizer on',
    );
    const again = await t.reconcile({ namespace: ns, name: 'a' });
    assert.ok(
      !again.requests.includes(`PATCH /apis/${GROUP}/v1/namespaces/${ns}/gizmos/a`),
      again.requests.join(', '),
    );
    assert.deepEqual((await get('a')).metadata.finalizers, [FINALIZER], 'added once');
  });

  it('gives it RBAC to patch the primary', () => {
    const rule = gizmoController.rbac.find((r) => r.resources.includes('gizmos'));
    assert.ok(rule?.verbs.includes('patch'), JSON.stringify(gizmoController.rbac));
  });

  it('on delete calls finalize instead of reconcile, removes only its own finalizer, and the object goes', async () => {
    await create('b', [OTHER]);
    await t.reconcile({ namespace: ns, name: 'b' });
    assert.deepEqual((await get('b')).metadata.finalizers, [OTHER, FINALIZER]);
    assert.ok(held.has(`${ns}/b`));
    await remove('b');
    seenByReconcile.length = 0;
    const run = await t.reconcile({ namespace: ns, name: 'b' });
    assert.equal(run.error, undefined, run.error?.message);
    assert.equal(finalizeCalls, 1);
    assert.deepEqual(seenByReconcile, [], 'reconcile did not run');
    assert.ok(!held.has(`${ns}/b`), 'released');
    const left = await get('b');
    assert.deepEqual(left.metadata.finalizers, [OTHER], "the other party's finalizer stays");
    assert.ok(left.metadata.deletionTimestamp);
    const again = await t.reconcile({ namespace: ns, name: 'b' });
    assert.equal(finalizeCalls, 1, 'not finalized twice once its finalizer is gone');
    assert.deepEqual(methods(again.requests), ['GET']);
    await custom.patchNamespacedCustomObject(
      { ...plural, namespace: ns, name: 'b', body: { metadata: { finalizers: null } } },
      mergePatch,
    );
    await waitFor(() => gone('b'), { message: 'Gizmo b gone' });
  });

  it('keeps the finalizer while finalize asks for a requeue', async () => {
    await create('c');
    await t.reconcile({ namespace: ns, name: 'c' });
    await remove('c');
    nextFinalize = () => ({ requeueAfterMs: 5000 });
    const run = await t.reconcile({ namespace: ns, name: 'c' });
    assert.deepEqual(run.result, { requeueAfterMs: 5000 });
    assert.deepEqual((await get('c')).metadata.finalizers, [FINALIZER]);
    nextFinalize = () => undefined;
    await t.reconcile({ namespace: ns, name: 'c' });
    await waitFor(() => gone('c'), { message: 'Gizmo c gone once finalize is done' });
    assert.equal(finalizeCalls, 2);
  });

  it('keeps the finalizer on a TerminalError: Ready=False and a Warning Event', async () => {
    await create('d');
    await t.reconcile({ namespace: ns, name: 'd' });
    await remove('d');
    nextFinalize = () => {
      throw new TerminalError('PermissionDenied', 'cannot delete the external thing');
    };
    const run = await t.reconcile({ namespace: ns, name: 'd' });
    assert.equal(run.error?.reason, 'PermissionDenied');
    const d = await get('d');
    assert.deepEqual(d.metadata.finalizers, [FINALIZER], 'nothing leaked silently');
    const ready = findCondition(parseConditions(d.status?.conditions), 'Ready');
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, 'PermissionDenied');
    const events = await core.listNamespacedEvent({ namespace: ns });
    assert.ok(
      events.items.some(
        (e) => e.involvedObject.name === 'd' && e.type === 'Warning' && e.reason === 'PermissionDenied',
      ),
    );
    nextFinalize = () => undefined;
    await t.reconcile({ namespace: ns, name: 'd' });
    await waitFor(() => gone('d'), { message: 'Gizmo d gone after a successful finalize' });
  });

  it('finalizes an object already being deleted before the controller ever saw it', async () => {
    await create('e', [FINALIZER]); // as left behind by an earlier deployment, say
    await remove('e');
    const run = await t.reconcile({ namespace: ns, name: 'e' });
    assert.equal(run.error, undefined);
    assert.equal(finalizeCalls, 1);
    await waitFor(() => gone('e'), { message: 'Gizmo e gone' });
  });

  it("removeFinalizer never drops another party's finalizer: a moved index fails its test (409)", async () => {
    await create('f', [OTHER, FINALIZER]);
    const stale = (await get('f')) as KubernetesObject;
    // Another party removes its finalizer meanwhile: ours moves from index 1 to 0.
    await custom.patchNamespacedCustomObject(
      { ...plural, namespace: ns, name: 'f', body: { metadata: { finalizers: [FINALIZER] } } },
      mergePatch,
    );
    await assert.rejects(
      removeFinalizer(t.kubeConfig, gizmos, stale, FINALIZER),
      (err: unknown) => err instanceof ApiException && err.code === 409,
    );
    assert.deepEqual((await get('f')).metadata.finalizers, [FINALIZER]);
    assert.equal(await removeFinalizer(t.kubeConfig, gizmos, await get('f'), FINALIZER), true);
    assert.deepEqual((await get('f')).metadata.finalizers ?? [], []);
  });

  it('addFinalizer does not overwrite a concurrent change of the finalizers (409)', async () => {
    await create('g', [OTHER]);
    const stale = (await get('g')) as KubernetesObject;
    await custom.patchNamespacedCustomObject(
      {
        ...plural,
        namespace: ns,
        name: 'g',
        body: { metadata: { finalizers: [OTHER, 'example.com/third'] } },
      },
      mergePatch,
    );
    await assert.rejects(
      addFinalizer(t.kubeConfig, gizmos, stale, FINALIZER),
      (err: unknown) => err instanceof ApiException && err.code === 409,
    );
    assert.deepEqual((await get('g')).metadata.finalizers, [OTHER, 'example.com/third']);
    await addFinalizer(t.kubeConfig, gizmos, await get('g'), FINALIZER);
    assert.deepEqual((await get('g')).metadata.finalizers, [OTHER, 'example.com/third', FINALIZER]);
    await custom.patchNamespacedCustomObject(
      { ...plural, namespace: ns, name: 'g', body: { metadata: { finalizers: null } } },
      mergePatch,
    );
  });

  it('a namespace deleted with objects inside finishes once each is finalized', async () => {
    const doomed = await cluster.createNamespace('kit-fin-doomed');
    await waitFor(
      () => custom.listNamespacedCustomObject({ ...plural, namespace: doomed }).then(() => true),
      { message: 'Gizmos served in the new namespace' },
    );
    await create('h', undefined, doomed);
    await t.reconcile({ namespace: doomed, name: 'h' });
    await core.deleteNamespace({ name: doomed });
    await waitFor(async () => Boolean((await get('h', doomed)).metadata.deletionTimestamp), {
      message: 'the namespace deletion reaches Gizmo h',
    });
    assert.equal((await core.readNamespace({ name: doomed })).status?.phase, 'Terminating');
    await t.reconcile({ namespace: doomed, name: 'h' });
    assert.ok(!held.has(`${doomed}/h`));
    await waitFor(
      () =>
        core.readNamespace({ name: doomed }).then(
          () => false,
          (err: unknown) => err instanceof ApiException && err.code === 404,
        ),
      { message: `namespace ${doomed} gone`, timeoutMs: 60_000 },
    );
  });

  it('holds the delete of an object another references: StillReferenced naming the referrers, then completes once they go', async () => {
    const r = reconcilerForTest(referencedController, cluster.kubeconfigPath);
    const held = finalizerName('kit-references');
    const configMap = (name: string, gizmo: string) =>
      core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name }, data: { gizmo } } });
    await create('j');
    await r.reconcile({ namespace: ns, name: 'j' });
    assert.deepEqual(
      (await get('j')).metadata.finalizers,
      [held],
      'referencedBy alone puts the finalizer on',
    );
    await configMap('uses-j', 'j');
    await configMap('uses-other', 'not-j');
    await remove('j');
    referencedFinalizeCalls = 0;
    const waiting = await r.reconcile({ namespace: ns, name: 'j' });
    assert.equal(waiting.error, undefined, waiting.error?.message);
    const after = waiting.result?.requeueAfterMs ?? 0;
    assert.ok(after >= 1_000 && after <= 300_000, `looks again later: ${after} ms`);
    assert.equal(referencedFinalizeCalls, 0, 'finalize is not called while referenced');
    const j = await get('j');
    assert.deepEqual(j.metadata.finalizers, [held], 'the delete waits');
    const ready = findCondition(parseConditions(j.status?.conditions), 'Ready');
    assert.equal(ready?.reason, 'StillReferenced');
    assert.match(ready?.message ?? '', new RegExp(`ConfigMap ${ns}/uses-j`));
    assert.doesNotMatch(ready?.message ?? '', /uses-other/, 'a referrer of another object does not hold it');
    const events = await core.listNamespacedEvent({ namespace: ns });
    assert.ok(
      events.items.some(
        (e) => e.involvedObject.name === 'j' && e.type === 'Warning' && e.reason === 'DeletionBlocked',
      ),
    );
    await core.deleteNamespacedConfigMap({ namespace: ns, name: 'uses-j' });
    await waitFor(
      () =>
        core.readNamespacedConfigMap({ namespace: ns, name: 'uses-j' }).then(
          () => false,
          () => true,
        ),
      { message: 'ConfigMap uses-j gone' },
    );
    const done = await r.reconcile({ namespace: ns, name: 'j' });
    assert.equal(done.error, undefined, done.error?.message);
    assert.equal(referencedFinalizeCalls, 1, 'finalize runs once nothing references it');
    await waitFor(() => gone('j'), { message: 'Gizmo j gone once its last referrer went' });
    assert.deepEqual(
      referencedController.rbac.find((rule) => rule.resources.includes('configmaps'))?.verbs,
      ['list'],
      'RBAC to list the referrers',
    );
  });

  it('without finalize, the reconcile sees deleting and no child is written', async () => {
    const w = reconcilerForTest(watcherController, cluster.kubeconfigPath);
    await create('i', [OTHER]);
    await remove('i');
    deletingSeen.length = 0;
    const run = await w.reconcile({ namespace: ns, name: 'i' });
    assert.equal(run.error, undefined, run.error?.message);
    assert.deepEqual(deletingSeen, [true]);
    assert.ok(!run.requests.includes(`POST /api/v1/namespaces/${ns}/configmaps`), run.requests.join(', '));
    await custom.patchNamespacedCustomObject(
      { ...plural, namespace: ns, name: 'i', body: { metadata: { finalizers: null } } },
      mergePatch,
    );
  });
});
