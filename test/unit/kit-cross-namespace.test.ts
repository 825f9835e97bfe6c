import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../../core/k8s/custom-resource.ts';
import {
  compareChild,
  contentWrittenByKitAlone,
  mapToOwnerAnnotation,
  planCrossNamespaceChildren,
  updateBody,
} from '../../functions/kit/cross-namespace.ts';
import { deriveRbac } from '../../functions/kit/define.ts';
import {
  acrossNamespaces,
  type CrossNamespaceTracking,
  configmaps,
  customResource,
  defineController,
} from '../../functions/kit/index.ts';

const tracking: CrossNamespaceTracking = {
  labels: (owner) => ({ 'example.dev/owner': owner.name }),
  ownerAnnotation: 'example.dev/origin',
  immutableFields: ['type'],
};
const owner = { namespace: 'home', name: 'x' };
const child = (namespace: string, data: Record<string, string> = { k: 'v' }): KubernetesObject =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace }, data }) as KubernetesObject;
const live = (namespace: string, extra: Record<string, unknown> = {}): KubernetesObject =>
  ({
    ...child(namespace),
    metadata: {
      name: 'x',
      namespace,
      uid: `uid-${namespace}`,
      resourceVersion: '5',
      labels: { 'example.dev/owner': 'x' },
      annotations: { 'example.dev/origin': 'home/x', others: 'kept' },
    },
    ...extra,
  }) as KubernetesObject;

describe('children in other namespaces: the diff', () => {
  test('missing → create (marked), converged → unchanged, not owned → conflict, owned and undesired → delete', () => {
    const foreign = { ...child('c'), metadata: { name: 'x', namespace: 'c' } } as KubernetesObject;
    const plan = planCrossNamespaceChildren({
      owner,
      tracking,
      desired: [child('a'), child('b'), child('c')],
      observed: [live('b'), foreign, live('d')],
    });
    assert.deepEqual(
      plan.create.map((c) => [c.metadata?.namespace, c.metadata?.annotations?.['example.dev/origin']]),
      [['a', 'home/x']],
    );
    assert.deepEqual(plan.unchanged, ['b']);
    assert.deepEqual(plan.conflicts, [{ namespace: 'c', name: 'x' }]);
    assert.deepEqual(
      plan.delete.map((o) => o.metadata?.namespace),
      ['d'],
    );
  });

  test('a retained namespace is neither pruned nor written', () => {
    const plan = planCrossNamespaceChildren({
      owner,
      tracking,
      desired: [],
      observed: [live('d')],
      retainNamespaces: ['d'],
    });
    assert.deepEqual(plan.delete, []);
  });

  test('empty and absent members are equal; an immutable field, or any member of an immutable object, recreates', () => {
    assert.equal(compareChild(live('a', { data: undefined }), child('a', {}), tracking), 'update');
    const marked = planCrossNamespaceChildren({ owner, tracking, desired: [child('a', {})], observed: [] })
      .create[0];
    assert.ok(marked);
    assert.equal(compareChild(live('a', { data: undefined }), marked, tracking), 'unchanged');
    assert.equal(
      compareChild(live('a', { type: 'old' }), { ...marked, type: 'new' } as KubernetesObject, tracking),
      'recreate',
    );
    assert.equal(
      compareChild(live('a', { immutable: true, data: { k: 'w' } }), marked, tracking),
      'recreate',
    );
  });
});

describe('children in other namespaces: who wrote the content (managedFields)', () => {
  const entry = (manager: string, fieldsV1: object) => ({ manager, operation: 'Update', fieldsV1 });
  const withFields = (...managedFields: object[]) =>
    ({ ...live('a'), metadata: { ...live('a').metadata, managedFields } }) as KubernetesObject;

  test("the content is the kit's alone only when its entry owns some and no other manager's owns any", () => {
    const kit = entry(FIELD_MANAGER, { 'f:data': { 'f:k': {} }, 'f:metadata': {} });
    assert.equal(contentWrittenByKitAlone(withFields(kit)), true);
    assert.equal(contentWrittenByKitAlone(withFields(kit, entry('kubectl', { 'f:metadata': {} }))), true);
    assert.equal(contentWrittenByKitAlone(withFields(kit, entry('kubectl', { 'f:data': {} }))), false);
    assert.equal(contentWrittenByKitAlone(withFields(entry(FIELD_MANAGER, { 'f:metadata': {} }))), false);
    assert.equal(contentWrittenByKitAlone(withFields()), false, 'cleared managedFields say nothing');
    assert.equal(contentWrittenByKitAlone(live('a')), false);
  });

  test("an update leaves managedFields to the server, but gives an object without any the kit's entry", () => {
    const tracked = withFields(entry('kubectl', { 'f:data': {} }));
    assert.equal(updateBody(tracked, child('a', { k: 'w' })).metadata?.managedFields, undefined);
    assert.deepEqual(updateBody(withFields(), child('a', { k: 'w' })).metadata?.managedFields, [
      {
        manager: FIELD_MANAGER,
        operation: 'Update',
        apiVersion: 'v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': {} },
      },
    ]);
  });
});

describe('children in other namespaces: declaration', () => {
  test('the owner annotation maps a child to its owner', () => {
    const map = mapToOwnerAnnotation(tracking);
    const event = (value?: string) => ({
      type: 'MODIFIED' as const,
      object: {
        metadata: {
          name: 'x',
          namespace: 'a',
          annotations: (value ? { 'example.dev/origin': value } : {}) as Record<string, string>,
        },
      },
    });
    assert.deepEqual(map(event('home/x'), { primaryKeys: () => [] }), [owner]);
    for (const bad of [undefined, 'nokey', '/x', 'home/'])
      assert.deepEqual(map(event(bad), { primaryKeys: () => [] }), []);
  });

  test('RBAC: update instead of patch on types owned in other namespaces; no status rule for a primary without one', () => {
    const rules = deriveRbac(configmaps, [acrossNamespaces(configmaps, tracking)], []);
    assert.deepEqual(rules.slice(0, 1), [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
    ]);
    assert.ok(!rules.some((r) => r.resources.includes('configmaps/status')));
    const custom = customResource({ group: 'example.dev', version: 'v1', kind: 'Thing' });
    assert.ok(deriveRbac(custom, [], []).some((r) => r.resources.includes('things/status')));
  });

  test('a pinned primary watches its namespace (read at each use) and maps events of others to nothing', () => {
    let namespace = 'first';
    const controller = defineController({
      name: 'pinned',
      primary: configmaps,
      namespace: () => namespace,
      reconcile: () => ({}),
    });
    const watch = controller.watches[0];
    assert.equal(watch?.namespace, 'first');
    namespace = 'second';
    assert.equal(watch?.namespace, 'second');
    const event = (ns: string) => ({
      type: 'ADDED' as const,
      object: { metadata: { name: 'c', namespace: ns } },
    });
    assert.deepEqual(watch?.map(event('second'), { primaryKeys: () => [] }), [
      { namespace: 'second', name: 'c' },
    ]);
    assert.deepEqual(watch?.map(event('first'), { primaryKeys: () => [] }), []);
  });
});
