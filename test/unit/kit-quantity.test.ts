// Resource quantities as the API server stores them (functions/kit/quantity.ts): apimachinery's
// canonical form (resource.Quantity's String(), its quantity_test.go cases), and the kit's no-op rule
// comparing them by value where the built-in types hold quantities.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isSubset } from '../../functions/kit/children.ts';
import { canonicalQuantity } from '../../functions/kit/index.ts';
import { quantitiesEqual } from '../../functions/kit/quantity.ts';

describe('canonicalQuantity (apimachinery Quantity.String())', () => {
  const cases: [string, string][] = [
    ['2000m', '2'],
    ['1500m', '1500m'],
    ['0.5', '500m'],
    ['1.5', '1500m'],
    ['1000', '1k'],
    ['1024', '1024'],
    ['100Mi', '100Mi'],
    ['1024Mi', '1Gi'],
    ['0.5Gi', '512Mi'],
    ['1.5Gi', '1536Mi'],
    ['0.5Ki', '512'],
    ['1e3', '1e3'],
    ['12e6', '12e6'],
    ['0.1n', '1n'],
    ['-2000m', '-2'],
    ['0', '0'],
  ];
  for (const [given, stored] of cases)
    it(`${given} → ${stored}`, () => assert.equal(canonicalQuantity(given), stored));

  it('leaves what is not a quantity as it is', () => {
    for (const s of ['abc', '', '1.2.3', 'Mi']) assert.equal(canonicalQuantity(s), s);
    assert.equal(quantitiesEqual('a', 'a'), false);
  });
});

describe('the no-op rule compares quantities by value where the built-in types hold them', () => {
  it('a child applied with cpu: 2000m, read back as 2, is converged', () => {
    const desired = { spec: { hard: { cpu: '2000m', memory: '1024Mi' } } };
    assert.equal(isSubset(desired, { spec: { hard: { cpu: '2', memory: '1Gi' } } }), true);
    assert.equal(isSubset(desired, { spec: { hard: { cpu: '3', memory: '1Gi' } } }), false);
    const container = { resources: { limits: { cpu: '500m' }, requests: { memory: '0.5Gi' } } };
    assert.equal(
      isSubset(container, { resources: { limits: { cpu: '0.5' }, requests: { memory: '512Mi' } } }),
      true,
    );
  });

  it('elsewhere strings stay strings: a ConfigMap value 1000 is not 1k', () => {
    assert.equal(isSubset({ data: { size: '1k' } }, { data: { size: '1000' } }), false);
  });
});
