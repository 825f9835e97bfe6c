// The Foo's admission webhooks, called as the `admission` function would answer them, with no server.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admitForTest } from 'levelset/kit/testing';
import { type FooObject, fooDefaults, fooScale, SCALERS_GROUP } from '../controllers/foo/webhooks.ts';

const foo = (spec: FooObject['spec'], name = 'example-foo'): FooObject => ({
  apiVersion: 'samplecontroller.k8s.io/v1alpha1',
  kind: 'Foo',
  metadata: { name, namespace: 'team-a' },
  spec,
});

describe('foo-defaults', () => {
  it('names the Deployment after the Foo when the spec does not', async () => {
    const r = await admitForTest<FooObject>(fooDefaults, {
      operation: 'CREATE',
      object: foo({ replicas: 1 }),
    });
    assert.deepEqual(r.patch, [{ op: 'add', path: '/spec/deploymentName', value: 'example-foo' }]);
    assert.deepEqual(r.object?.spec, { replicas: 1, deploymentName: 'example-foo' });
  });

  it('leaves a given name, and a Foo whose name the server generates, alone', async () => {
    const named = await admitForTest(fooDefaults, {
      operation: 'CREATE',
      object: foo({ deploymentName: 'web' }),
    });
    assert.deepEqual(named.patch, []);
    const generated = await admitForTest(fooDefaults, { operation: 'CREATE', object: foo({}, '') });
    assert.deepEqual(generated.patch, []);
  });
});

describe('foo-scale', () => {
  it(`refuses more than 3 replicas to a user outside ${SCALERS_GROUP}`, async () => {
    const r = await admitForTest(fooScale, {
      operation: 'CREATE',
      object: foo({ replicas: 5 }),
      userInfo: { username: 'dev', groups: ['system:authenticated'] },
    });
    assert.equal(r.allowed, false);
    assert.equal(r.status?.code, 403);
    assert.match(r.status?.message ?? '', /more than 3 replicas only for members of the group foo-scalers/);
  });

  it(`allows it to a member of ${SCALERS_GROUP}, and any scale-down`, async () => {
    const member = await admitForTest(fooScale, {
      operation: 'CREATE',
      object: foo({ replicas: 5 }),
      userInfo: { username: 'ops', groups: [SCALERS_GROUP] },
    });
    assert.equal(member.allowed, true);
    assert.deepEqual(member.warnings, ['spec.replicas 5: more than 3, allowed to ops (foo-scalers)']);
    const down = await admitForTest(fooScale, {
      operation: 'UPDATE',
      object: foo({ replicas: 4 }),
      oldObject: foo({ replicas: 6 }),
      userInfo: { username: 'dev' },
    });
    assert.equal(down.allowed, true);
  });
});
