import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import { errorText, isConflict, isNotFound, isTransient, TerminalError } from '../../core/k8s/errors.ts';

const api = (code: number) =>
  new ApiException(
    code,
    `HTTP-Code: ${code}`,
    JSON.stringify({ kind: 'Status', reason: 'R', message: `m${code}` }),
    {
      authorization: 'Bearer secret-token',
    },
  );

describe('reconcile error classification', () => {
  it('retries conflicts, throttling, server errors and network errors', () => {
    for (const code of [409, 429, 500, 503, 504]) assert.equal(isTransient(api(code)), true, String(code));
    assert.equal(isTransient(new TypeError('fetch failed')), true);
  });

  it('does not call client errors transient', () => {
    for (const code of [400, 401, 403, 404, 422]) assert.equal(isTransient(api(code)), false, String(code));
    assert.equal(isTransient(new TerminalError('Invalid', 'bad spec')), false);
  });

  it('recognises 404 and 409', () => {
    assert.equal(isNotFound(api(404)), true);
    assert.equal(isConflict(api(409)), true);
    assert.equal(isConflict(api(404)), false);
  });

  it('describes an API error by its Status, without headers', () => {
    const text = errorText(api(409));
    assert.equal(text, '409 R: m409');
    assert.ok(!text.includes('secret-token'));
  });
});
