// The kit's pure parts: the no-op rule (desired ⊆ live), map functions through controller
// references (and the MapContext.get that feeds them, through the kit's keysFor), derived RBAC
// and watches, and the pure steps of defineController's reconcile (the steps that read and write
// run in test/integration/kit.test.ts). How the relay plans informers for and pipes events to a
// kit controller is the relay's own test (test/unit/relay-kit-controllers.test.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import * as z from 'zod';
import { functionsRules } from '../../cli/build/generate-manifests.ts';
import type { MapContext, PolicyRule, WatchEvent } from '../../core/contract/controller.ts';
import { isSubset } from '../../functions/kit/children.ts';
import {
  configmaps,
  customResource,
  defineController,
  deployments,
  mapThroughControllers,
  pods,
  replicasets,
} from '../../functions/kit/index.ts';
import { isReady } from '../../functions/kit/ready.ts';
import { recheckAfterMs } from '../../functions/kit/references.ts';
import {
  desiredConditions,
  nextStatus,
  READY,
  recordSynced,
  resultOf,
  validatePrimary,
} from '../../functions/kit/steps.ts';
import { keysFor } from '../../functions/kit/testing.ts';
import type { PrimaryObject } from '../../functions/kit/types.ts';
import { event, object, ref, widgets } from '../support/owner-chain.ts';

describe('isSubset: what the kit compares to skip an apply', () => {
  it('ignores what the server adds (defaults, status, metadata)', () => {
    const desired = {
      spec: { replicas: 2, template: { spec: { containers: [{ name: 'c', image: 'i' }] } } },
    };
    const live = {
      metadata: { resourceVersion: '7' },
      spec: {
        replicas: 2,
        strategy: { type: 'RollingUpdate' },
        template: { spec: { containers: [{ name: 'c', image: 'i', imagePullPolicy: 'Always' }] } },
      },
      status: { availableReplicas: 1 },
    };
    assert.equal(isSubset(desired, live), true);
  });

  it('sees a changed scalar, a missing member, a longer or shorter list', () => {
    assert.equal(isSubset({ spec: { replicas: 3 } }, { spec: { replicas: 2 } }), false);
    assert.equal(isSubset({ data: { a: '1' } }, { data: {} }), false);
    assert.equal(isSubset({ list: [1, 2] }, { list: [1] }), false);
    assert.equal(isSubset({ list: [1] }, { list: [1, 2] }), false);
    assert.equal(isSubset({ a: null }, {}), true);
    assert.equal(isSubset({ a: { b: 1 } }, { a: 'x' }), false);
  });

  it('takes an empty map or list for an absent one (Go omitempty: the API server answers none)', () => {
    assert.equal(isSubset({ data: {} }, {}), true);
    assert.equal(isSubset({ spec: { items: [] } }, { spec: {} }), true);
    assert.equal(isSubset({ data: {} }, { data: { a: '1' } }), true, 'a subset, as any map of fewer members');
    assert.equal(isSubset({ spec: { items: [] } }, { spec: { items: [1] } }), false, 'a shorter list');
    assert.equal(isSubset({ data: { a: '1' } }, {}), false);
  });
});

