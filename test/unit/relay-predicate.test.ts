// The primary predicate: status-only updates do not enqueue (GenerationChangedPredicate & co).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';
import type { WatchEvent } from '../../functions/contract/controller.ts';
import { primaryEventPasses } from '../../relay/predicate.ts';

const obj = (meta: Partial<V1ObjectMeta> = {}): KubernetesObject => ({
  apiVersion: 'samplecontroller.k8s.io/v1alpha1',
  kind: 'Foo',
  metadata: { name: 'a', namespace: 'ns', resourceVersion: '1', generation: 1, ...meta },
});
const modified = (oldMeta: Partial<V1ObjectMeta>, newMeta: Partial<V1ObjectMeta>): WatchEvent => ({
  type: 'MODIFIED',
  oldObject: obj(oldMeta),
  object: obj({ resourceVersion: '2', ...newMeta }),
});

describe('primaryEventPasses', () => {
  it('drops a status-only update (same generation, same metadata)', () => {
    assert.equal(primaryEventPasses(modified({}, {})), false);
  });

  it('passes a spec change (generation bumped)', () => {
    assert.equal(primaryEventPasses(modified({ generation: 1 }, { generation: 2 })), true);
  });

  for (const [field, before, after] of [
    ['labels', { a: '1' }, { a: '2' }],
    ['labels', undefined, { a: '1' }],
    ['annotations', { x: 'y' }, {}],
    ['deletionTimestamp', undefined, '2026-01-01T00:00:00Z'],
    ['finalizers', ['levelset.dev/cleanup'], []],
    ['ownerReferences', undefined, [{ apiVersion: 'v1', kind: 'X', name: 'o', uid: 'u' }]],
  ] as const) {
    it(`passes a change of ${field} at the same generation (${JSON.stringify(before)} → ${JSON.stringify(after)})`, () => {
      assert.equal(
        primaryEventPasses(
          modified({ [field]: before } as Partial<V1ObjectMeta>, { [field]: after } as Partial<V1ObjectMeta>),
        ),
        true,
      );
    });
  }

  it('treats absent, empty map and empty list alike, and ignores label order', () => {
    assert.equal(primaryEventPasses(modified({ labels: undefined, finalizers: [] }, { labels: {} })), false);
    assert.equal(
      primaryEventPasses(modified({ labels: { a: '1', b: '2' } }, { labels: { b: '2', a: '1' } })),
      false,
    );
  });

  it('ignores other metadata (resourceVersion, managedFields)', () => {
    assert.equal(
      primaryEventPasses(
        modified({ resourceVersion: '7' }, { resourceVersion: '8', managedFields: [{ manager: 'm' }] }),
      ),
      false,
    );
  });

  it('passes every update of an object without a generation (e.g. a Secret)', () => {
    assert.equal(primaryEventPasses(modified({ generation: undefined }, { generation: undefined })), true);
  });

  it('passes ADDED, DELETED, and MODIFIED without a cached old object', () => {
    assert.equal(primaryEventPasses({ type: 'ADDED', object: obj() }), true);
    assert.equal(primaryEventPasses({ type: 'DELETED', object: obj() }), true);
    assert.equal(primaryEventPasses({ type: 'MODIFIED', object: obj() }), true);
  });
});
