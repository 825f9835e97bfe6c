/**
 * The kit's admission webhooks without a server: the verdicts and patches of `defineValidatingWebhook`
 * and `defineMutatingWebhook`, the failure policy of a handler that throws or hangs, and the
 * AdmissionReview boundary (core/admission.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { answerAdmission, silentLogger } from '../../core/admission.ts';
import { defineMutatingWebhook, defineValidatingWebhook, resources } from '../../functions/kit/index.ts';
import { admitForTest } from '../../functions/kit/testing.ts';

const configMap = (data: Record<string, string>, labels?: Record<string, string>): V1ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'settings', namespace: 'team-a', ...(labels ? { labels } : {}) },
  data,
});

const noEmptyValues = defineValidatingWebhook<V1ConfigMap>({
  name: 'no-empty-values',
  rules: [{ resource: resources.configmaps, operations: ['CREATE', 'UPDATE'] }],
  validate: ({ object }) => {
    const empty = Object.entries(object?.data ?? {}).filter(([, v]) => v === '');
    if (empty.length === 0) return { allowed: true, warnings: object?.data?.size ? [] : ['no size set'] };
    return {
      allowed: false,
      message: `empty values: ${empty.map(([k]) => k).join(', ')}`,
      reason: 'Invalid',
      code: 422,
    };
  },
});

describe('defineValidatingWebhook', () => {
  it('declares its rules from the resource types, with safe defaults', () => {
    assert.deepEqual(noEmptyValues.rules, [
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: [''],
        apiVersions: ['v1'],
        resources: ['configmaps'],
        scope: 'Namespaced',
      },
    ]);
    assert.equal(noEmptyValues.type, 'validating');
    assert.equal(noEmptyValues.failurePolicy, 'Fail');
    assert.equal(noEmptyValues.timeoutSeconds, 5);
    assert.equal(noEmptyValues.matchPolicy, 'Equivalent');
  });

  it('denies with the message, reason and code, and allows with warnings', async () => {
    const denied = await admitForTest(noEmptyValues, {
      operation: 'CREATE',
      object: configMap({ a: '', b: '' }),
    });
    assert.equal(denied.allowed, false);
    assert.equal(denied.outcome, 'denied');
    assert.deepEqual(denied.status, { code: 422, message: 'empty values: a, b', reason: 'Invalid' });
    const allowed = await admitForTest(noEmptyValues, {
      operation: 'UPDATE',
      object: configMap({ a: '1' }),
      oldObject: configMap({}),
    });
    assert.equal(allowed.allowed, true);
    assert.deepEqual(allowed.warnings, ['no size set']);
    assert.equal(allowed.review.response.uid.length > 0, true);
  });

  it('refuses a declaration kube-apiserver would', () => {
    const base = {
      rules: [{ resource: resources.configmaps, operations: ['CREATE' as const] }],
      validate: () => undefined,
    };
    assert.throws(() => defineValidatingWebhook({ ...base, name: 'Not_A_Label' }), /DNS-1123 label/);
    assert.throws(() => defineValidatingWebhook({ ...base, name: 'x', timeoutSeconds: 31 }), /from 1 to 30/);
    assert.throws(() => defineValidatingWebhook({ ...base, name: 'x', rules: [] }), /at least one resource/);
  });
});

describe('defineMutatingWebhook', () => {
  const defaults = defineMutatingWebhook<V1ConfigMap>({
    name: 'config-defaults',
    rules: [{ resource: resources.configmaps, operations: ['CREATE'] }],
    reinvocationPolicy: 'IfNeeded',
    mutate: ({ object }) => {
      if (!object) return undefined;
      object.data = { size: 'small', ...object.data };
      object.metadata = { ...object.metadata, annotations: { 'example.com/defaulted': 'true' } };
      return object;
    },
  });

  it('answers with the JSON Patch from the object to the returned one', async () => {
    const r = await admitForTest(defaults, { operation: 'CREATE', object: configMap({ a: '1' }) });
    assert.equal(r.outcome, 'patched');
    assert.equal(r.review.response.patchType, 'JSONPatch');
    assert.deepEqual(r.patch.map((op) => [op.op, op.path]).sort(), [
      ['add', '/data/size'],
      ['add', '/metadata/annotations'],
    ]);
    assert.deepEqual(r.object?.data, { a: '1', size: 'small' });
    assert.equal(r.object?.metadata?.annotations?.['example.com/defaulted'], 'true');
    assert.equal(defaults.reinvocationPolicy, 'IfNeeded');
  });

  it('sends no patch when nothing changed, and escapes keys with a slash (RFC 6901)', async () => {
    const unchanged = await admitForTest(defaults, {
      operation: 'CREATE',
      object: {
        ...configMap({ size: 'small' }),
        metadata: { name: 'x', annotations: { 'example.com/defaulted': 'true' } },
      },
    });
    assert.equal(unchanged.outcome, 'allowed');
    assert.equal(unchanged.review.response.patch, undefined);
    const labelled = defineMutatingWebhook({
      name: 'label',
      rules: [{ resource: resources.configmaps, operations: ['CREATE'] }],
      mutate: ({ object }) =>
        object && {
          ...object,
          metadata: { ...object.metadata, labels: { 'team.example.com/owner': 'a~b' } },
        },
    });
    const r = await admitForTest(labelled, { operation: 'CREATE', object: configMap({}, { x: 'y' }) });
    assert.ok(
      r.patch.some((op) => op.path === '/metadata/labels/team.example.com~1owner'),
      JSON.stringify(r.patch),
    );
    assert.deepEqual(r.object?.metadata?.labels, { 'team.example.com/owner': 'a~b' });
  });

  it('allows a DELETE without calling mutate (there is no object to change)', async () => {
    let called = false;
    const w = defineMutatingWebhook({
      name: 'm',
      rules: [{ resource: resources.configmaps, operations: ['DELETE'] }],
      mutate: () => {
        called = true;
        return undefined;
      },
    });
    const r = await admitForTest(w, { operation: 'DELETE', oldObject: configMap({}) });
    assert.equal(r.allowed, true);
    assert.equal(called, false);
  });
});

describe('a failing handler is answered per failurePolicy', () => {
  const failing = (failurePolicy: 'Fail' | 'Ignore', timeoutSeconds = 5) =>
    defineValidatingWebhook({
      name: 'failing',
      failurePolicy,
      timeoutSeconds,
      rules: [{ resource: resources.configmaps, operations: ['CREATE'] }],
      validate: () => {
        throw new Error('the quota service is down');
      },
    });

  it('Fail: denied with the error message, code 500', async () => {
    const r = await admitForTest(failing('Fail'), { operation: 'CREATE', object: configMap({}) });
    assert.equal(r.allowed, false);
    assert.equal(r.outcome, 'failed');
    assert.deepEqual(r.status, { code: 500, reason: 'InternalError', message: 'the quota service is down' });
  });

  it('Ignore: allowed, with a warning naming the webhook and the error', async () => {
    const r = await admitForTest(failing('Ignore'), { operation: 'CREATE', object: configMap({}) });
    assert.equal(r.allowed, true);
    assert.equal(r.outcome, 'failed');
    assert.match(r.warnings[0] ?? '', /webhook failing failed .*Ignore: the quota service is down/);
  });

  it('a handler that never answers is given up on at 80% of timeoutSeconds', async () => {
    const hanging = defineValidatingWebhook({
      name: 'hanging',
      timeoutSeconds: 1,
      rules: [{ resource: resources.configmaps, operations: ['CREATE'] }],
      validate: () => new Promise<undefined>(() => undefined),
    });
    const started = performance.now();
    const r = await admitForTest(hanging, { operation: 'CREATE', object: configMap({}) });
    const took = performance.now() - started;
    assert.equal(r.allowed, false);
    assert.match(r.status?.message ?? '', /no answer within 800 ms/);
    assert.ok(took >= 790 && took < 1000, `answered after ${took} ms`);
  });
});

describe('the AdmissionReview boundary', () => {
  const ctx = { log: silentLogger() };
  it('answers 400 to a body without a request uid', async () => {
    const a = await answerAdmission(
      noEmptyValues,
      { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' },
      ctx,
    );
    assert.equal(a.status, 400);
    assert.equal(a.outcome, 'malformed');
  });

  it('answers a malformed request that has a uid per the failure policy, echoing the uid', async () => {
    const a = await answerAdmission(
      noEmptyValues,
      {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { uid: 'u-1', operation: 'SQUASH' },
      },
      ctx,
    );
    assert.equal(a.status, 200);
    const body = a.body as { response: { uid: string; allowed: boolean; status?: { code?: number } } };
    assert.equal(body.response.uid, 'u-1');
    assert.equal(body.response.allowed, false);
    assert.equal(body.response.status?.code, 500);
  });
});
