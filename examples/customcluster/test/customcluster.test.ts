// The customcluster controller's pure parts: its CRD, the spec schema, the pod it creates, the
// plan that converges its pods, its status, and how watch events map to keys.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { newControllerRef, type WatchEvent } from 'levelset/kit';
import { keysFor } from 'levelset/kit/testing';
import { parse } from 'yaml';
import {
  type Customcluster,
  customclusterResource,
  customclusterSpecSchema,
} from '../controllers/customcluster/api.ts';
import {
  messageOf,
  newPod,
  observedStatus,
  planPods,
  readyCondition,
} from '../controllers/customcluster/desired.ts';
import { customclusterController } from '../controllers/customcluster/index.ts';

/** The project's root (this file is in `test/`). */
const root = new URL('../', import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: CRD documents are walked as plain JSON.
type Json = any;
const crd: Json = parse(readFileSync(new URL('controllers/customcluster/crd.yaml', root), 'utf8'));
const example: Json = parse(
  readFileSync(new URL('test/fixtures/upstream/customcluster-example.yaml', root), 'utf8'),
);

const cc: Customcluster = {
  apiVersion: 'sde.dev/v1alpha1',
  kind: 'Customcluster',
  metadata: { name: 'cpod-f', namespace: 'team-a', uid: 'uid-cc', generation: 2 },
  spec: { message: 'hello', count: 3 },
};
const spec = { message: 'hello', count: 3 };

let seq = 0;
/** A pod controlled by `cc` (or `owner`), running `message`, in `phase`, created `age` seconds after t0. */
function pod(
  message: string,
  phase: string,
  options: { age?: number; deleting?: boolean; owner?: { metadata: { name: string; uid: string } } } = {},
): V1Pod {
  const p = newPod(cc, { message, count: 1 });
  seq += 1;
  p.metadata = {
    ...p.metadata,
    name: `cpod-f-${seq}`,
    uid: `uid-${seq}`,
    creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, options.age ?? seq)),
    ownerReferences: [
      newControllerRef(options.owner ?? cc, { apiVersion: 'sde.dev/v1alpha1', kind: 'Customcluster' }),
    ],
    ...(options.deleting ? { deletionTimestamp: new Date() } : {}),
  };
  p.status = { phase };
  return p;
}

describe('customcluster CRD', () => {
  const version = crd.spec.versions[0];
  const schema = version.schema.openAPIV3Schema;

  it('serves what the tutorial names: sde.dev/v1alpha1 Customcluster, customclusters, short name cc', () => {
    assert.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
    assert.equal(crd.metadata.name, 'customclusters.sde.dev');
    assert.equal(crd.spec.group, 'sde.dev');
    assert.equal(version.name, 'v1alpha1');
    assert.deepEqual(
      [crd.spec.names.kind, crd.spec.names.plural, crd.spec.names.shortNames],
      ['Customcluster', 'customclusters', ['cc']],
    );
    assert.equal(crd.spec.scope, 'Namespaced');
    assert.deepEqual(
      {
        group: crd.spec.group,
        version: version.name,
        plural: crd.spec.names.plural,
        kind: crd.spec.names.kind,
      },
      {
        group: customclusterResource.group,
        version: customclusterResource.version,
        plural: customclusterResource.plural,
        kind: customclusterResource.kind,
      },
    );
  });

  it('declares spec.message, spec.count (≥ 0), status.message, status.count, and the status subresource', () => {
    assert.equal(schema.properties.spec.properties.message.type, 'string');
    assert.equal(schema.properties.spec.properties.count.type, 'integer');
    assert.equal(schema.properties.spec.properties.count.minimum, 0);
    assert.equal(schema.properties.status.properties.message.type, 'string');
    assert.equal(schema.properties.status.properties.count.type, 'integer');
    assert.deepEqual(version.subresources, { status: {} });
    assert.ok(version.additionalPrinterColumns.some((c: Json) => c.jsonPath === '.status.count'));
  });

  it('the tutorial example is a Customcluster the reconcile accepts as it is', () => {
    assert.equal(example.apiVersion, 'sde.dev/v1alpha1');
    assert.equal(example.kind, 'Customcluster');
    assert.deepEqual(customclusterSpecSchema.parse(example.spec), {
      message: 'Trying to create my own custom resource',
      count: 5,
    });
  });
});

