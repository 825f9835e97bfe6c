import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { MapContext, Watch, WatchEvent } from '../../core/contract/controller.ts';
import type { Key } from '../../core/contract/key.ts';
import { apiStatusOf, FailedWritesError, isConflict, isTransient } from '../../core/k8s/errors.ts';
import { parseSecretReplicatorConfig } from '../../functions/controllers/secret-replicator/config.ts';
import {
  createSecretReplicator,
  NAMESPACES,
  SECRETS,
  secretReplicator,
} from '../../functions/controllers/secret-replicator/index.ts';
import { COPY_LABEL, SOURCE_ANNOTATION } from '../../functions/controllers/secret-replicator/plan.ts';

describe('config', () => {
  test('defaults', () => {
    assert.deepEqual(parseSecretReplicatorConfig({}), {
      sourceNamespace: 'levelset-system',
      excludeNamespaces: ['kube-system', 'kube-public', 'kube-node-lease'],
    });
  });

  test('explicit values; the exclude list is trimmed and may be empty', () => {
    const c = parseSecretReplicatorConfig({
      LEVELSET_SOURCE_NAMESPACE: 'shared',
      LEVELSET_EXCLUDE_NAMESPACES: ' kube-system , ,team-x',
    });
    assert.deepEqual(c, { sourceNamespace: 'shared', excludeNamespaces: ['kube-system', 'team-x'] });
    assert.deepEqual(parseSecretReplicatorConfig({ LEVELSET_EXCLUDE_NAMESPACES: '' }).excludeNamespaces, []);
  });

  test('invalid values are a clear error naming the variable', () => {
    assert.throws(
      () => parseSecretReplicatorConfig({ LEVELSET_SOURCE_NAMESPACE: 'Not_A_Namespace' }),
      /invalid secret-replicator configuration: LEVELSET_SOURCE_NAMESPACE: /,
    );
    assert.throws(
      () => parseSecretReplicatorConfig({ LEVELSET_EXCLUDE_NAMESPACES: 'ok,BAD NS' }),
      /LEVELSET_EXCLUDE_NAMESPACES/,
    );
  });
});

const controller = createSecretReplicator({
  config: { sourceNamespace: 'shared', excludeNamespaces: ['kube-system'] },
});
const primaries: Key[] = [
  { namespace: 'shared', name: 'a' },
  { namespace: 'shared', name: 'b' },
];
const mapCtx: MapContext = { primaryKeys: () => primaries };

function watchOf(predicate: (w: Watch) => boolean): Watch {
  const found = controller.watches.filter(predicate);
  assert.equal(found.length, 1);
  return found[0] as Watch;
}

function event(type: WatchEvent['type'], object: KubernetesObject): WatchEvent {
  return { type, object };
}

/** PartialObjectMetadata, as the relay holds it: no data. */
function meta(
  namespace: string | undefined,
  name: string,
  annotations?: Record<string, string>,
): KubernetesObject {
  return {
    apiVersion: 'meta.k8s.io/v1',
    kind: 'PartialObjectMetadata',
    metadata: { namespace, name, annotations },
  };
}

