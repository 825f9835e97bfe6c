/**
 * The kit against an API server (the local one, or TEST_KUBECONFIG's cluster), with a small
 * controller defined here: a Widget owns `spec.count` ConfigMaps holding `spec.value`. Asserts what
 * the kit promises: children created with a controller reference, updated when they differ, pruned
 * when no longer desired, never taken from someone else; status written only when it changed; an
 * invalid spec is a condition, not a retry; and the exact API requests of each path.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import * as z from 'zod';
import { CONTROLLER_LABEL, CREATED_SHAPE_ANNOTATION, OWNER_LABEL } from '../../functions/kit/children.ts';
import {
  configmaps,
  customResource,
  defineController,
  FIELD_MANAGER,
  findCondition,
  isControlledBy,
  parseConditions,
} from '../../functions/kit/index.ts';
import {
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
} from '../../functions/kit/testing.ts';
import { waitFor } from '../support/wait.ts';

const GROUP = 'kit-test.levelset.dev';
const widgets = customResource({ group: GROUP, version: 'v1', kind: 'Widget' });
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const widgetController = defineController({
  name: 'kit-test',
  primary: widgets,
  // Stricter than the CRD (which allows any count): what a zod schema adds.
  spec: z.object({ count: z.number().int().max(5), value: z.string(), extra: z.string().optional() }),
  owns: [configmaps],
  reconcile({ object, spec, owned }) {
    const have = owned(configmaps).length;
    return {
      children: Array.from({ length: spec.count }, (_, i) => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `${object.metadata.name}-${i}` },
        data: { value: spec.value, ...(spec.extra !== undefined ? { extra: spec.extra } : {}) },
      })),
      // `extra` leaves the status when it leaves the spec: null removes it (a merge patch).
      status: { value: spec.value, extra: spec.extra ?? null },
      ready: { status: have === spec.count, reason: 'Counted', message: `${have} of ${spec.count}` },
    };
  },
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
                properties: {
                  count: { type: 'integer' },
                  value: { type: 'string' },
                  extra: { type: 'string' },
                },
              },
              status: {
                type: 'object',
                properties: {
                  value: { type: 'string' },
                  extra: { type: 'string' },
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

// biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
type Json = any;

describe('kit: children, status, invalid specs, request counts', () => {
  let cluster: TestCluster;
  let ns: string;
  let t: ReconcilerForTest;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  const plural = { group: GROUP, version: 'v1', plural: 'widgets' };
  const getWidget = (name: string): Promise<Json> =>
    custom.getNamespacedCustomObject({ ...plural, namespace: ns, name });
  const createWidget = (name: string, spec: object) =>
    custom.createNamespacedCustomObject({
      ...plural,
      namespace: ns,
      body: { apiVersion: `${GROUP}/v1`, kind: 'Widget', metadata: { name }, spec },
    });
  const patchSpec = (name: string, spec: object) =>
    custom.patchNamespacedCustomObject({ ...plural, namespace: ns, name, body: { spec } }, mergePatch);
  const reconcile = (name: string) => t.reconcile({ namespace: ns, name });
  const methods = (requests: string[]) => requests.map((r) => r.split(' ')[0]);
  // Without the CA bundles a real cluster publishes into every namespace (kube-controller-manager's
  // root-ca-cert-publisher: kube-root-ca.crt; OpenShift's service CA: openshift-service-ca.crt).
  const configMaps = async () =>
    (await core.listNamespacedConfigMap({ namespace: ns })).items.filter(
      (c) => !c.metadata?.name?.endsWith('ca.crt'),
    );
  const ready = (w: Json) => findCondition(parseConditions(w.status?.conditions), 'Ready');

  before(async () => {
    cluster = await startTestCluster();
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    ns = await cluster.createNamespace('kit');
    await cluster.createCrd(crd, plural, ns);
    t = reconcilerForTest(widgetController, cluster.kubeconfigPath);
  });
  after(() => cluster?.stop());

  it('creates the children with a controller reference and the kit labels: GET, LIST, a POST each, status, Event', async () => {
    await createWidget('w', { count: 2, value: 'a' });
    const run = await reconcile('w');
    assert.equal(run.error, undefined);
    assert.deepEqual(
      methods(run.requests),
      ['GET', 'GET', 'POST', 'POST', 'PATCH', 'POST'],
      run.requests.join(', '),
    );
    const widget = await getWidget('w');
    const children = await configMaps();
    assert.deepEqual(children.map((c) => c.metadata?.name).sort(), ['w-0', 'w-1']);
    for (const c of children) {
      assert.ok(isControlledBy(c, widget), `${c.metadata?.name} controlled by the Widget`);
      const mine = (c.metadata?.managedFields ?? []).filter((m) => m.manager === FIELD_MANAGER);
      assert.deepEqual(
        mine.map((m) => m.operation),
        ['Update'],
        "the create's entry, upgraded before the first apply in another shape (an Update entry is never pruned)",
      );
      assert.ok(c.metadata?.annotations?.[CREATED_SHAPE_ANNOTATION], 'with the shape it was created from');
      assert.equal(c.metadata?.labels?.[CONTROLLER_LABEL], 'kit-test');
      assert.equal(c.metadata?.labels?.[OWNER_LABEL], widget.metadata.uid);
      assert.deepEqual(c.data, { value: 'a' });
    }
    assert.equal(widget.status.value, 'a');
    assert.equal(widget.status.observedGeneration, widget.metadata.generation);
    assert.equal(ready(widget)?.observedGeneration, widget.metadata.generation);
  });

  it('a converged object costs one GET and one LIST per owned type, and writes nothing', async () => {
    await reconcile('w'); // Ready becomes True now that both children are listed
    const before = await getWidget('w');
    assert.equal(ready(before)?.status, 'True');
    const run = await reconcile('w');
    assert.deepEqual(run.requests, [
      `GET /apis/${GROUP}/v1/namespaces/${ns}/widgets/w`,
      `GET /api/v1/namespaces/${ns}/configmaps`,
    ]);
    const afterwards = await getWidget('w');
    assert.equal(
      afterwards.metadata.resourceVersion,
      before.metadata.resourceVersion,
      'status not rewritten',
    );
    const listed = await t.ctx.kubeConfig.makeApiClient(CoreV1Api).listNamespacedConfigMap({
      namespace: ns,
      labelSelector: `${OWNER_LABEL}=${before.metadata.uid}`,
    });
    assert.equal(listed.items.length, 2, 'the children are found by label');
  });

  it('applies only the children that differ, and restores a hand edit', async () => {
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: 'w-1', body: { data: { value: 'edited by hand' } } },
      mergePatch,
    );
    const run = await reconcile('w');
    // The Synced Event repeats the first one: aggregated (count + 1), a PATCH.
    assert.deepEqual(methods(run.requests), ['GET', 'GET', 'PATCH', 'PATCH'], run.requests.join(', '));
    assert.deepEqual((await core.readNamespacedConfigMap({ namespace: ns, name: 'w-1' })).data, {
      value: 'a',
    });

    await patchSpec('w', { value: 'b' });
    const changed = await reconcile('w');
    assert.deepEqual(methods(changed.requests), ['GET', 'GET', 'PATCH', 'PATCH', 'PATCH', 'PATCH']);
    for (const c of await configMaps()) assert.deepEqual(c.data, { value: 'b' });
  });

  it('removes a field the reconcile stops setting from the child (server-side apply) and a status field it sets to null, then writes nothing again', async () => {
    await patchSpec('w', { extra: 'x' });
    await reconcile('w');
    for (const c of await configMaps()) assert.deepEqual(c.data, { value: 'b', extra: 'x' });
    assert.equal((await getWidget('w')).status.extra, 'x');
    await patchSpec('w', { extra: null });
    const dropped = await reconcile('w');
    assert.deepEqual(methods(dropped.requests), ['GET', 'GET', 'PATCH', 'PATCH', 'PATCH', 'PATCH']);
    for (const c of await configMaps()) assert.deepEqual(c.data, { value: 'b' }, 'extra is gone');
    assert.equal('extra' in (await getWidget('w')).status, false, 'status.extra is cleared by its null');
    const again = await reconcile('w');
    assert.deepEqual(methods(again.requests), ['GET', 'GET'], 'converged: no write');
  });

  it('a child an older kit created (an Update entry of levelset) is folded into applied fields once, then its dropped fields go', async () => {
    await createWidget('legacy', { count: 1, value: 'v', extra: 'e' });
    const widget = await getWidget('legacy');
    // What the kit did before: a POST with fieldManager=levelset, nothing else.
    await core.createNamespacedConfigMap({
      namespace: ns,
      fieldManager: FIELD_MANAGER,
      body: {
        metadata: {
          name: 'legacy-0',
          labels: { [CONTROLLER_LABEL]: 'kit-test', [OWNER_LABEL]: widget.metadata.uid },
          ownerReferences: [
            {
              apiVersion: `${GROUP}/v1`,
              kind: 'Widget',
              name: 'legacy',
              uid: widget.metadata.uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        data: { value: 'v', extra: 'e' },
      },
    });
    const upgraded = await reconcile('legacy');
    assert.deepEqual(
      upgraded.requests.filter((r) => r.includes('/configmaps/legacy-0')).map((r) => r.split(' ')[0]),
      ['PATCH', 'PATCH'],
      'the managedFields patch, then the apply',
    );
    const child = await core.readNamespacedConfigMap({ namespace: ns, name: 'legacy-0' });
    assert.deepEqual(
      child.metadata?.managedFields?.filter((m) => m.manager === FIELD_MANAGER).map((m) => m.operation),
      ['Apply'],
    );
    assert.deepEqual(methods((await reconcile('legacy')).requests), ['GET', 'GET'], 'converged');
    await patchSpec('legacy', { extra: null });
    await reconcile('legacy');
    assert.deepEqual((await core.readNamespacedConfigMap({ namespace: ns, name: 'legacy-0' })).data, {
      value: 'v',
    });
  });

  it('a managedFields patch from a stale read answers 409 Conflict (nothing overwritten)', async () => {
    const child = await core.readNamespacedConfigMap({ namespace: ns, name: 'legacy-0' });
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: 'legacy-0', body: { metadata: { annotations: { touched: 'yes' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const stale = [
      { op: 'replace', path: '/metadata/managedFields', value: [{}] },
      { op: 'replace', path: '/metadata/resourceVersion', value: child.metadata?.resourceVersion },
    ];
    await assert.rejects(
      core.patchNamespacedConfigMap(
        { namespace: ns, name: 'legacy-0', body: stale },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      ),
      (err: { code?: number }) => err.code === 409,
    );
    await custom.deleteNamespacedCustomObject({ ...plural, namespace: ns, name: 'legacy' });
    await waitFor(
      () =>
        core.readNamespacedConfigMap({ namespace: ns, name: 'legacy-0' }).then(
          () => false,
          () => true,
        ),
      // kube-controller-manager's garbage collector watches a CRD's resource only once its
      // discovery resync has seen it (every 30 s), so a just-created kind's dependents can wait that long.
      { message: 'garbage collection of legacy-0', timeoutMs: 90_000 },
    );
  });

  it('leaves a field another manager set alone when the reconcile does not set it', async () => {
    await core.patchNamespacedConfigMap(
      { namespace: ns, name: 'w-0', body: { data: { theirs: 'kept' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const run = await reconcile('w');
    assert.deepEqual(methods(run.requests), ['GET', 'GET'], 'not ours: no apply');
    assert.deepEqual((await core.readNamespacedConfigMap({ namespace: ns, name: 'w-0' })).data, {
      value: 'b',
      theirs: 'kept',
    });
  });

  it('prunes the children no longer desired (DELETE with a UID precondition), and only those', async () => {
    await patchSpec('w', { count: 1 });
    const run = await reconcile('w');
    assert.equal(run.requests.filter((r) => r.startsWith('DELETE ')).length, 1, run.requests.join(', '));
    assert.deepEqual(
      (await configMaps()).map((c) => c.metadata?.name),
      ['w-0'],
    );
  });

  it('never takes an object it does not control: ErrResourceExists, Ready=False, a Warning Event, nothing written to it', async () => {
    const theirs = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'taken-0' }, data: { owner: 'someone else' } },
    });
    await createWidget('taken', { count: 1, value: 'mine' });
    const run = await reconcile('taken');
    assert.equal(run.error?.reason, 'ErrResourceExists');
    assert.equal(run.error?.message, 'Resource "taken-0" already exists and is not managed by Widget');
    const still = await core.readNamespacedConfigMap({ namespace: ns, name: 'taken-0' });
    assert.equal(still.metadata?.resourceVersion, theirs.metadata?.resourceVersion, 'not modified');
    const widget = await getWidget('taken');
    assert.equal(ready(widget)?.status, 'False');
    assert.equal(ready(widget)?.reason, 'ErrResourceExists');
    assert.equal(widget.status.value, undefined, 'the status fields are left alone on failure');
    const events = await core.listNamespacedEvent({ namespace: ns });
    assert.ok(
      events.items.some(
        (e) => e.involvedObject.name === 'taken' && e.type === 'Warning' && e.reason === 'ErrResourceExists',
      ),
      'a Warning Event on the Widget',
    );
  });

  it('does not prune an object carrying its labels but controlled by another owner', async () => {
    const widget = await getWidget('w');
    const other = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'other-owner' } },
    });
    const body: V1ConfigMap = {
      metadata: {
        name: 'w-9',
        labels: { [CONTROLLER_LABEL]: 'kit-test', [OWNER_LABEL]: widget.metadata.uid },
        ownerReferences: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: 'other-owner',
            uid: other.metadata?.uid ?? '',
            controller: true,
          },
        ],
      },
      data: { value: 'theirs' },
    };
    await core.createNamespacedConfigMap({ namespace: ns, body });
    const run = await reconcile('w');
    assert.equal(run.error, undefined);
    assert.equal(run.requests.filter((r) => r.startsWith('DELETE ')).length, 0, 'not pruned');
    assert.deepEqual((await core.readNamespacedConfigMap({ namespace: ns, name: 'w-9' })).data, {
      value: 'theirs',
    });
  });

  it('an invalid spec is Ready=False/InvalidSpec and a terminal error, with nothing listed or created', async () => {
    await patchSpec('w', { count: 10 }); // valid for the CRD, not for the zod schema
    const run = await reconcile('w');
    assert.equal(run.error?.reason, 'InvalidSpec');
    assert.match(run.error?.message ?? '', /spec\.count/);
    assert.deepEqual(methods(run.requests), ['GET', 'PATCH', 'POST'], 'GET, status, Warning Event');
    const widget = await getWidget('w');
    assert.equal(ready(widget)?.reason, 'InvalidSpec');
    assert.equal(ready(widget)?.observedGeneration, widget.metadata.generation);
  });

  it("a child another writer changed after its create stays converged, and the upgrade before an apply in another shape keeps the writer's entry", async () => {
    // What kube-controller-manager's Deployment controller does to a new Deployment: it writes it
    // right after the create, under a manager of its own.
    await createWidget('race', { count: 1, value: 'r' });
    assert.equal((await reconcile('race')).error, undefined);
    await core.patchNamespacedConfigMap(
      {
        namespace: ns,
        name: 'race-0',
        body: { metadata: { labels: { 'raced-by': 'other' } } },
        fieldManager: 'other',
      },
      mergePatch,
    );
    const converged = await reconcile('race');
    assert.deepEqual(
      methods(converged.requests.filter((r) => r.includes('/configmaps'))),
      ['GET'],
      `the LIST alone: ${converged.requests.join(', ')}`,
    );
    await patchSpec('race', { extra: 'x' });
    const reshaped = await reconcile('race');
    assert.deepEqual(
      methods(reshaped.requests.filter((r) => r.includes('/configmaps'))),
      ['GET', 'PATCH', 'PATCH'],
      `LIST, the managedFields upgrade, the apply: ${reshaped.requests.join(', ')}`,
    );
    const child = await core.readNamespacedConfigMap({ namespace: ns, name: 'race-0' });
    const entries = (child.metadata?.managedFields ?? []).map((m) => `${m.manager}/${m.operation}`);
    assert.ok(entries.includes(`${FIELD_MANAGER}/Apply`), entries.join(', '));
    assert.ok(!entries.includes(`${FIELD_MANAGER}/Update`), entries.join(', '));
    assert.ok(entries.includes('other/Update'), `the other writer's entry is kept: ${entries.join(', ')}`);
    assert.equal(child.metadata?.labels?.['raced-by'], 'other');
    assert.equal(
      child.metadata?.annotations?.[CREATED_SHAPE_ANNOTATION],
      undefined,
      'the apply in another shape removed it',
    );
    assert.deepEqual(child.data, { value: 'r', extra: 'x' });
  });

  it('a deleted object costs one GET', async () => {
    await custom.deleteNamespacedCustomObject({ ...plural, namespace: ns, name: 'taken' });
    const run = await reconcile('taken');
    assert.deepEqual(methods(run.requests), ['GET']);
  });
});
