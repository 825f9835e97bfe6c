// The kit's managedFields comparison (functions/kit/managed-fields.ts): which fields Levelset's manager
// owns, whether an apply is due, and the csaupgrade patch that turns a create's Update entry into
// applied fields.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  type FieldsV1,
  ownsExactly,
  restrictFields,
  upgradeManagedFieldsPatch,
} from '../../functions/kit/managed-fields.ts';

const deployment = (env: { name: string; value: string }[]): KubernetesObject & Record<string, unknown> => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'd', namespace: 'n', labels: { app: 'x' } },
  spec: { template: { spec: { containers: [{ name: 'c', image: 'i', env }] } } },
});

/** The set server-side apply records for `deployment([{A}, {B}])`, plus what defaulting adds when `defaults`. */
const fieldsOf = (envNames: string[], defaults = false): FieldsV1 => ({
  'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
  'f:spec': {
    ...(defaults ? { 'f:replicas': {}, 'f:strategy': { 'f:type': {} } } : {}),
    'f:template': {
      'f:spec': {
        'f:containers': {
          'k:{"name":"c"}': {
            '.': {},
            'f:env': Object.fromEntries([
              ['.', {}],
              ...envNames.map((n) => [`k:{"name":"${n}"}`, { '.': {}, 'f:name': {}, 'f:value': {} }]),
            ]),
            'f:image': {},
            'f:name': {},
            ...(defaults ? { 'f:terminationMessagePath': {} } : {}),
          },
        },
      },
    },
  },
});

const live = (entries: object[]): KubernetesObject => ({
  ...deployment([{ name: 'A', value: '1' }]),
  metadata: { name: 'd', resourceVersion: '7', managedFields: entries },
});
const applyEntry = (fieldsV1: FieldsV1) => ({
  manager: 'levelset',
  operation: 'Apply',
  fieldsType: 'FieldsV1',
  fieldsV1,
});

describe('managed fields: when an apply is due', () => {
  test('owns exactly the applied fields: converged', () => {
    const desired = deployment([
      { name: 'A', value: '1' },
      { name: 'B', value: '2' },
    ]);
    assert.equal(ownsExactly(live([applyEntry(fieldsOf(['A', 'B']))]), 'levelset', desired), true);
  });

  test('an env var the desired state dropped is still owned: an apply is due', () => {
    const desired = deployment([{ name: 'A', value: '1' }]);
    assert.equal(ownsExactly(live([applyEntry(fieldsOf(['A', 'B']))]), 'levelset', desired), false);
  });

  test('an env var added (even one someone else already set): an apply is due', () => {
    const desired = deployment([
      { name: 'A', value: '1' },
      { name: 'B', value: '2' },
    ]);
    assert.equal(ownsExactly(live([applyEntry(fieldsOf(['A']))]), 'levelset', desired), false);
  });

  test('other managers and subresources do not count; an Update entry of ours does', () => {
    const desired = deployment([{ name: 'A', value: '1' }]);
    const others = [
      { manager: 'kube-controller-manager', operation: 'Update', fieldsV1: { 'f:status': {} } },
      { manager: 'levelset', operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': {} } },
    ];
    assert.equal(ownsExactly(live([...others, applyEntry(fieldsOf(['A']))]), 'levelset', desired), true);
    const update = { manager: 'levelset', operation: 'Update', fieldsV1: fieldsOf(['A']) };
    assert.equal(ownsExactly(live([update]), 'levelset', desired), false);
  });

  test('restrictFields drops what the value does not set (server defaults)', () => {
    const desired = deployment([{ name: 'A', value: '1' }]);
    assert.deepEqual(restrictFields(fieldsOf(['A'], true), desired), fieldsOf(['A']));
  });
});

describe('managed fields: the csaupgrade patch', () => {
  test("our Update entry becomes our Apply entry, conditional on resourceVersion; another manager's is kept", () => {
    const other = {
      manager: 'someone',
      operation: 'Update',
      fieldsV1: { 'f:metadata': { 'f:annotations': {} } },
    };
    const created = live([
      other,
      { manager: 'levelset', operation: 'Update', apiVersion: 'apps/v1', fieldsV1: fieldsOf(['A'], true) },
    ]);
    const patch = upgradeManagedFieldsPatch(created, 'levelset');
    assert.deepEqual(patch?.[1], { op: 'replace', path: '/metadata/resourceVersion', value: '7' });
    const entries = patch?.[0]?.value as { manager: string; operation: string; fieldsV1: FieldsV1 }[];
    assert.deepEqual(entries[0], other);
    assert.equal(entries[1]?.operation, 'Apply');
    assert.deepEqual(entries[1]?.fieldsV1, fieldsOf(['A'], true), 'the defaulted fields too');
  });

  test('an Update entry beside an Apply entry: its fields join the Apply ones (all of them, to be applied away)', () => {
    const entries = [
      applyEntry(fieldsOf(['A'])),
      { manager: 'levelset', operation: 'Update', fieldsV1: fieldsOf(['B']) },
    ];
    const patch = upgradeManagedFieldsPatch(live(entries), 'levelset');
    const value = patch?.[0]?.value as { operation: string; fieldsV1: FieldsV1 }[];
    assert.equal(value.length, 1);
    assert.deepEqual(value[0]?.fieldsV1, fieldsOf(['A', 'B']));
  });

  test('no Update entry of ours: no patch', () => {
    assert.equal(upgradeManagedFieldsPatch(live([applyEntry(fieldsOf(['A']))]), 'levelset'), undefined);
  });
});
