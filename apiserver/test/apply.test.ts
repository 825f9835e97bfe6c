/**
 * The structured-merge-diff rules of the local API server's server-side apply (apiserver/apply.ts),
 * table-driven from the examples of the Kubernetes documentation's "Server-Side Apply" page (field
 * management, conflicts, merge strategy, transferring ownership) and structured-merge-diff's own rules.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  apply,
  compare,
  decodeManagedFields,
  emptyObject,
  encodeManagedFields,
  type FieldManagerContext,
  FieldSet,
  fromOpenApi,
  isResetManagedFields,
  LAST_APPLIED,
  MAX_UPDATE_MANAGERS,
  type Manager,
  managerFromUserAgent,
  merge,
  pathString,
  recordUpdate,
  resetFields,
  schemaOf,
  syncLastApplied,
  toFieldSet,
} from '../apply.ts';
import { ApiError } from '../status.ts';

// biome-ignore lint/suspicious/noExplicitAny: wire JSON under test
type Obj = Record<string, any>;

const configMapType = { group: '', kind: 'ConfigMap', apiVersion: 'v1', custom: false };
const deploymentType = { group: 'apps', kind: 'Deployment', apiVersion: 'apps/v1', custom: false };

function ctx(t: typeof configMapType, statusSubresource = false, subresource?: string): FieldManagerContext {
  return {
    schema: schemaOf(t),
    apiVersion: t.apiVersion,
    ignored: resetFields({}, statusSubresource, subresource),
    subresource,
  };
}

function entries(managers: Map<string, Manager>): Obj[] {
  return (encodeManagedFields(managers) ?? []).map(({ time: _t, ...e }) => e);
}

function configMap(data: Obj, labels?: Obj): Obj {
  const metadata: Obj = { name: 'test-cm', namespace: 'default' };
  if (labels) metadata.labels = labels;
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata, data };
}

function deployment(spec: Obj): Obj {
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'nginx-deployment' }, spec };
}

/** Applies a sequence of writes; returns the final object and managers. */
function run(
  t: typeof configMapType,
  steps: ({ apply: Obj; manager: string; force?: boolean } | { update: (o: Obj) => Obj; manager: string })[],
) {
  const c = ctx(t, t.kind === 'Deployment');
  let live: Obj = emptyObject(t);
  let managers = new Map<string, Manager>();
  for (const step of steps) {
    if ('apply' in step) {
      const r = apply(live, step.apply, managers, step.manager, step.force ?? false, c);
      live = r.object;
      managers = r.managers;
    } else {
      const next = step.update(structuredClone(live));
      recordUpdate(live, next, managers, step.manager, c);
      live = next;
    }
  }
  return { live, managers };
}

describe('field sets (fieldsV1)', () => {
  test('the documentation example: an applied ConfigMap owns its label and data key', () => {
    const set = toFieldSet(
      configMap({ key: 'some value' }, { 'test-label': 'test' }),
      schemaOf(configMapType),
    );
    const strip = FieldSet.fromFieldsV1({
      'f:apiVersion': {},
      'f:kind': {},
      'f:metadata': { 'f:name': {}, 'f:namespace': {} },
    });
    assert.deepEqual(set.difference(strip).toFieldsV1(), {
      'f:data': { 'f:key': {} },
      'f:metadata': { 'f:labels': { 'f:test-label': {} } },
    });
  });

  test('round trip keeps `.` first and orders f: < k: < v: < i:', () => {
    const wire = {
      'f:a': {},
      'f:b': { '.': {}, 'k:{"name":"x"}': { '.': {}, 'f:name': {} }, 'v:"s"': {} },
      'i:0': {},
    };
    const set = FieldSet.fromFieldsV1({
      'i:0': {},
      'f:b': { 'v:"s"': {}, 'k:{"name":"x"}': { 'f:name': {}, '.': {} }, '.': {} },
      'f:a': {},
    });
    assert.equal(JSON.stringify(set.toFieldsV1()), JSON.stringify(wire));
  });

  test('path strings as fieldpath.Path.String()', () => {
    const cases: [string[], string][] = [
      [['f:spec', 'f:replicas'], '.spec.replicas'],
      [['f:spec', 'f:containers', 'k:{"name":"c"}', 'f:image'], '.spec.containers[name="c"].image'],
      [['f:ports', 'k:{"containerPort":80,"protocol":"TCP"}'], '.ports[containerPort=80,protocol="TCP"]'],
      [['f:metadata', 'f:finalizers', 'v:"x"'], '.metadata.finalizers[="x"]'],
    ];
    for (const [path, want] of cases) assert.equal(pathString(path), want);
  });

  test('set algebra: difference is not recursive, recursiveDifference is', () => {
    const a = FieldSet.fromFieldsV1({ 'f:spec': { '.': {}, 'f:x': {} } });
    const b = FieldSet.fromFieldsV1({ 'f:spec': {} });
    assert.deepEqual(a.difference(b).toFieldsV1(), { 'f:spec': { 'f:x': {} } });
    assert.deepEqual(a.recursiveDifference(b).toFieldsV1(), {});
    assert.deepEqual(a.intersection(b).toFieldsV1(), { 'f:spec': {} });
  });
});