describe('mapThroughControllers', () => {
  const icecreamRef = ref('test.levelset.dev/v1', 'Widget', 'w', 'uid-w');
  const deployment = object('d', 'uid-d', icecreamRef);
  const rs = object('rs', 'uid-rs', ref('apps/v1', 'Deployment', 'd', 'uid-d'));
  const pod = object('p', 'uid-p', ref('apps/v1', 'ReplicaSet', 'rs', 'uid-rs'));
  const cache = new Map<string, KubernetesObject>([
    ['Deployment/ns/d', deployment],
    ['ReplicaSet/ns/rs', rs],
  ]);
  const ctx: MapContext = {
    primaryKeys: () => [],
    get: (r, k) => cache.get(`${r.kind}/${k.namespace}/${k.name}`),
  };
  const map = mapThroughControllers(widgets);

  it('maps a Pod to its Widget through its ReplicaSet and Deployment (3 hops)', () => {
    assert.deepEqual(map(event(pod), ctx), [{ namespace: 'ns', name: 'w' }]);
    assert.deepEqual(map(event(rs), ctx), [{ namespace: 'ns', name: 'w' }]);
    assert.deepEqual(map(event(deployment), ctx), [{ namespace: 'ns', name: 'w' }]);
  });

  it('maps to nothing: no controller, an uncached link, a UID mismatch, no cache at all, too many hops', () => {
    assert.deepEqual(map(event(object('lonely', 'u')), ctx), []);
    const orphan = object('p2', 'u2', ref('apps/v1', 'ReplicaSet', 'unknown', 'x'));
    assert.deepEqual(map(event(orphan), ctx), []);
    const stale = object('p3', 'u3', ref('apps/v1', 'ReplicaSet', 'rs', 'another-uid'));
    assert.deepEqual(map(event(stale), ctx), [], 'a re-created namesake is another object');
    assert.deepEqual(map(event(pod), { primaryKeys: () => [] }), []);
    assert.deepEqual(mapThroughControllers(widgets, 2)(event(pod), ctx), []);
  });

  it("maps a kit controller's Pod event through the cache MapContext.get reads (keysFor)", () => {
    const controller = defineController({
      name: 'widget',
      primary: widgets,
      spec: z.object({}),
      owns: [deployments],
      watches: [replicasets, pods],
      reconcile: () => ({}),
    });
    const asked: string[] = [];
    const get: MapContext['get'] = (r, k) => {
      asked.push(`${r.kind}/${k.name}`);
      return cache.get(`${r.kind}/${k.namespace}/${k.name}`);
    };
    const podEvent = event({ apiVersion: 'v1', kind: 'Pod', ...pod });
    assert.deepEqual(keysFor(controller, podEvent, { context: { get } }), [{ namespace: 'ns', name: 'w' }]);
    assert.deepEqual(asked, ['ReplicaSet/rs', 'Deployment/d']);
    assert.deepEqual(keysFor(controller, podEvent), [], 'an empty cache maps to nothing');
  });
});

describe('defineController', () => {
  const c = defineController({
    name: 'widget',
    primary: widgets,
    spec: z.object({}),
    owns: [deployments],
    watches: [{ resource: pods, labelSelector: 'app' }],
    rbac: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    reconcile: () => ({}),
  });
  const verbs = (group: string, resource: string) =>
    c.rbac
      .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
      .flatMap((r) => r.verbs);

  it('derives RBAC from what it declares: primary, status, owned, watched, events, extra rules', () => {
    assert.deepEqual(verbs('test.levelset.dev', 'widgets'), ['get', 'list']);
    assert.deepEqual(verbs('test.levelset.dev', 'widgets/status'), ['patch']);
    assert.deepEqual(verbs('apps', 'deployments'), ['get', 'list', 'create', 'patch', 'delete']);
    assert.deepEqual(verbs('', 'pods'), ['list']);
    assert.deepEqual(
      verbs('', 'events'),
      ['create', 'get', 'patch'],
      'the Event recorder aggregates repeats',
    );
    assert.deepEqual(verbs('', 'configmaps'), ['get']);
  });

  it('watches the primary (its own key), owned types and secondary watches (through controllers)', () => {
    assert.deepEqual(
      c.watches.map((w) => [w.resource.plural, w.labelSelector]),
      [
        ['widgets', undefined],
        ['deployments', undefined],
        ['pods', 'app'],
      ],
    );
    assert.deepEqual(c.owns, [deployments]);
    const [primary] = c.watches;
    assert.deepEqual(primary?.map(event(object('w', 'u')), { primaryKeys: () => [] }), [
      { namespace: 'ns', name: 'w' },
    ]);
  });

  it('accepts a cluster-scoped primary: its own watch maps to keys without a namespace', () => {
    const c = defineController({
      name: 'x',
      primary: customResource({
        group: 'test.levelset.dev',
        version: 'v1',
        kind: 'Widget',
        scope: 'Cluster',
      }),
      spec: z.object({}),
      owns: [configmaps],
      reconcile: () => ({}),
    });
    assert.equal(c.primary.namespaced, false);
    const ctx = { primaryKeys: () => [] };
    const self = c.watches[0];
    assert.deepEqual(self?.map({ type: 'ADDED', object: { metadata: { name: 'w' } } }, ctx), [
      { namespace: '', name: 'w' },
    ]);
    // A namespaced child of a cluster-scoped owner maps to the owner's key, namespace "".
    const child = {
      metadata: {
        name: 'c',
        namespace: 'team-a',
        ownerReferences: [
          { apiVersion: 'test.levelset.dev/v1', kind: 'Widget', name: 'w', uid: 'u', controller: true },
        ],
      },
    };
    assert.deepEqual(c.watches[1]?.map({ type: 'ADDED', object: child }, ctx), [
      { namespace: '', name: 'w' },
    ]);
  });
});