describe('customcluster spec validation (defence in depth)', () => {
  for (const [label, s] of [
    ['count -1', { message: 'm', count: -1 }],
    ['count "x"', { message: 'm', count: 'x' }],
    ['count 2.5', { message: 'm', count: 2.5 }],
    ['count above the maximum', { message: 'm', count: 1001 }],
    ['no message', { count: 1 }],
    ['no count', { message: 'm' }],
  ] as const) {
    it(`rejects ${label}`, () => assert.equal(customclusterSpecSchema.safeParse(s).success, false));
  }
  it('accepts count 0 and an empty message', () => {
    assert.ok(customclusterSpecSchema.safeParse({ message: '', count: 0 }).success);
  });
});

describe('customcluster pod', () => {
  it('is the tutorial pod: label controller, controller reference, nginx echoing $MESSAGE', () => {
    const p = newPod(cc, spec);
    assert.equal(p.metadata?.generateName, 'cpod-f-');
    assert.equal(p.metadata?.namespace, 'team-a');
    assert.deepEqual(p.metadata?.labels, { controller: 'cpod-f' });
    assert.equal(p.metadata?.ownerReferences?.[0]?.uid, 'uid-cc');
    assert.equal(p.metadata?.ownerReferences?.[0]?.controller, true);
    const [c] = p.spec?.containers ?? [];
    assert.equal(c?.name, 'nginx');
    assert.deepEqual(c?.command, ['/bin/sh', '-c', 'echo $MESSAGE; sleep 100']);
    assert.deepEqual(c?.env, [{ name: 'MESSAGE', value: 'hello' }]);
    assert.equal(messageOf(p), 'hello');
  });
});

describe('customcluster plan', () => {
  it('creates the difference when fewer live pods than count run', () => {
    const plan = planPods(cc, spec, [pod('hello', 'Running')]);
    assert.equal(plan.create, 2);
    assert.deepEqual(plan.delete, []);
    assert.equal(plan.running, 1);
  });

  it('deletes the extra pods, not-yet-running and newest first', () => {
    const oldRunning = pod('hello', 'Running', { age: 1 });
    const midRunning = pod('hello', 'Running', { age: 2 });
    const newRunning = pod('hello', 'Running', { age: 3 });
    const oldPending = pod('hello', 'Pending', { age: 0 });
    const newestRunning = pod('hello', 'Running', { age: 4 });
    const plan = planPods(cc, spec, [oldRunning, midRunning, newRunning, oldPending, newestRunning]);
    assert.equal(plan.create, 0);
    assert.deepEqual(
      plan.delete.map((p) => p.metadata?.name),
      [oldPending, newestRunning].map((p) => p.metadata?.name),
    );
    assert.equal(plan.running, 3);
  });

  it('replaces pods whose MESSAGE differs from spec.message', () => {
    const stale = [pod('old', 'Running'), pod('old', 'Running'), pod('old', 'Pending')];
    const plan = planPods(cc, spec, stale);
    assert.equal(plan.create, 3);
    assert.deepEqual(
      plan.delete.map((p) => p.metadata?.name),
      stale.map((p) => p.metadata?.name),
    );
    assert.equal(plan.running, 0);
  });

  it('does not count or touch terminating, Failed or Succeeded pods', () => {
    const plan = planPods(cc, spec, [
      pod('hello', 'Running', { deleting: true }),
      pod('hello', 'Failed'),
      pod('hello', 'Succeeded'),
      pod('old', 'Running', { deleting: true }),
      pod('hello', 'Running'),
    ]);
    assert.equal(plan.create, 2);
    assert.deepEqual(plan.delete, []);
    assert.equal(plan.running, 1);
  });

  it('never touches pods another Customcluster controls, whatever their labels', () => {
    const other = { metadata: { name: 'cpod-f', uid: 'uid-of-a-recreated-cpod-f' } };
    const plan = planPods(cc, { message: 'hello', count: 0 }, [
      pod('hello', 'Running', { owner: other }),
      pod('old', 'Running', { owner: other }),
    ]);
    assert.deepEqual(plan, { create: 0, delete: [], keep: [], running: 0 });
  });

  it('is converged, and Ready, when count pods run the message', () => {
    const pods = [pod('hello', 'Running'), pod('hello', 'Running'), pod('hello', 'Running')];
    const plan = planPods(cc, spec, pods);
    assert.deepEqual([plan.create, plan.delete.length, plan.running], [0, 0, 3]);
    assert.deepEqual(readyCondition(spec, plan), {
      status: true,
      reason: 'PodsRunning',
      message: '3 of 3 pods running',
    });
  });

  it('is not Ready while pods are pending', () => {
    const plan = planPods(cc, spec, [
      pod('hello', 'Running'),
      pod('hello', 'Pending'),
      pod('hello', 'Pending'),
    ]);
    assert.equal(plan.create, 0);
    assert.equal(readyCondition(spec, plan).status, false);
  });
});

