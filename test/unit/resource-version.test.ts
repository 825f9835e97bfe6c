// resourceVersion ordering (core/k8s/resource-version.ts), as apimachinery's CompareResourceVersion.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareResourceVersions, isAtOrAfter } from '../../core/k8s/resource-version.ts';

describe('compareResourceVersions', () => {
  it('orders well-formed versions as integers of any length', () => {
    assert.equal(compareResourceVersions('998', '1002'), -1);
    assert.equal(compareResourceVersions('1002', '998'), 1);
    assert.equal(compareResourceVersions('42', '42'), 0);
    assert.equal(
      compareResourceVersions('123456789012345678901234567890', '123456789012345678901234567891'),
      -1,
    );
  });

  it('does not order what is not well formed: empty, 0, a leading zero, not digits', () => {
    const pairs: [string, string][] = [
      ['', '1'],
      ['0', '1'],
      ['01', '2'],
      ['1a', '2'],
      ['2', '-1'],
    ];
    for (const [a, b] of pairs) assert.equal(compareResourceVersions(a, b), undefined, `${a} vs ${b}`);
  });

  it('isAtOrAfter: equal or later; unordered versions only when equal; nothing is never after', () => {
    assert.equal(isAtOrAfter('1002', '998'), true);
    assert.equal(isAtOrAfter('998', '998'), true);
    assert.equal(isAtOrAfter('997', '998'), false);
    assert.equal(isAtOrAfter('x9', 'x8'), false);
    assert.equal(isAtOrAfter('x8', 'x8'), true);
    assert.equal(isAtOrAfter(undefined, '1'), false);
  });
});
