// The kit's pure parts: the no-op rule (desired ⊆ live), map functions through controller
// references (and the relay's MapContext.get that feeds them), derived RBAC and watches.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import { z } from 'zod';
import type { Key, MapContext, WatchEvent } from '../../functions/controllers/types.ts';
import {
  configmaps,
  customResource,
  defineController,
  deployments,
  isSubset,
  mapThroughControllers,
  pods,
  replicasets,
} from '../../functions/kit/index.ts';
import { createLogger } from '../../functions/log.ts';
import { KeyPipeline, planInformers } from '../../relay/pipeline.ts';

const widgets = customResource({ group: 'test.levelset.dev', version: 'v1', kind: 'Widget' });
const ref = (apiVersion: string, kind: string, name: string, uid: string) => ({
  apiVersion,
  kind,
  name,
  uid,
  controller: true,
});
const object = (name: string, uid: string, owner?: ReturnType<typeof ref>): KubernetesObject => ({
  metadata: { name, namespace: 'ns', uid, ...(owner ? { ownerReferences: [owner] } : {}) },
});
const event = (o: KubernetesObject): WatchEvent => ({ type: 'ADDED', object: o });

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

  it("is fed by the relay's caches: KeyPipeline passes MapContext.get through to its lookup", () => {
    const controller = defineController({
      name: 'widget',
      primary: widgets,
      spec: z.object({}),
      owns: [deployments],
      watches: [replicasets, pods],
      reconcile: () => ({}),
    });
    const asked: string[] = [];
    const pipeline = new KeyPipeline({
      collapseMs: 0,
      logger: createLogger('relay', { write: () => {} }),
      primaryKeys: () => [],
      lookup: (name, r, k: Key) => {
        asked.push(`${name}:${r.kind}/${k.name}`);
        return cache.get(`${r.kind}/${k.namespace}/${k.name}`);
      },
      publish: async () => '1',
    });
    const route = planInformers([controller]).find((p) => p.resource === pods)?.routes[0];
    assert.ok(route, 'a route for the pods watch');
    assert.deepEqual(pipeline.keysFor(route, event(pod)), [{ namespace: 'ns', name: 'w' }]);
    assert.deepEqual(asked, ['widget:ReplicaSet/rs', 'widget:Deployment/d']);
  });
});

describe('defineController', () => {
  const c = defineController({
    name: 'widget',
    primary: widgets,
    spec: z.object({}),
    owns: [deployments],
    watches: [{ resource: pods, labelSelector: 'app' }],
    rbac: [{ apiGroup: '', resources: ['configmaps'], verbs: ['get'] }],
    reconcile: () => ({}),
  });
  const verbs = (group: string, resource: string) =>
    c.rbac.filter((r) => r.apiGroup === group && r.resources.includes(resource)).flatMap((r) => r.verbs);

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
