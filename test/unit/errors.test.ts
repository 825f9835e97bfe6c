import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiException } from '@kubernetes/client-node';
import {
  errorText,
  isConflict,
  isNamespaceTerminating,
  isNotFound,
  isTransient,
  TerminalError,
} from '../../core/k8s/errors.ts';
import { resourceOfPath } from '../../core/k8s/rest.ts';

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

describe('rejected writes: which, and of what', () => {
  const status = (code: number, body: object) => new ApiException(code, 'POST /x', JSON.stringify(body), {});
  it('a 403 is a terminating namespace only with the cause NamespaceTerminating (not an RBAC denial)', () => {
    assert.equal(
      isNamespaceTerminating(
        status(403, { reason: 'Forbidden', details: { causes: [{ reason: 'NamespaceTerminating' }] } }),
      ),
      true,
    );
    assert.equal(isNamespaceTerminating(status(403, { reason: 'Forbidden' })), false);
    assert.equal(isNamespaceTerminating(new ApiException(403, 'POST /x', 'not json', {})), false);
    assert.equal(
      isNamespaceTerminating(status(409, { details: { causes: [{ reason: 'NamespaceTerminating' }] } })),
      false,
    );
  });
  it('names the resource of a path as kube-apiserver labels it, with its group', () => {
    assert.equal(resourceOfPath('/apis/apps/v1/namespaces/ns/deployments/web'), 'deployments.apps');
    assert.equal(resourceOfPath('/apis/apps/v1/namespaces/ns/deployments'), 'deployments.apps');
    assert.equal(resourceOfPath('/api/v1/namespaces/ns/pods/p/status'), 'pods');
    assert.equal(resourceOfPath('/api/v1/namespaces/ns'), 'namespaces');
    assert.equal(resourceOfPath('/api/v1/namespaces'), 'namespaces');
    assert.equal(
      resourceOfPath('/apis/samplecontroller.k8s.io/v1alpha1/foos?dryRun=All'),
      'foos.samplecontroller.k8s.io',
    );
    assert.equal(resourceOfPath('/healthz'), 'unknown');
  });
});