describe("defineController's steps (functions/kit/steps.ts), each alone", () => {
  const widget = (spec: unknown, status?: Record<string, unknown>): PrimaryObject => ({
    apiVersion: 'test.levelset.dev/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: 'ns', uid: 'uid-1', generation: 3 },
    spec,
    ...(status ? { status } : {}),
  });
  const schema = z.object({ size: z.number().int().min(1) });

  it('validatePrimary: parses the spec, names every invalid field, refuses children it cannot label', () => {
    assert.deepEqual(validatePrimary(widget({ size: 2 }), schema, { controller: 'widget', owns: [] }), {
      spec: { size: 2 },
    });
    const invalid = validatePrimary(widget({ size: 0 }), schema, { controller: 'widget', owns: [] });
    assert.ok('invalid' in invalid && /^ns\/w: invalid spec: spec\.size: /.test(invalid.invalid));
    const unlabelable = validatePrimary(widget({ size: 1 }), schema, {
      controller: 'widget',
      owns: [{ resource: deployments, labels: () => ({ app: 'x'.repeat(64) }) }],
    });
    assert.ok(
      'invalid' in unlabelable &&
        /cannot label its children: app=x+: longer than 63/.test(unlabelable.invalid),
    );
  });

  it('desiredConditions: Ready defaults to True/Reconciled; every condition carries observedGeneration', () => {
    assert.deepEqual(desiredConditions({}, widget({})), [
      { type: READY, status: 'True', reason: 'Reconciled', message: '', observedGeneration: 3 },
    ]);
    const [ready, other] = desiredConditions(
      {
        ready: { status: false, reason: 'Waiting', message: 'not yet' },
        conditions: [{ type: 'Progressing', status: 'True', reason: 'Scaling', message: '' }],
      },
      widget({}),
    );
    assert.equal(ready?.status, 'False');
    assert.equal(other?.observedGeneration, 3);
  });

  it('nextStatus: the status to write, or undefined when the stored one is the same', () => {
    const conditions = desiredConditions({}, widget({}));
    const next = nextStatus(widget({}), { replicas: 2 }, conditions);
    assert.ok(next);
    assert.equal(next.replicas, 2);
    assert.equal(next.observedGeneration, 3);
    assert.equal(nextStatus(widget({}, next), { replicas: 2 }, conditions), undefined, 'converged: no write');
    assert.ok(nextStatus(widget({}, next), { replicas: 3 }, conditions), 'a changed field is written');
  });

  it('recordSynced: one Normal Synced Event when something changed, none otherwise or when disabled', async () => {
    const recorded: string[] = [];
    const events = {
      record: async (_o: KubernetesObject, type: string, reason: string, message: string) => {
        recorded.push(`${type} ${reason} ${message}`);
      },
    };
    await recordSynced(events, widget({}), 'Widget synced', false);
    await recordSynced(events, widget({}), false, true);
    await recordSynced(events, widget({}), 'Widget synced', true);
    assert.deepEqual(recorded, ['Normal Synced Widget synced']);
  });

  it('resultOf: requeueAfterMs passes through, including 0', () => {
    assert.deepEqual(resultOf({}), {});
    assert.deepEqual(resultOf({ requeueAfterMs: 0 }), { requeueAfterMs: 0 });
  });
});

describe('rbac rules: Kubernetes PolicyRule shape, validated', () => {
  const define = (rbac: unknown) => () =>
    defineController({
      name: 'shapes',
      primary: widgets,
      spec: z.object({}),
      rbac: rbac as PolicyRule[],
      reconcile: () => ({}),
    });

  it('accepts apiGroups/resources/verbs, several groups per rule', () => {
    const c = define([{ apiGroups: ['', 'apps'], resources: ['configmaps'], verbs: ['get'] }])();
    const groups = c.rbac.filter((r) => r.resources.includes('configmaps')).flatMap((r) => r.apiGroups);
    assert.deepEqual(groups.sort(), ['', 'apps']);
  });

  it('refuses the one-group shape with the controller, the rule and the expected shape in the message', () => {
    assert.throws(define([{ apiGroup: '', resources: ['secrets'], verbs: ['get'] }]), (err: Error) => {
      assert.match(err.message, /^shapes: invalid RBAC rules: /);
      assert.match(err.message, /rbac\[0\]\.apiGroups: /);
      assert.match(err.message, /rbac\[0\]: Unrecognized key: "apiGroup"/);
      assert.match(
        err.message,
        /a rule is \{apiGroups: string\[\], resources: string\[\], verbs: string\[\]\}/,
      );
      return true;
    });
  });

  it('refuses an unknown verb and an empty resource list, naming each', () => {
    assert.throws(
      define([{ apiGroups: [''], resources: [], verbs: ['read'] }]),
      /rbac\[0\]\.resources: .*; rbac\[0\]\.verbs\.0: /,
    );
  });

  it('npm run generate:manifests reports a registered controller with a wrong shape, not a TypeError', () => {
    const bad = {
      ...define([])(),
      rbac: [{ apiGroup: 'apps', resources: ['deployments'], verbs: ['get'] }] as unknown as PolicyRule[],
    };
    assert.throws(() => functionsRules([bad]), /^Error: shapes: invalid RBAC rules: rbac\[0\]\.apiGroups/);
  });
});