describe('controller module', () => {
  test('identity, primary and rbac', () => {
    assert.equal(controller.name, 'secret-replicator');
    assert.deepEqual(controller.primary, SECRETS);
    assert.deepEqual(secretReplicator.rbac, [
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
      { apiGroups: [''], resources: ['namespaces'], verbs: ['list'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'get', 'patch'] },
    ]);
    assert.equal(controller.watches.length, 3);
    assert.equal(typeof controller.listKeys, 'function');
  });

  test('watch 1: Secrets in the source namespace map to their own key', () => {
    const w = watchOf((x) => x.resource === SECRETS && x.namespace !== undefined);
    assert.equal(w.namespace, 'shared');
    assert.equal(w.labelSelector, undefined);
    for (const type of ['ADDED', 'MODIFIED', 'DELETED'] as const) {
      assert.deepEqual(w.map(event(type, meta('shared', 'db')), mapCtx), [
        { namespace: 'shared', name: 'db' },
      ]);
    }
    assert.deepEqual(w.map(event('ADDED', meta('elsewhere', 'db')), mapCtx), []);
  });

  test('watch 2: an ADDED Namespace maps to the key of each copy it needs, in it; MODIFIED and DELETED are dropped', () => {
    const w = watchOf((x) => x.resource === NAMESPACES);
    assert.equal(w.namespace, undefined);
    // Work for that namespace only: `team-new/<source>`, never the sources' own keys.
    assert.deepEqual(w.map(event('ADDED', meta(undefined, 'team-new')), mapCtx), [
      { namespace: 'team-new', name: 'a' },
      { namespace: 'team-new', name: 'b' },
    ]);
    assert.deepEqual(w.map(event('MODIFIED', meta(undefined, 'team-new')), mapCtx), []);
    assert.deepEqual(w.map(event('DELETED', meta(undefined, 'team-new')), mapCtx), []);
  });

  test("watch 3: a copy (any namespace, by label) maps to its source when modified, to its own key when deleted, to nothing when created (the echo of a create), from metadata only; a former source's copy to that source", () => {
    const w = watchOf((x) => x.labelSelector !== undefined);
    assert.deepEqual(w.resource, SECRETS);
    assert.equal(w.labelSelector, COPY_LABEL);
    assert.equal(w.namespace, undefined);
    const copy = meta('team-a', 'db', { [SOURCE_ANNOTATION]: 'shared/db' });
    assert.deepEqual(w.map(event('MODIFIED', copy), mapCtx), [{ namespace: 'shared', name: 'db' }]);
    // Deleted (by hand, or with its namespace): that namespace's work only.
    assert.deepEqual(w.map(event('DELETED', copy), mapCtx), [{ namespace: 'team-a', name: 'db' }]);
    // Created: the reconcile's own create (or the relay's initial LIST), never a key per copy.
    assert.deepEqual(w.map(event('ADDED', copy), mapCtx), []);
    // A copy of a source in another namespace than the source namespace (the configuration changed).
    const stray = meta('team-a', 'db', { [SOURCE_ANNOTATION]: 'old-shared/db' });
    for (const type of ['ADDED', 'DELETED'] as const)
      assert.deepEqual(w.map(event(type, stray), mapCtx), [{ namespace: 'old-shared', name: 'db' }]);
    assert.deepEqual(w.map(event('MODIFIED', meta('team-a', 'db')), mapCtx), [], 'annotation removed');
    assert.deepEqual(
      w.map(event('MODIFIED', meta('team-a', 'db', { [SOURCE_ANNOTATION]: 'garbage' })), mapCtx),
      [],
    );
  });

  test('the default instance reads its configuration lazily from the environment', () => {
    const saved = process.env.LEVELSET_SOURCE_NAMESPACE;
    try {
      // The cache is filled by the first read; the registry import alone must not read it.
      process.env.LEVELSET_SOURCE_NAMESPACE = 'lazy-ns';
      const w = secretReplicator.watches.find((x) => x.resource === SECRETS && x.labelSelector === undefined);
      assert.equal(w?.namespace, 'lazy-ns');
    } finally {
      if (saved === undefined) delete process.env.LEVELSET_SOURCE_NAMESPACE;
      else process.env.LEVELSET_SOURCE_NAMESPACE = saved;
    }
  });
});

describe("FailedWritesError (the kit's; the replicator throws it when some copies' writes failed)", () => {
  const failure = (status: number | undefined) => ({ op: 'update', target: 'team-a', status, error: {} });

  test('all 409s read as a conflict (re-run from a fresh read); otherwise the first status', () => {
    assert.equal(apiStatusOf(new FailedWritesError('copies of s/x', [failure(409), failure(409)])), 409);
    assert.ok(isConflict(new FailedWritesError('copies of s/x', [failure(409)])));
    assert.equal(apiStatusOf(new FailedWritesError('copies of s/x', [failure(500), failure(409)])), 500);
    assert.equal(
      apiStatusOf(new FailedWritesError('copies of s/x', [failure(undefined), failure(409)])),
      undefined,
    );
    const err = new FailedWritesError('copies of s/x', [failure(409), failure(503)]);
    assert.ok(isTransient(err));
    assert.match(
      err.message,
      /2 write\(s\) of copies of s\/x failed: update team-a \(409\), update team-a \(503\)/,
    );
  });
});
