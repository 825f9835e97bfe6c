// The primary predicate: status-only updates do not enqueue (GenerationChangedPredicate & co); the
// status predicate of a secondary watch that declares readsStatus; the kit's skipOwnCreates.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';
import type { WatchEvent } from '../../core/contract/controller.ts';
import { FIELD_MANAGER, skipOwnCreates, skipOwnWrites } from '../../functions/kit/index.ts';
import { primaryEventPasses, recordStatusRead, statusEventPasses } from '../../relay/predicate.ts';

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

describe('statusEventPasses (a secondary watch reading status.availableReplicas)', () => {
  /** A MODIFIED event whose old and new objects have the status reads given (as the informer records them). */
  const withReads = (
    oldRead: string | undefined,
    newRead: string | undefined,
    oldMeta: Partial<V1ObjectMeta> = {},
    newMeta: Partial<V1ObjectMeta> = {},
  ): WatchEvent => {
    const event = modified(oldMeta, newMeta);
    if (oldRead !== undefined && event.oldObject) recordStatusRead(event.oldObject, oldRead);
    if (newRead !== undefined) recordStatusRead(event.object, newRead);
    return event;
  };

  it('drops a status update that leaves what the reconcile reads as it was (readyReplicas, observedGeneration)', () => {
    assert.equal(statusEventPasses(withReads('[0]', '[0]')), false);
  });

  it('passes a status update that changes what the reconcile reads (availableReplicas 0 → 1)', () => {
    assert.equal(statusEventPasses(withReads('[0]', '[1]')), true);
  });

  it('passes a spec change (generation bumped) and a significant metadata change with the same read', () => {
    assert.equal(statusEventPasses(withReads('[1]', '[1]', { generation: 1 }, { generation: 2 })), true);
    assert.equal(statusEventPasses(withReads('[1]', '[1]', {}, { labels: { a: 'b' } })), true);
    assert.equal(
      statusEventPasses(withReads('[1]', '[1]', {}, { deletionTimestamp: new Date('2026-01-01T00:00:00Z') })),
      true,
    );
  });

  it("counts kube-controller-manager's rollout annotations as status, and no other annotation", () => {
    const revision = (n: string, extra: Record<string, string> = {}) => ({
      annotations: { 'deployment.kubernetes.io/revision': n, ...extra },
    });
    // The first revision numbered after the owner's create: no annotation before.
    assert.equal(statusEventPasses(withReads('[0]', '[0]', {}, revision('1'))), false);
    assert.equal(statusEventPasses(withReads('[0]', '[0]', revision('1'), revision('2'))), false);
    // ...unless what the owner reads changed with it.
    assert.equal(statusEventPasses(withReads('[0]', '[1]', {}, revision('1'))), true);
    // Another annotation beside it still passes.
    assert.equal(
      statusEventPasses(withReads('[0]', '[0]', revision('1'), revision('1', { team: 'a' }))),
      true,
    );
    // The primary predicate counts it as metadata: a controller of Deployments sees its rollouts.
    assert.equal(primaryEventPasses(modified({}, revision('1'))), true);
  });

  it('passes when either side has no recorded read (never drops what it did not compare)', () => {
    assert.equal(statusEventPasses(withReads(undefined, '[0]')), true);
    assert.equal(statusEventPasses(withReads('[0]', undefined)), true);
    assert.equal(statusEventPasses(withReads(undefined, undefined)), true);
  });

  it('passes ADDED and DELETED (a child deleted by someone else reaches its owner)', () => {
    const o = obj();
    recordStatusRead(o, '[1]');
    assert.equal(statusEventPasses({ type: 'ADDED', object: o }), true);
    assert.equal(statusEventPasses({ type: 'DELETED', object: o }), true);
  });

  it('passes every update of an object without a generation when the reads are equal', () => {
    assert.equal(
      statusEventPasses(withReads('[0]', '[0]', { generation: undefined }, { generation: undefined })),
      true,
    );
  });
});