describe('predicates on secondary watches (WithPredicates)', () => {
  const controller = defineController({
    name: 'widget',
    primary: widgets,
    spec: z.object({}),
    watches: [
      {
        resource: pods,
        // Only Pods whose phase changed.
        predicate: (e) =>
          (e.object as { status?: { phase?: string } }).status?.phase !==
          (e.oldObject as { status?: { phase?: string } } | undefined)?.status?.phase,
        map: () => [{ namespace: 'ns', name: 'w' }],
      },
    ],
    reconcile: () => ({}),
  });
  const pod = (phase: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'ns' },
    status: { phase },
  });

  it('drops the events the predicate refuses, before the map', () => {
    const changed: WatchEvent = { type: 'MODIFIED', object: pod('Running'), oldObject: pod('Pending') };
    const same: WatchEvent = { type: 'MODIFIED', object: pod('Running'), oldObject: pod('Running') };
    assert.deepEqual(keysFor(controller, changed), [{ namespace: 'ns', name: 'w' }]);
    assert.deepEqual(keysFor(controller, same), []);
  });

  it("a predicate that throws is the test's error (the relay drops the event: test/unit/relay-kit-controllers.test.ts)", () => {
    const throwing = defineController({
      name: 'widget',
      primary: widgets,
      spec: z.object({}),
      watches: [
        {
          resource: pods,
          predicate: () => {
            throw new Error('boom');
          },
        },
      ],
      reconcile: () => ({}),
    });
    assert.throws(() => keysFor(throwing, event(pod('Running'))), /boom/);
  });
});

describe('references that hold: when a held delete looks again (recheckAfterMs)', () => {
  const deleting = (at: string): KubernetesObject => ({
    metadata: { name: 'x', deletionTimestamp: at as never },
  });
  const now = Date.parse('2026-01-01T00:10:00Z');
  it('a tenth of the wait, between 1 s and 5 min', () => {
    assert.equal(recheckAfterMs(deleting('2026-01-01T00:10:00Z'), now), 1_000, 'just deleted: 1 s');
    assert.equal(recheckAfterMs(deleting('2026-01-01T00:09:00Z'), now), 6_000, 'after a minute: 6 s');
    assert.equal(recheckAfterMs(deleting('2025-12-01T00:00:00Z'), now), 300_000, 'after a month: 5 min');
    assert.equal(recheckAfterMs({ metadata: { name: 'x' } }, now), 1_000, 'no deletionTimestamp: 1 s');
  });
});

describe('isReady (a dependency Ready now)', () => {
  const at = (generation: number, ready: object | undefined, observedGeneration?: number): KubernetesObject =>
    ({
      metadata: { name: 'orders', generation },
      status: {
        ...(observedGeneration === undefined ? {} : { observedGeneration }),
        conditions: ready ? [ready] : [],
      },
    }) as KubernetesObject;
  const cond = (status: string, observedGeneration?: number) => ({
    type: 'Ready',
    status,
    reason: 'Available',
    message: '',
    lastTransitionTime: '2026-01-01T00:00:00Z',
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
  });
  it('is true only for Ready=True observed at the current generation', () => {
    assert.equal(isReady(at(2, cond('True', 2))), true);
    assert.equal(isReady(at(3, cond('True', 2))), false, 'a newer spec not yet reconciled');
    assert.equal(isReady(at(2, cond('False', 2))), false);
    assert.equal(
      isReady(at(2, cond('True'), 2)),
      true,
      'status.observedGeneration when the condition has none',
    );
    assert.equal(isReady(at(2, undefined, 2)), false, 'no condition');
    assert.equal(isReady(undefined), false, 'absent');
  });
});