describe('customcluster status', () => {
  it('count = running pods, message = what they run (the kit adds observedGeneration and Ready)', () => {
    const plan = planPods(cc, spec, [pod('hello', 'Running'), pod('hello', 'Pending')]);
    assert.deepEqual(observedStatus(spec, plan), { count: 1, message: 'hello' });
    assert.equal(readyCondition(spec, plan).status, false);
  });

  it('message is empty while no pod runs', () => {
    const plan = planPods(cc, spec, []);
    assert.deepEqual(observedStatus(spec, plan), { count: 0, message: '' });
  });
});

describe("customcluster watches (the keys an event enqueues: the kit's keysFor)", () => {
  const pods = { group: '', plural: 'pods' };
  const meta = (
    ownerReferences?: NonNullable<KubernetesObject['metadata']>['ownerReferences'],
  ): KubernetesObject => ({
    metadata: { name: 'cpod-f-abcde', namespace: 'team-a', ...(ownerReferences ? { ownerReferences } : {}) },
  });

  it('maps a Customcluster to its own key', () => {
    const object = {
      apiVersion: 'sde.dev/v1alpha1',
      kind: 'Customcluster',
      metadata: { name: 'cpod-f', namespace: 'team-a' },
    };
    assert.deepEqual(keysFor(customclusterController, { type: 'ADDED', object }), [
      { namespace: 'team-a', name: 'cpod-f' },
    ]);
  });

  it('maps a pod to its controlling Customcluster; drops others', () => {
    const watch = customclusterController.watches.find((w) => w.resource.plural === 'pods');
    assert.equal(watch?.labelSelector, 'controller');
    const ref = {
      apiVersion: 'sde.dev/v1alpha1',
      kind: 'Customcluster',
      name: 'cpod-f',
      uid: 'u',
      controller: true,
    };
    const keys = (event: WatchEvent) => keysFor(customclusterController, event, { resource: pods });
    assert.deepEqual(keys({ type: 'DELETED', object: meta([ref]) }), [
      { namespace: 'team-a', name: 'cpod-f' },
    ]);
    assert.deepEqual(keys({ type: 'MODIFIED', object: meta([{ ...ref, controller: false }]) }), []);
    assert.deepEqual(
      keys({ type: 'MODIFIED', object: meta([{ ...ref, kind: 'ReplicaSet', apiVersion: 'apps/v1' }]) }),
      [],
    );
    assert.deepEqual(keys({ type: 'MODIFIED', object: meta() }), []);
  });
});
