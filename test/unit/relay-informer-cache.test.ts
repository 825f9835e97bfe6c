// What the informer's cache keeps of an object (cacheEntryOf), and that the predicate and the maps
// read the same from an object rebuilt from it as from the object itself.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ResourceType } from '../../core/contract/controller.ts';
import { mapToOwnerAnnotation } from '../../functions/kit/cross-namespace.ts';
import { mapThroughControllers } from '../../functions/kit/map.ts';
import { cacheEntryOf, objectOfCacheEntry, resourceVersionOfCacheEntry } from '../../relay/informer.ts';
import { primaryEventPasses } from '../../relay/predicate.ts';

const deployments: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'deployments',
  kind: 'Deployment',
  namespaced: true,
};
const deployment: KubernetesObject = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: {
    name: 'web',
    namespace: 'ns',
    uid: 'uid-web',
    resourceVersion: '7',
    generation: 3,
    creationTimestamp: new Date('2026-01-01T00:00:00Z'),
    labels: { app: 'web' },
    annotations: { 'example.com/owner': 'other/icecream' },
    finalizers: ['example.com/cleanup'],
    ownerReferences: [
      { apiVersion: 'example.com/v1', kind: 'Icecream', name: 'vanilla', uid: 'uid-ice', controller: true },
    ],
  },
};

describe('the informer cache entry', () => {
  it('gives its resourceVersion without parsing the rest (what the relay publishes with a key)', () => {
    assert.equal(resourceVersionOfCacheEntry(cacheEntryOf(deployment)), '7');
    const unversioned = { ...deployment, metadata: { ...deployment.metadata, resourceVersion: undefined } };
    assert.equal(resourceVersionOfCacheEntry(cacheEntryOf(unversioned)), undefined);
    assert.equal(resourceVersionOfCacheEntry(cacheEntryOf({ metadata: { name: 'x' } })), undefined);
  });

  it('keeps identity, resourceVersion, generation and the significant metadata, and nothing else', () => {
    const rebuilt = objectOfCacheEntry('ns/web', cacheEntryOf(deployment), deployments);
    const { creationTimestamp: _dropped, ...kept } = deployment.metadata ?? {};
    assert.deepEqual(rebuilt, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: kept });
  });

  it('keeps only what is set: a cluster-scoped object with no labels, annotations, finalizers or owners', () => {
    const bare = cacheEntryOf({ metadata: { name: 'a', resourceVersion: '1', uid: 'u' } });
    assert.equal(bare, '["1","u"]');
    assert.deepEqual(objectOfCacheEntry('a', bare, deployments).metadata, {
      name: 'a',
      uid: 'u',
      resourceVersion: '1',
    });
  });

  it('answers the primary predicate as the whole old object would', () => {
    const old = objectOfCacheEntry('ns/web', cacheEntryOf(deployment), deployments);
    const statusOnly = { ...deployment, metadata: { ...deployment.metadata, resourceVersion: '8' } };
    assert.equal(primaryEventPasses({ type: 'MODIFIED', object: statusOnly, oldObject: old }), false);
    const relabelled = { ...statusOnly, metadata: { ...statusOnly.metadata, labels: { app: 'api' } } };
    assert.equal(primaryEventPasses({ type: 'MODIFIED', object: relabelled, oldObject: old }), true);
  });

  it('gives a tombstone the maps read as they read the object', () => {
    const tombstone = objectOfCacheEntry('ns/web', cacheEntryOf(deployment), deployments);
    const toIcecream = mapThroughControllers({ group: 'example.com', kind: 'Icecream' });
    assert.deepEqual(toIcecream({ type: 'DELETED', object: tombstone }, { primaryKeys: () => [] }), [
      { namespace: 'ns', name: 'vanilla' },
    ]);
    const byAnnotation = mapToOwnerAnnotation({ ownerAnnotation: 'example.com/owner' });
    assert.deepEqual(byAnnotation({ type: 'DELETED', object: tombstone }, { primaryKeys: () => [] }), [
      { namespace: 'other', name: 'icecream' },
    ]);
  });
});