describe('skipOwnCreates', () => {
  const managed = (...managers: string[]) =>
    obj({ managedFields: managers.map((manager) => ({ manager, operation: 'Update' })) });

  it("drops the ADDED of a child whose only field manager is Levelset's (the echo of its own create)", () => {
    assert.equal(skipOwnCreates({ type: 'ADDED', object: managed(FIELD_MANAGER) }), false);
    assert.equal(skipOwnCreates({ type: 'ADDED', object: managed(FIELD_MANAGER, FIELD_MANAGER) }), false);
  });

  it('passes the ADDED of a child another writer created or also wrote', () => {
    assert.equal(skipOwnCreates({ type: 'ADDED', object: managed('kubectl-create') }), true);
    assert.equal(
      skipOwnCreates({ type: 'ADDED', object: managed(FIELD_MANAGER, 'kube-controller-manager') }),
      true,
    );
  });

  it('passes the ADDED of a child without managedFields (nothing says who wrote it)', () => {
    assert.equal(skipOwnCreates({ type: 'ADDED', object: obj() }), true);
  });

  it("passes MODIFIED and DELETED of Levelset's own children (a change or deletion by someone else)", () => {
    assert.equal(
      skipOwnCreates({ type: 'MODIFIED', object: managed(FIELD_MANAGER), oldObject: obj() }),
      true,
    );
    assert.equal(skipOwnCreates({ type: 'DELETED', object: managed(FIELD_MANAGER) }), true);
  });
});

describe('skipOwnWrites', () => {
  /** managedFields entries `[manager, time]` as kube-apiserver writes them (whole seconds). */
  const written = (entries: [string, string][], meta: Partial<V1ObjectMeta> = {}) => ({
    managedFields: entries.map(([manager, time]) => ({
      manager,
      operation: manager === FIELD_MANAGER ? 'Apply' : 'Update',
      time: new Date(time),
    })),
    ...meta,
  });
  const kcm = 'kube-controller-manager';
  /** A Deployment Levelset applied at 10:00:05 after kube-controller-manager's status at 10:00:03. */
  const echo = (meta: Partial<V1ObjectMeta> = {}, oldMeta: Partial<V1ObjectMeta> = {}) =>
    modified(
      written(
        [
          [FIELD_MANAGER, '2026-11-29T10:00:01Z'],
          [kcm, '2026-11-29T10:00:03Z'],
        ],
        oldMeta,
      ),
      written(
        [
          [FIELD_MANAGER, '2026-11-29T10:00:05Z'],
          [kcm, '2026-11-29T10:00:03Z'],
        ],
        {
          generation: 2,
          ...meta,
        },
      ),
    );

  it("drops the MODIFIED that is the echo of Levelset's own apply (its manager wrote last, alone)", () => {
    assert.equal(skipOwnWrites(echo()), false);
    // A metadata-only apply keeps the generation.
    assert.equal(skipOwnWrites(echo({ generation: 1 })), false);
  });

  it("drops the ADDED of Levelset's own create, as skipOwnCreates", () => {
    const created = obj(written([[FIELD_MANAGER, '2026-11-29T10:00:01Z']]));
    assert.equal(skipOwnWrites({ type: 'ADDED', object: created }), false);
  });

  it('passes a write of another manager after, or in the same second as, Levelset', () => {
    const after = modified(
      written([[FIELD_MANAGER, '2026-11-29T10:00:05Z']]),
      written(
        [
          [FIELD_MANAGER, '2026-11-29T10:00:05Z'],
          ['kubectl-scale', '2026-11-29T10:00:09Z'],
        ],
        {
          generation: 2,
        },
      ),
    );
    assert.equal(skipOwnWrites(after), true);
    const sameSecond = modified(
      written([
        [FIELD_MANAGER, '2026-11-29T10:00:01Z'],
        [kcm, '2026-11-29T10:00:01Z'],
      ]),
      written([
        [FIELD_MANAGER, '2026-11-29T10:00:05Z'],
        [kcm, '2026-11-29T10:00:05Z'],
      ]),
    );
    assert.equal(skipOwnWrites(sameSecond), true);
  });

  it('passes what an apply cannot have done alone: a deletion, a generation moved twice, changed metadata', () => {
    assert.equal(skipOwnWrites(echo({ deletionTimestamp: new Date('2026-11-29T10:00:06Z') })), true);
    assert.equal(skipOwnWrites(echo({ generation: 3 })), true);
    assert.equal(skipOwnWrites(echo({ labels: { tier: 'web' } })), true);
    assert.equal(skipOwnWrites(echo({ finalizers: ['example.com/keep'] })), true);
  });

  it('passes events that say nothing of who wrote last: no timed entry, no cached oldObject, DELETED', () => {
    assert.equal(skipOwnWrites(modified({}, { generation: 2 })), true);
    assert.equal(skipOwnWrites({ ...echo(), oldObject: undefined }), true);
    assert.equal(skipOwnWrites({ type: 'DELETED', object: echo().object }), true);
    const untimed = modified(
      {},
      { generation: 2, managedFields: [{ manager: FIELD_MANAGER, operation: 'Apply' }] },
    );
    assert.equal(skipOwnWrites(untimed), true);
  });
});