describe('merge strategy (the documentation table)', () => {
  const widgetSchema = fromOpenApi({
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        properties: {
          atomicList: { type: 'array', items: { type: 'string' } },
          setList: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
          mapList: {
            type: 'array',
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-list-map-keys': ['name'],
            items: { type: 'object', properties: { name: { type: 'string' }, v: { type: 'string' } } },
          },
          granular: { type: 'object', additionalProperties: { type: 'string' } },
          atomicMap: {
            type: 'object',
            'x-kubernetes-map-type': 'atomic',
            additionalProperties: { type: 'string' },
          },
        },
      },
    },
  });
  const cases: { name: string; live: Obj; config: Obj; want: Obj }[] = [
    {
      name: 'atomic list: replaced',
      live: { atomicList: ['a', 'b'] },
      config: { atomicList: ['c'] },
      want: { atomicList: ['c'] },
    },
    {
      name: 'set: union (shared items in the applied order, others kept in place)',
      live: { setList: ['a', 'b'] },
      config: { setList: ['c', 'a'] },
      want: { setList: ['c', 'a', 'b'] },
    },
    {
      name: 'map list: merged by key',
      live: {
        mapList: [
          { name: 'a', v: '1' },
          { name: 'b', v: '2' },
        ],
      },
      config: { mapList: [{ name: 'b', v: '3' }, { name: 'c' }] },
      want: { mapList: [{ name: 'a', v: '1' }, { name: 'b', v: '3' }, { name: 'c' }] },
    },
    {
      name: 'granular map: merged by key',
      live: { granular: { a: '1' } },
      config: { granular: { b: '2' } },
      want: { granular: { a: '1', b: '2' } },
    },
    {
      name: 'atomic map: replaced',
      live: { atomicMap: { a: '1' } },
      config: { atomicMap: { b: '2' } },
      want: { atomicMap: { b: '2' } },
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      assert.deepEqual(merge({ spec: c.live }, { spec: c.config }, widgetSchema), { spec: c.want });
    });
  }

  test('built-in keys: containers by name, ports by containerPort+protocol (protocol defaults to TCP)', () => {
    const schema = schemaOf(deploymentType);
    const set = toFieldSet(
      deployment({
        template: {
          spec: { containers: [{ name: 'nginx', image: 'nginx', ports: [{ containerPort: 80 }] }] },
        },
      }),
      schema,
    );
    assert.deepEqual(set.toFieldsV1()['f:spec'], {
      'f:template': {
        'f:spec': {
          'f:containers': {
            'k:{"name":"nginx"}': {
              '.': {},
              'f:image': {},
              'f:name': {},
              'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } },
            },
          },
        },
      },
    });
  });

  test('an item without its key is refused', () => {
    assert.throws(
      () =>
        toFieldSet(
          deployment({ template: { spec: { containers: [{ image: 'x' }] } } }),
          schemaOf(deploymentType),
        ),
      /omits key field "name"/,
    );
  });

  test('compare reports added maps with `.`, modified leaves, removed fields', () => {
    const c = compare(
      { data: { a: '1', b: '2' } },
      { data: { a: '9' }, binaryData: { x: 'eA==' } },
      schemaOf(configMapType),
    );
    assert.deepEqual(c.added.toFieldsV1(), { 'f:binaryData': { '.': {}, 'f:x': {} } });
    assert.deepEqual(c.modified.toFieldsV1(), { 'f:data': { 'f:a': {} } });
    assert.deepEqual(c.removed.toFieldsV1(), { 'f:data': { 'f:b': {} } });
  });
});

