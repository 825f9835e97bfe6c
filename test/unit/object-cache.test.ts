// The in-process mode's informer cache (functions/runtime/object-cache.ts) without an API server:
// what it answers, what it leaves to a live read, and read-your-writes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Controller } from '../../core/contract/controller.ts';
import { configmaps, deployments, secrets } from '../../functions/kit/resources.ts';
import {
  InformerObjectCache,
  matches,
  type ObjectStore,
  parseSelector,
} from '../../functions/runtime/object-cache.ts';

const controller = { name: 'c', cachedReads: [deployments, secrets] } as unknown as Controller;
const dep = (name: string, rv: string, labels: Record<string, string> = { app: 'a' }, ns = 'ns') =>
  ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { namespace: ns, name, uid: `uid-${name}`, resourceVersion: rv, labels },
  }) as KubernetesObject;

describe('InformerObjectCache', () => {
  it('parses equality selectors and leaves set-based ones to a live read', () => {
    const terms = parseSelector('a=1,b==2,c!=3,d,!e');
    assert.ok(terms);
    assert.equal(matches(terms, { a: '1', b: '2', d: '' }), true);
    assert.equal(matches(terms, { a: '1', b: '2', c: '3', d: '' }), false);
    assert.equal(matches(terms, { a: '1', b: '2', d: '', e: 'x' }), false);
    assert.equal(matches(terms, { a: '1', b: '2' }), false);
    assert.equal(parseSelector('a in (1,2)'), undefined);
    assert.deepEqual(parseSelector(undefined), []);
  });

  it('keeps no Secrets, no kind it was not asked for, no informer with a selector', () => {
    const cache = new InformerObjectCache([controller]);
    assert.equal(cache.sinkFor({ resource: secrets }), undefined);
    assert.equal(cache.sinkFor({ resource: configmaps }), undefined);
    assert.equal(cache.sinkFor({ resource: deployments, labelSelector: 'a=1' }), undefined);
    assert.ok(cache.sinkFor({ resource: deployments }));
  });

  it('answers once synced, within its namespace, copies', () => {
    const cache = new InformerObjectCache([controller]);
    const store = cache.sinkFor({ resource: deployments, namespace: 'ns' });
    store?.put(dep('x', '1'));
    assert.equal(cache.get(deployments, 'ns', 'x'), undefined, 'not synced: live');
    store?.synced();
    const got = cache.get(deployments, 'ns', 'x')?.object;
    assert.equal(got?.metadata?.resourceVersion, '1');
    (got?.metadata as { name: string }).name = 'changed';
    assert.equal(cache.get(deployments, 'ns', 'x')?.object?.metadata?.name, 'x');
    assert.deepEqual(cache.get(deployments, 'ns', 'y'), { object: undefined });
    assert.equal(cache.get(deployments, 'other', 'x'), undefined, 'another namespace: live');
    assert.deepEqual(
      cache.list(deployments, 'ns', 'app=a')?.map((o) => o.metadata?.name),
      ['x'],
    );
    assert.deepEqual(cache.list(deployments, 'ns', 'app=b'), []);
    assert.equal(cache.list(deployments, '', 'app=a'), undefined, 'every namespace: live');
    store?.remove('ns/x');
    assert.deepEqual(cache.list(deployments, 'ns', 'app=a'), []);
  });

  it('reads live what was written until the informer delivers it, or until the wait expires', () => {
    let now = 0;
    const cache = new InformerObjectCache([controller], { ttlMs: 1000, now: () => now });
    const store = cache.sinkFor({ resource: deployments });
    store?.synced();
    cache.wrote(deployments, dep('x', '5'));
    assert.equal(cache.get(deployments, 'ns', 'x'), undefined);
    assert.equal(cache.list(deployments, 'ns', 'app=a'), undefined);
    assert.deepEqual(cache.list(deployments, 'ns', 'app=other'), [], 'a LIST it cannot see answers');
    store?.put(dep('x', '5'));
    assert.equal(cache.pendingWrites, 0);
    assert.equal(cache.get(deployments, 'ns', 'x')?.object?.metadata?.resourceVersion, '5');
    // A delete: live until the informer has it gone.
    cache.deleted(deployments, dep('x', '5'));
    assert.equal(cache.list(deployments, 'ns', 'app=a'), undefined);
    store?.remove('ns/x');
    assert.deepEqual(cache.list(deployments, 'ns', 'app=a'), []);
    // Never delivered (a relist skipped it): the informer's again after the wait.
    cache.wrote(deployments, dep('y', '9'));
    assert.equal(cache.get(deployments, 'ns', 'y'), undefined);
    now = 1001;
    assert.deepEqual(cache.get(deployments, 'ns', 'y'), { object: undefined });
    assert.equal(cache.pendingWrites, 0);
  });

  it('counts a later resourceVersion as the write delivered (another writer followed it); opaque ones only when equal', () => {
    const cache = new InformerObjectCache([controller]);
    const store = cache.sinkFor({ resource: deployments });
    store?.synced();
    cache.wrote(deployments, dep('x', '998'));
    store?.put(dep('x', '997'));
    assert.equal(cache.get(deployments, 'ns', 'x'), undefined, 'an older version: still live');
    store?.put(dep('x', '1002'));
    assert.equal(cache.pendingWrites, 0, '1002 follows 998 (not as strings)');
    assert.equal(cache.get(deployments, 'ns', 'x')?.object?.metadata?.resourceVersion, '1002');
    cache.wrote(deployments, dep('y', 'b7'));
    store?.put(dep('y', 'c1'));
    assert.equal(cache.get(deployments, 'ns', 'y'), undefined, 'not ordered: awaited until equal');
    store?.put(dep('y', 'b7'));
    assert.equal(cache.pendingWrites, 0);
  });

  it('lists by its label index: a relabelled object leaves its old label, a removed one every label', () => {
    const cache = new InformerObjectCache([controller]);
    const store = cache.sinkFor({ resource: deployments });
    store?.synced();
    const names = (selector: string) => cache.list(deployments, 'ns', selector)?.map((o) => o.metadata?.name);
    store?.put(dep('a', '1', { app: 'a', tier: 'web' }));
    store?.put(dep('b', '2', { app: 'b', tier: 'web' }));
    store?.put(dep('c', '3', { app: 'a' }, 'other'));
    assert.deepEqual(names('app=a'), ['a']);
    assert.deepEqual(names('tier=web,app!=a'), ['b']);
    assert.deepEqual(names('tier'), ['a', 'b'], 'no equality term: every object checked');
    store?.put(dep('a', '4', { app: 'b', tier: 'web' }));
    assert.deepEqual(names('app=a'), []);
    assert.deepEqual(names('app=b')?.sort(), ['a', 'b']);
    store?.remove('ns/b');
    assert.deepEqual(names('app=b'), ['a']);
    assert.deepEqual(names('tier=web'), ['a']);
  });

  it("reads a controller's children by the owner's label, not every child of the controller", () => {
    const cache = new InformerObjectCache([controller]);
    const store = cache.sinkFor({ resource: deployments });
    store?.synced();
    for (let i = 0; i < 50; i++)
      store?.put(dep(`d${i}`, `${i + 1}`, { controller: 'foo', owner: `uid-${i}` }));
    const terms = parseSelector('controller=foo,owner=uid-7') ?? [];
    const read = [...((store as ObjectStore | undefined)?.candidates('ns', terms) ?? [])].map(
      (o) => o.metadata?.name,
    );
    assert.deepEqual(read, ['d7'], 'the owner label is the more selective: one candidate, not 50');
    assert.deepEqual(
      cache.list(deployments, 'ns', 'owner=uid-7,controller=foo')?.map((o) => o.metadata?.name),
      ['d7'],
      'whatever the terms order',
    );
    assert.deepEqual(
      cache.list(deployments, 'ns', 'controller=foo,owner=none'),
      [],
      'a value nobody carries',
    );
    assert.deepEqual(
      cache.list(deployments, 'ns', 'controller=bar,owner=uid-7'),
      [],
      'every term still holds',
    );
  });
  it("knows the echo of a controller's own write: exactly the version it answered, delivered", () => {
    const cache = new InformerObjectCache([controller]);
    const store = cache.sinkFor({ resource: deployments });
    store?.synced();
    cache.forController('foo').wrote(deployments, dep('x', '5'));
    store?.put(dep('x', '5'));
    // The relay asks with its event's object: another object of the same version.
    assert.equal(cache.echoOf(deployments, dep('x', '5')), 'foo');
    assert.equal(cache.echoOf(deployments, dep('x', '5')), undefined, 'answered once');
    assert.equal(cache.pendingWrites, 0);
    // Someone else's later change, and a version the informer delivered after the write's: no echo.
    store?.put(dep('x', '6'));
    assert.equal(cache.echoOf(deployments, dep('x', '6')), undefined);
    cache.forController('foo').wrote(deployments, dep('y', '7'));
    store?.put(dep('y', '8'));
    assert.equal(
      cache.echoOf(deployments, dep('y', '8')),
      undefined,
      'a later version shows the write, but is not its echo',
    );
    // A write not made through a controller's view: no writer to skip.
    cache.wrote(deployments, dep('z', '9'));
    store?.put(dep('z', '9'));
    assert.equal(cache.echoOf(deployments, dep('z', '9')), undefined);
  });
});
