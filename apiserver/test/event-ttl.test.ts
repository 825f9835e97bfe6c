/**
 * Events expire after `eventTtlMs` without a write (kube-apiserver's `--event-ttl`), so that a
 * server that runs for hours does not keep every Event ever recorded (decision 71).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { EVENTS_STORAGE, EventExpiry } from '../event-ttl.ts';
import { startLocalApiServer } from '../index.ts';
import type { KubeObject } from '../resources.ts';
import { objectKey, Store, type StoreEvent } from '../store.ts';
import { waitFor } from './wait.ts';

const event = (name: string, count = 1): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { namespace: 'default', name },
  count,
});

test('an Event not written for the TTL is deleted; a write renews its lease; other objects stay', () => {
  let now = 0;
  const store = new Store({ now: () => now });
  const expiry = new EventExpiry(store, 1000, () => now);
  const seen: StoreEvent[] = [];
  store.subscribe((e) => {
    expiry.onEvent(e);
    seen.push(e);
  });
  const [a, b] = [objectKey('default', 'a'), objectKey('default', 'b')];
  store.create(EVENTS_STORAGE, a, event('a'));
  store.create(EVENTS_STORAGE, b, event('b'));
  store.create('/configmaps', objectKey('default', 'c'), {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { namespace: 'default', name: 'c' },
  });
  now = 600;
  store.update(EVENTS_STORAGE, a, event('a', 2)); // a repeat: its lease starts again
  now = 999;
  assert.equal(expiry.expire(), 0);
  now = 1000;
  assert.equal(expiry.expire(), 1);
  assert.equal(store.get(EVENTS_STORAGE, b), undefined);
  assert.ok(store.get(EVENTS_STORAGE, a));
  assert.deepEqual(
    seen.filter((e) => e.type === 'DELETED').map((e) => e.key),
    [b],
  );
  now = 1600;
  assert.equal(expiry.expire(), 1);
  assert.equal(expiry.size, 0);
  assert.ok(store.get('/configmaps', objectKey('default', 'c')));
  // One deleted by a client meanwhile is not deleted twice.
  store.create(EVENTS_STORAGE, b, event('b'));
  store.delete(EVENTS_STORAGE, b);
  now = 5000;
  assert.equal(expiry.expire(), 0);
});

test('the local API server deletes an Event eventTtlMs after its last write', async () => {
  const server = await startLocalApiServer({ eventTtlMs: 200 });
  try {
    const core = server.kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespacedEvent({
      namespace: 'default',
      body: {
        metadata: { name: 'e1' },
        involvedObject: { kind: 'ConfigMap', namespace: 'default', name: 'c' },
        reason: 'Synced',
        message: 'synced',
      },
    });
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'c' } } });
    await waitFor(async () => (await core.listNamespacedEvent({ namespace: 'default' })).items.length === 0, {
      message: 'the Event expired',
    });
    await core.readNamespacedConfigMap({ namespace: 'default', name: 'c' });
  } finally {
    await server.stop();
  }
});