describe('managers, conflicts and ownership', () => {
  test('apply records an Apply entry; create records an Update entry with `.` on maps it adds', () => {
    const applied = run(configMapType, [{ apply: configMap({ key: 'v' }), manager: 'kubectl' }]);
    assert.deepEqual(entries(applied.managers), [
      {
        manager: 'kubectl',
        operation: 'Apply',
        apiVersion: 'v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:key': {} } },
      },
    ]);
    const created = run(configMapType, [
      { update: (o) => ({ ...o, data: { key: 'v' } }), manager: 'kubectl-create' },
    ]);
    assert.deepEqual(entries(created.managers), [
      {
        manager: 'kubectl-create',
        operation: 'Update',
        apiVersion: 'v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { '.': {}, 'f:key': {} } },
      },
    ]);
  });

  test('conflict: another manager owns a field with a different value (409, as kube-apiserver words it)', () => {
    const { live, managers } = run(deploymentType, [
      { apply: deployment({ replicas: 3 }), manager: 'kubectl' },
      { update: (o) => ({ ...o, spec: { ...o.spec, replicas: 5 } }), manager: 'kube-controller-manager' },
    ]);
    assert.deepEqual(
      entries(managers).map((e) => [e.manager, e.fieldsV1]),
      [
        ['kubectl', {}],
        ['kube-controller-manager', { 'f:spec': { 'f:replicas': {} } }],
      ].filter(([, f]) => Object.keys(f as Obj).length > 0),
    );
    let err: unknown;
    try {
      apply(live, deployment({ replicas: 3 }), managers, 'kubectl', false, ctx(deploymentType, true));
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof ApiError);
    assert.equal(err.code, 409);
    assert.deepEqual(err.status, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'Apply failed with 1 conflict: conflict with "kube-controller-manager" using apps/v1: .spec.replicas',
      reason: 'Conflict',
      details: {
        causes: [
          {
            reason: 'FieldManagerConflict',
            message: 'conflict with "kube-controller-manager" using apps/v1',
            field: '.spec.replicas',
          },
        ],
      },
      code: 409,
    });
  });

  test('several conflicts are grouped by manager', () => {
    const { live, managers } = run(configMapType, [{ apply: configMap({ a: '1', b: '1' }), manager: 'one' }]);
    assert.throws(
      () => apply(live, configMap({ a: '2', b: '2' }), managers, 'two', false, ctx(configMapType)),
      (e: ApiError) =>
        e.message === 'Apply failed with 2 conflicts: conflicts with "one":\n- .data.a\n- .data.b',
    );
  });

  test('the same value is shared ownership, not a conflict', () => {
    const { managers } = run(configMapType, [
      { apply: configMap({ a: '1' }), manager: 'one' },
      { apply: configMap({ a: '1' }), manager: 'two' },
    ]);
    // The second apply changed nothing: its entry has no time, so it sorts first.
    assert.deepEqual(
      entries(managers).map((e) => [e.manager, e.fieldsV1]),
      [
        ['two', { 'f:data': { 'f:a': {} } }],
        ['one', { 'f:data': { 'f:a': {} } }],
      ],
    );
    assert.equal(encodeManagedFields(managers)?.[0]?.time, undefined);
  });

  test('force takes the field from its other managers', () => {
    const { live, managers } = run(configMapType, [
      { apply: configMap({ a: '1', b: '1' }), manager: 'one' },
      { apply: configMap({ a: '2' }), manager: 'two', force: true },
    ]);
    assert.equal(live.data.a, '2');
    assert.deepEqual(
      entries(managers).map((e) => [e.manager, e.fieldsV1]),
      [
        ['one', { 'f:data': { 'f:b': {} } }],
        ['two', { 'f:data': { 'f:a': {} } }],
      ],
    );
  });

  test('a field its only applier stops applying is removed; one another manager owns stays', () => {
    const { live } = run(configMapType, [
      { apply: configMap({ a: '1', b: '1', c: '1' }), manager: 'one' },
      { apply: configMap({ c: '1' }), manager: 'two' },
      { update: (o) => ({ ...o, data: { ...o.data, b: '2' } }), manager: 'editor' },
      { apply: configMap({}), manager: 'one' },
    ]);
    assert.deepEqual(live.data, { b: '2', c: '1' });
  });

  test('list items by key: each applier keeps its own container; removing one removes only it', () => {
    const container = (name: string) => ({ name, image: `${name}:1` });
    const withContainers = (...c: Obj[]) =>
      deployment({ selector: { matchLabels: { a: 'b' } }, template: { spec: { containers: c } } });
    const { live, managers } = run(deploymentType, [
      { apply: withContainers(container('main')), manager: 'one' },
      { apply: withContainers(container('sidecar')), manager: 'two' },
    ]);
    assert.deepEqual(
      live.spec.template.spec.containers.map((c: Obj) => c.name),
      ['main', 'sidecar'],
    );
    const r = apply(live, deployment({}), managers, 'two', false, ctx(deploymentType, true));
    assert.deepEqual(
      (r.object as Obj).spec.template.spec.containers.map((c: Obj) => c.name),
      ['main'],
    );
  });

  test('transferring ownership of replicas (the documentation HPA handover)', () => {
    const full = deployment({ replicas: 3, selector: { matchLabels: { app: 'nginx' } } });
    const { live, managers } = run(deploymentType, [
      { apply: full, manager: 'kubectl' },
      { apply: deployment({ replicas: 3 }), manager: 'handover-to-hpa' },
      { apply: deployment({ selector: { matchLabels: { app: 'nginx' } } }), manager: 'kubectl' },
    ]);
    assert.equal(live.spec.replicas, 3, 'still owned by handover-to-hpa, so not removed');
    assert.deepEqual(entries(managers).find((e) => e.manager === 'handover-to-hpa')?.fieldsV1, {
      'f:spec': { 'f:replicas': {} },
    });
  });

  test('an Update takes the fields it changes from every other manager', () => {
    const { managers } = run(configMapType, [
      { apply: configMap({ a: '1', b: '1' }), manager: 'one' },
      { update: (o) => ({ ...o, data: { ...o.data, a: '2' } }), manager: 'editor' },
    ]);
    assert.deepEqual(
      entries(managers).map((e) => [e.manager, e.operation, e.fieldsV1]),
      [
        ['one', 'Apply', { 'f:data': { 'f:b': {} } }],
        ['editor', 'Update', { 'f:data': { 'f:a': {} } }],
      ],
    );
  });

  test('the status endpoint owns only status, recorded with its subresource', () => {
    const managers = new Map<string, Manager>();
    const live = deployment({ replicas: 1 });
    recordUpdate(
      live,
      { ...live, spec: { replicas: 9 }, status: { replicas: 1 } },
      managers,
      'ctl',
      ctx(deploymentType, true, 'status'),
    );
    assert.deepEqual(entries(managers), [
      {
        manager: 'ctl',
        operation: 'Update',
        apiVersion: 'apps/v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:status': { '.': {}, 'f:replicas': {} } },
        subresource: 'status',
      },
    ]);
  });

  test(`more than ${MAX_UPDATE_MANAGERS} Update managers: the oldest merge into ancient-changes`, () => {
    const managers = new Map<string, Manager>();
    let live: Obj = configMap({});
    for (let i = 0; i <= MAX_UPDATE_MANAGERS; i++) {
      const next = { ...live, data: { ...live.data, [`k${i}`]: 'v' } };
      recordUpdate(live, next, managers, `m${i}`, ctx(configMapType));
      live = next;
    }
    const names = entries(managers).map((e) => e.manager);
    assert.equal(names.length, MAX_UPDATE_MANAGERS);
    assert.ok(names.includes('ancient-changes'));
  });

  test('managedFields decode/encode; `[{}]` resets', () => {
    const wire = [
      {
        manager: 'a',
        operation: 'Apply',
        apiVersion: 'v1',
        time: '2026-01-01T00:00:00Z',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:x': {} } },
      },
    ];
    assert.deepEqual(encodeManagedFields(decodeManagedFields(wire) as Map<string, Manager>), wire);
    assert.equal(decodeManagedFields([{ manager: 'a' }]), undefined);
    assert.ok(isResetManagedFields([{}]));
    assert.ok(!isResetManagedFields([]));
  });

  test('kubectl upgrading from client-side apply takes the fields last-applied still matches', () => {
    const c = ctx(configMapType);
    const lastApplied = JSON.stringify(configMap({ a: '1' }));
    const live = {
      ...configMap({ a: '1', b: '1' }),
      metadata: { name: 'test-cm', annotations: { [LAST_APPLIED]: lastApplied } },
    };
    const managers = new Map<string, Manager>();
    recordUpdate(emptyObject(configMapType), live, managers, 'kubectl-client-side-apply', c);
    const r = apply(live, configMap({ a: '2' }), managers, 'kubectl', false, c);
    assert.equal((r.object as Obj).data.a, '2');
    assert.throws(
      () => apply(live, configMap({ b: '2' }), managers, 'kubectl', false, c),
      /conflict with "kubectl-client-side-apply" using v1: \.data\.b/,
    );
    assert.throws(() => apply(live, configMap({ a: '2' }), managers, 'other', false, c), /conflict/);
    const object: Obj = structuredClone(r.object);
    syncLastApplied(object, configMap({ a: '2' }), 'kubectl');
    assert.equal(
      object.metadata.annotations[LAST_APPLIED],
      '{"apiVersion":"v1","data":{"a":"2"},"kind":"ConfigMap","metadata":{"name":"test-cm","namespace":"default"}}\n',
    );
  });

  test('field manager from the User-Agent: the part before the first /', () => {
    assert.equal(managerFromUserAgent('kubectl/v1.32.0 (linux/amd64) kubernetes/abc'), 'kubectl');
    assert.equal(managerFromUserAgent('kubernetes-client-javascript/2.0.1'), 'kubernetes-client-javascript');
    assert.equal(managerFromUserAgent(''), '');
  });
});
