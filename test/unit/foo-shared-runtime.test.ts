// Shared controller helpers the foo and customcluster controllers use: k8s/conditions.ts
// (Kubernetes API conventions: conditions) and k8s/owner.ts (controller references).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  findCondition,
  isConditionTrue,
  metaTime,
  parseConditions,
  setCondition,
  statusChanged,
} from '../../core/k8s/conditions.ts';
import { controllerRefOf, groupOf, isControlledBy, newControllerRef } from '../../core/k8s/owner.ts';

const t0 = new Date('2026-01-01T10:00:00.123Z');
const t1 = new Date('2026-01-01T11:30:00.999Z');

describe('k8s/conditions', () => {
  it('formats times as metav1.Time does: UTC, second precision', () => {
    assert.equal(metaTime(t0), '2026-01-01T10:00:00Z');
  });

  it('appends a new condition with lastTransitionTime = now', () => {
    const out = setCondition(
      undefined,
      { type: 'Ready', status: 'False', reason: 'A', message: 'a', observedGeneration: 1 },
      t0,
    );
    assert.deepEqual(out, [
      {
        type: 'Ready',
        status: 'False',
        observedGeneration: 1,
        lastTransitionTime: '2026-01-01T10:00:00Z',
        reason: 'A',
        message: 'a',
      },
    ]);
  });

  it('keeps lastTransitionTime when the status is unchanged, updating reason, message and observedGeneration', () => {
    const first = setCondition(
      [],
      { type: 'Ready', status: 'False', reason: 'A', message: 'a', observedGeneration: 1 },
      t0,
    );
    const second = setCondition(
      first,
      { type: 'Ready', status: 'False', reason: 'B', message: 'b', observedGeneration: 2 },
      t1,
    );
    assert.equal(second.length, 1);
    assert.deepEqual(second[0], {
      type: 'Ready',
      status: 'False',
      observedGeneration: 2,
      lastTransitionTime: '2026-01-01T10:00:00Z',
      reason: 'B',
      message: 'b',
    });
    assert.equal(first[0]?.reason, 'A', 'the input is not modified');
  });

  it('moves lastTransitionTime when the status changes, and leaves other types alone', () => {
    const other = {
      type: 'Other',
      status: 'True' as const,
      lastTransitionTime: '2020-01-01T00:00:00Z',
      reason: 'X',
      message: '',
    };
    const first = setCondition([other], { type: 'Ready', status: 'False', reason: 'A', message: '' }, t0);
    const second = setCondition(first, { type: 'Ready', status: 'True', reason: 'A', message: '' }, t1);
    assert.equal(findCondition(second, 'Ready')?.lastTransitionTime, '2026-01-01T11:30:00Z');
    assert.deepEqual(findCondition(second, 'Other'), other);
    assert.equal(isConditionTrue(second, 'Ready'), true);
    assert.equal(isConditionTrue(second, 'Missing'), false);
  });

  it('parses conditions leniently, dropping invalid entries', () => {
    const good = {
      type: 'Ready',
      status: 'True',
      lastTransitionTime: '2026-01-01T10:00:00Z',
      reason: 'R',
      message: '',
    };
    assert.deepEqual(parseConditions([good, { type: 'Ready', status: 'maybe' }, 42]), [good]);
    assert.deepEqual(parseConditions('nope'), []);
    assert.deepEqual(parseConditions(undefined), []);
  });

  it('statusChanged compares only the desired members, ignoring key order and undefined', () => {
    const current = { availableReplicas: 1, conditions: [{ a: 1, b: 2 }], foreign: 'kept' };
    assert.equal(statusChanged(current, { conditions: [{ b: 2, a: 1 }], availableReplicas: 1 }), false);
    assert.equal(statusChanged(current, { availableReplicas: 1, extra: undefined }), false);
    assert.equal(statusChanged(current, { availableReplicas: 2 }), true);
    assert.equal(statusChanged(undefined, { availableReplicas: 0 }), true);
    assert.equal(statusChanged(current, { conditions: [] }), true);
  });

  it('statusChanged: null removes a member (merge patch), so it changes only a status that has it', () => {
    assert.equal(statusChanged({ availableReplicas: 1 }, { availableReplicas: null }), true);
    assert.equal(statusChanged({}, { availableReplicas: null }), false);
    assert.equal(statusChanged(undefined, { availableReplicas: null }), false);
  });
});

describe('k8s/owner', () => {
  const owner = { metadata: { name: 'example-foo', namespace: 'ns', uid: 'uid-1' } };
  const gvk = { apiVersion: 'samplecontroller.k8s.io/v1alpha1', kind: 'Foo' };

  it('newControllerRef is a controller reference that blocks owner deletion', () => {
    assert.deepEqual(newControllerRef(owner, gvk), {
      apiVersion: 'samplecontroller.k8s.io/v1alpha1',
      kind: 'Foo',
      name: 'example-foo',
      uid: 'uid-1',
      controller: true,
      blockOwnerDeletion: true,
    });
    assert.throws(() => newControllerRef({ metadata: { name: 'x' } }, gvk), /uid/);
  });

  it('controllerRefOf finds the one reference with controller: true', () => {
    const plain = { apiVersion: 'v1', kind: 'ConfigMap', name: 'c', uid: 'u0' };
    const ctrl = newControllerRef(owner, gvk);
    assert.deepEqual(controllerRefOf({ metadata: { ownerReferences: [plain, ctrl] } }), ctrl);
    assert.equal(controllerRefOf({ metadata: { ownerReferences: [plain] } }), undefined);
    assert.equal(controllerRefOf({}), undefined);
  });

  it('isControlledBy compares UIDs, as metav1.IsControlledBy', () => {
    const dependent = { metadata: { ownerReferences: [newControllerRef(owner, gvk)] } };
    assert.equal(isControlledBy(dependent, owner), true);
    assert.equal(
      isControlledBy(dependent, { metadata: { name: 'example-foo', uid: 'uid-2' } }),
      false,
      're-created owner',
    );
    assert.equal(
      isControlledBy(
        { metadata: { ownerReferences: [{ ...gvk, name: 'example-foo', uid: 'uid-1' }] } },
        owner,
      ),
      false,
      'not controller',
    );
    assert.equal(
      isControlledBy(dependent, { metadata: { name: 'example-foo' } }),
      false,
      'owner without uid',
    );
  });

  it('groupOf is the API group of an apiVersion', () => {
    assert.equal(groupOf('v1'), '');
    assert.equal(groupOf('apps/v1'), 'apps');
  });
});
