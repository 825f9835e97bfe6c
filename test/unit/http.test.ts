import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readRequestRules, servedTarget } from '../../functions/runtime/http.ts';

describe('functions HTTP boundary', () => {
  it('reads the target as functions-framework does: --target, then FUNCTION_TARGET', () => {
    assert.equal(servedTarget(['--target=reconcile', '--port=8080'], {}), 'reconcile');
    assert.equal(servedTarget(['--target', 'resync'], { FUNCTION_TARGET: 'reconcile' }), 'resync');
    assert.equal(servedTarget([], { FUNCTION_TARGET: 'resync' }), 'resync');
    assert.equal(servedTarget([], {}), 'function');
  });

  it('takes an optional shared token of at least 32 characters', () => {
    assert.deepEqual(readRequestRules({}), { token: undefined });
    const token = 'x'.repeat(32);
    assert.deepEqual(readRequestRules({ LEVELSET_FUNCTIONS_TOKEN: token }), { token });
    assert.throws(() => readRequestRules({ LEVELSET_FUNCTIONS_TOKEN: 'short' }), /LEVELSET_FUNCTIONS_TOKEN/);
  });
});
