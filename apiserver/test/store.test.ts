import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { KubeObject } from '../resources.ts';
import { objectKey, Store } from '../store.ts';

const S = '/configmaps';
const cm = (namespace: string, name: string, v = '1'): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { namespace, name },
  data: { v },
});
const put = (s: Store, ns: string, name: string, v?: string) =>
  s.create(S, objectKey(ns, name), cm(ns, name, v));
const names = (objs: readonly Readonly<KubeObject>[]) =>
  objs.map((o) => `${o.metadata.namespace}/${o.metadata.name}=${(o.data as { v: string }).v}`);
function walked(s: Store, range: { namespace?: string; from?: string }, rv?: number): string[] {
  const out: Readonly<KubeObject>[] = [];
  if (rv === undefined) s.walk(S, range, (o) => void out.push(o));
  else assert.ok(s.walkAt(S, rv, range, (o) => void out.push(o)));
  return names(out);
}

test('walk: key order, a namespace is a key prefix, from is inclusive, false stops', () => {
  const s = new Store();
  for (const [ns, n] of [
    ['b', 'x'],
    ['a', 'z'],
    ['ab', 'a'],
    ['a', 'y'],
  ] as const)
    put(s, ns, n);
  assert.deepEqual(walked(s, {}), ['a/y=1', 'a/z=1', 'ab/a=1', 'b/x=1']);
  assert.deepEqual(walked(s, { namespace: 'a' }), ['a/y=1', 'a/z=1']);
  assert.deepEqual(walked(s, { namespace: 'a', from: 'a/z' }), ['a/z=1']);
  assert.deepEqual(walked(s, { from: 'a/z\u0000' }), ['ab/a=1', 'b/x=1']);
  const firstTwo: string[] = [];
  s.walk(S, {}, (_o, key) => firstTwo.push(key) < 2);
  assert.deepEqual(firstTwo, ['a/y', 'a/z']);
  put(s, 'a', 'a'); // a new key is walked in its place
  assert.deepEqual(walked(s, { namespace: 'a' }), ['a/a=1', 'a/y=1', 'a/z=1']);
});

test('walkAt: the state at a resourceVersion, with later updates, creates and deletes undone', () => {
  const s = new Store();
  for (const n of ['a', 'b', 'c', 'd']) put(s, 'ns', n);
  put(s, 'other', 'a');
  const rv = s.currentRv();
  const before = walked(s, {});
  s.update(S, 'ns/b', cm('ns', 'b', '2'));
  s.delete(S, 'ns/c');
  put(s, 'ns', 'bb');
  s.update(S, 'ns/b', cm('ns', 'b', '3'));
  assert.deepEqual(walked(s, {}, rv), before);
  assert.deepEqual(walked(s, { namespace: 'ns', from: 'ns/b\u0000' }, rv), ['ns/c=1', 'ns/d=1']);
  assert.deepEqual(walked(s, {}), ['ns/a=1', 'ns/b=3', 'ns/bb=1', 'ns/d=1', 'other/a=1']);
  assert.deepEqual(names(s.snapshot(S, rv, 'ns') ?? []), before.slice(0, 4));
});

test('walkAt: a resourceVersion older than the kept history is refused', () => {
  const s = new Store({ historySize: 2 });
  put(s, 'ns', 'a');
  const rv = s.currentRv();
  for (let i = 0; i < 3; i++) s.update(S, 'ns/a', cm('ns', 'a', String(i)));
  assert.equal(
    s.walkAt(S, rv, {}, () => assert.fail('visited')),
    false,
  );
  assert.equal(s.snapshot(S, rv), undefined);
});

test('historyMs: events older than it are dropped at the next change, as etcd compaction (decision 68)', () => {
  let now = 1_000_000;
  const s = new Store({ historySize: 1000, historyMs: 300_000, now: () => now });
  put(s, 'ns', 'a');
  const first = s.currentRv();
  now += 200_000;
  s.update(S, 'ns/a', cm('ns', 'a', '2'));
  const second = s.currentRv();
  // Both events within 5 minutes: a watch from before either resumes.
  assert.equal(s.eventsSince(S, first - 1)?.length, 2);
  now += 150_000; // the first event is now 350 s old, the second 150 s
  assert.equal(s.eventsSince(S, first - 1)?.length, 2, 'nothing dropped before the next change');
  s.update(S, 'ns/a', cm('ns', 'a', '3'));
  assert.equal(s.eventsSince(S, first - 1), undefined, 'the first event is gone: 410 Expired');
  assert.deepEqual(
    s.eventsSince(S, first)?.map((e) => e.rv),
    [second, s.currentRv()],
  );
  assert.equal(s.oldestAvailable(S), first);
  assert.equal(s.snapshot(S, first - 1), undefined);
  assert.deepEqual(names(s.snapshot(S, second) ?? []), ['ns/a=2']);
  // Another storage's history is its own.
  s.create('/secrets', 'ns/x', {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { namespace: 'ns', name: 'x' },
  });
  assert.equal(s.eventsSince('/secrets', first)?.length, 1);
});

test('the versions of an object share the strings no write changed (one copy of a large field)', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const s = new Store({ historySize: 100 });
  const big = 'x'.repeat(1 << 20);
  const secret = (v: number): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { namespace: 'ns', name: 'a', labels: { v: String(v) } },
    data: { big, v: String(v) },
    list: [{ big }],
  });
  s.create('/secrets', 'ns/a', secret(0));
  gc();
  const before = getHeapStatistics().used_heap_size;
  for (let v = 1; v <= 40; v++) s.update('/secrets', 'ns/a', secret(v));
  gc();
  const grownMiB = (getHeapStatistics().used_heap_size - before) / 2 ** 20;
  assert.equal(s.eventsSince('/secrets', 0)?.length, 41);
  // 40 versions, each with 2 MiB of strings equal to the previous version's: a copy each would be 80 MiB.
  assert.ok(grownMiB < 8, `the history grew ${grownMiB.toFixed(1)} MiB for 40 versions`);
  assert.deepEqual(s.get('/secrets', 'ns/a')?.data, { big, v: '40' });
});
