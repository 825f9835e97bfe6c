import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { V1Namespace, V1Secret } from '@kubernetes/client-node';
import { TerminalError } from '../../core/k8s/errors.ts';
import type { SecretReplicatorConfig } from '../../functions/controllers/secret-replicator/config.ts';
import {
  CONTENT_HASH_ANNOTATION,
  COPIES,
  COPY_LABEL,
  contentHash,
  copyLabelValue,
  desiredCopies,
  desiredCopy,
  parseReplicateTo,
  REPLICATE_TO_ANNOTATION,
  SOURCE_ANNOTATION,
  SOURCE_VERSION_ANNOTATION,
  selectTargets,
  sourceKeyOf,
} from '../../functions/controllers/secret-replicator/plan.ts';
import { selectorOf } from '../../functions/kit/children.ts';
import {
  compareChild,
  isOwnedAcross,
  planChild,
  planCrossNamespaceChildren,
} from '../../functions/kit/cross-namespace.ts';
import type { Key } from '../../functions/kit/index.ts';

const config: SecretReplicatorConfig = {
  sourceNamespace: 'levelset-system',
  excludeNamespaces: ['kube-system', 'kube-public', 'kube-node-lease'],
};
const key = { namespace: 'levelset-system', name: 'db-creds' };

/** Whether the kit takes `secret` for a copy of `source`: same name, owned across namespaces by COPIES. */
const isCopyOf = (secret: V1Secret, source: Key) =>
  secret.metadata?.name === source.name && isOwnedAcross(secret, source, COPIES);

/**
 * The diff the kit makes (planCrossNamespaceChildren) of the replicator's desired copies against
 * `observed` (the copies and the Secrets of the source's name), for one source; `targets` are the
 * namespaces of the desired copies.
 */
function planReplicas(input: {
  key: Key;
  source: V1Secret | undefined;
  namespaces: readonly V1Namespace[] | undefined;
  observed: readonly V1Secret[];
  config: SecretReplicatorConfig;
}) {
  const desired = desiredCopies(input.key, input.source, input.namespaces ?? [], input.config);
  const plan = planCrossNamespaceChildren({
    owner: input.key,
    tracking: COPIES,
    desired: desired.children,
    observed: input.observed.filter((s) => s.metadata?.name === input.key.name),
    retainNamespaces: desired.retainNamespaces,
  });
  return { targets: desired.children.map((c) => c.metadata?.namespace ?? ''), ...plan };
}

function ns(name: string, terminating = false): V1Namespace {
  return {
    metadata: { name, ...(terminating ? { deletionTimestamp: new Date() } : {}) },
    status: { phase: terminating ? 'Terminating' : 'Active' },
  };
}

function source(overrides: Partial<V1Secret> = {}, annotations?: Record<string, string>): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 'db-creds',
      namespace: 'levelset-system',
      uid: 'src-uid',
      resourceVersion: '42',
      labels: { app: 'db' },
      ...(annotations ? { annotations } : {}),
    },
    type: 'Opaque',
    data: { password: 'czNjcjN0', user: 'YWRtaW4=' },
    ...overrides,
  };
}

/** An observed copy as the API server would return it (uid, resourceVersion, managedFields). */
function observedCopy(namespace: string, src = source(), rv = '7'): V1Secret {
  const d = desiredCopy(src, key, namespace);
  return {
    ...d,
    metadata: {
      ...d.metadata,
      uid: `uid-${namespace}`,
      resourceVersion: rv,
      managedFields: [{ manager: 'levelset' }],
    },
  };
}

function foreign(namespace: string): V1Secret {
  return {
    metadata: { name: 'db-creds', namespace, uid: `foreign-${namespace}`, resourceVersion: '3' },
    type: 'Opaque',
    data: { other: 'eA==' },
  };
}

const allNamespaces = [
  ns('levelset-system'),
  ns('kube-system'),
  ns('kube-public'),
  ns('kube-node-lease'),
  ns('team-a'),
  ns('team-b'),
  ns('team-c'),
];

function namespacesOf(list: V1Secret[]): string[] {
  return list.map((s) => s.metadata?.namespace ?? '');
}

describe('copy label and source annotation', () => {
  test('a short name is its own label value; a long one is truncated plus a hash and stays a valid label value', () => {
    assert.equal(copyLabelValue(key), 'db-creds');
    assert.equal(selectorOf(COPIES.labels(key)), 'levelset.dev/replica-of=db-creds');
    const long = { namespace: 'levelset-system', name: `${'a'.repeat(60)}.b-${'c'.repeat(40)}` };
    const value = copyLabelValue(long);
    assert.ok(value.length <= 63, `length ${value.length}`);
    assert.match(value, /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/);
    assert.ok(value.startsWith('a'.repeat(46)));
    const other = copyLabelValue({ namespace: 'other-ns', name: long.name });
    assert.notEqual(value, other, 'the hash covers the namespace');
    assert.equal(copyLabelValue(long), value, 'deterministic');
  });

  test('sourceKeyOf reads <namespace>/<name> and rejects anything else', () => {
    assert.deepEqual(sourceKeyOf({ annotations: { [SOURCE_ANNOTATION]: 'levelset-system/db-creds' } }), key);
    assert.equal(sourceKeyOf({ annotations: {} }), undefined);
    assert.equal(sourceKeyOf(undefined), undefined);
    assert.equal(sourceKeyOf({ annotations: { [SOURCE_ANNOTATION]: 'db-creds' } }), undefined);
    assert.equal(sourceKeyOf({ annotations: { [SOURCE_ANNOTATION]: 'Bad_NS/db' } }), undefined);
    assert.equal(sourceKeyOf({ annotations: { [SOURCE_ANNOTATION]: 'ns/' } }), undefined);
    assert.equal(sourceKeyOf({ annotations: { [SOURCE_ANNOTATION]: 'ns/a/b' } }), undefined);
  });

  test('ownership needs the name, the label value and the source annotation together', () => {
    const copy = observedCopy('team-a');
    assert.ok(isCopyOf(copy, key));
    const noLabel = structuredClone(copy);
    delete noLabel.metadata?.labels?.[COPY_LABEL];
    assert.ok(!isCopyOf(noLabel, key));
    const noAnnotation = structuredClone(copy);
    delete noAnnotation.metadata?.annotations?.[SOURCE_ANNOTATION];
    assert.ok(!isCopyOf(noAnnotation, key));
    const otherSource = structuredClone(copy);
    (otherSource.metadata?.annotations ?? {})[SOURCE_ANNOTATION] = 'old-system/db-creds';
    assert.ok(!isCopyOf(otherSource, key), 'same label value, another source namespace');
    assert.ok(!isCopyOf({ ...copy, metadata: { ...copy.metadata, name: 'renamed' } }, key));
    assert.ok(!isCopyOf(foreign('team-a'), key));
  });
});

describe('desiredCopy', () => {
  test('mirrors type, data and labels; adds the copy label and the source annotations; nothing else', () => {
    const src = source(
      { type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': 'e30=' }, immutable: true },
      { 'team/owner': 'x', [REPLICATE_TO_ANNOTATION]: 'team-a' },
    );
    const copy = desiredCopy(src, key, 'team-a');
    assert.equal(copy.metadata?.name, 'db-creds');
    assert.equal(copy.metadata?.namespace, 'team-a');
    assert.equal(copy.type, 'kubernetes.io/dockerconfigjson');
    assert.deepEqual(copy.data, { '.dockerconfigjson': 'e30=' });
    assert.deepEqual(copy.metadata?.labels, { app: 'db', [COPY_LABEL]: 'db-creds' });
    assert.deepEqual(Object.keys(copy.metadata?.annotations ?? {}).sort(), [
      CONTENT_HASH_ANNOTATION,
      SOURCE_ANNOTATION,
      SOURCE_VERSION_ANNOTATION,
    ]);
    assert.equal(copy.metadata?.annotations?.[SOURCE_ANNOTATION], 'levelset-system/db-creds');
    assert.equal(copy.metadata?.annotations?.[SOURCE_VERSION_ANNOTATION], '42');
    assert.equal(copy.metadata?.annotations?.[CONTENT_HASH_ANNOTATION], contentHash(copy));
    assert.equal(copy.immutable, undefined, 'immutable is not mirrored');
    assert.equal(copy.stringData, undefined);
    assert.equal(copy.metadata?.uid, undefined);
    assert.equal(copy.metadata?.resourceVersion, undefined);
  });

  test('a copy label on the source is replaced by ours; missing type means Opaque', () => {
    const src = source({ type: undefined });
    (src.metadata?.labels ?? {})[COPY_LABEL] = 'something-else';
    const copy = desiredCopy(src, key, 'team-a');
    assert.equal(copy.metadata?.labels?.[COPY_LABEL], 'db-creds');
    assert.equal(copy.type, 'Opaque');
  });

  test('contentHash changes with data, type or labels, not with key order', () => {
    const base = { type: 'Opaque', data: { a: 'MQ==', b: 'Mg==' }, metadata: { labels: { x: '1' } } };
    const h = contentHash(base);
    assert.equal(contentHash({ ...base, data: { b: 'Mg==', a: 'MQ==' } }), h);
    assert.notEqual(contentHash({ ...base, data: { a: 'MQ==', b: 'Mw==' } }), h);
    assert.notEqual(contentHash({ ...base, type: 'other' }), h);
    assert.notEqual(contentHash({ ...base, metadata: { labels: { x: '2' } } }), h);
    assert.equal(contentHash({ ...base, metadata: { labels: { x: '1', [COPY_LABEL]: 'v' } } }), h);
  });
});

describe('parseReplicateTo / selectTargets', () => {
  test('absent annotation: every namespace except excluded, the source namespace and Terminating ones', () => {
    const targets = selectTargets(source(), [...allNamespaces, ns('team-d', true)], config);
    assert.deepEqual(targets, ['team-a', 'team-b', 'team-c']);
  });

  test('names and anchored regexes narrow the targets', () => {
    const match = parseReplicateTo(' team-a , prod-.* ,, ');
    assert.ok(match('team-a'));
    assert.ok(match('prod-eu'));
    assert.ok(!match('team-ab'), 'a name matches exactly');
    assert.ok(!match('xprod-eu'), 'a regex is anchored at the start');
    assert.ok(!match('team-b'));
    const alternation = parseReplicateTo('a|b');
    assert.ok(alternation('a') && alternation('b'));
    assert.ok(
      !alternation('ab') && !alternation('xa') && !alternation('bx'),
      'alternation is anchored as a whole',
    );
  });

  test('the annotation cannot reach excluded namespaces or the source namespace', () => {
    const src = source({}, { [REPLICATE_TO_ANNOTATION]: 'kube-system,levelset-system,team-b' });
    assert.deepEqual(selectTargets(src, allNamespaces, config), ['team-b']);
  });

  test('an empty annotation selects no namespace', () => {
    assert.deepEqual(selectTargets(source({}, { [REPLICATE_TO_ANNOTATION]: '' }), allNamespaces, config), []);
    assert.deepEqual(
      selectTargets(source({}, { [REPLICATE_TO_ANNOTATION]: ' , ' }), allNamespaces, config),
      [],
    );
  });

  test('a catastrophic pattern matches in linear time (RE2), not exponential backtracking', () => {
    const match = parseReplicateTo('(a+)+b');
    // 62 a's then a non-matching character: a backtracking engine (JavaScript's RegExp) explores
    // ~2^62 paths and never returns; RE2 answers at once.
    assert.ok(!match(`${'a'.repeat(62)}1`));
    assert.ok(match('aaab'));
  });

  test('JavaScript-only syntax (lookaround, backreferences) is invalid, as RE2 defines it', () => {
    for (const pattern of ['(?!kube-).*', '(a)\\1']) {
      assert.throws(
        () => parseReplicateTo(pattern),
        (err: unknown) => err instanceof TerminalError && err.reason === 'InvalidReplicateTo',
        pattern,
      );
    }
  });

  test('an invalid regex is a TerminalError naming the item', () => {
    assert.throws(
      () => parseReplicateTo('team-a,prod-(['),
      (err: unknown) =>
        err instanceof TerminalError &&
        err.reason === 'InvalidReplicateTo' &&
        err.message.includes('prod-(['),
    );
  });
});

describe("a copy's step, as the kit plans it (compareChild / planChild with COPIES)", () => {
  const desired = desiredCopy(source(), key, 'team-a');

  test('a converged copy is unchanged, even with extra annotations of others', () => {
    const copy = observedCopy('team-a');
    (copy.metadata?.annotations ?? {})['kubectl.kubernetes.io/last-applied-configuration'] = '{}';
    assert.equal(compareChild(copy, desired, COPIES), 'unchanged');
  });

  test('hand edits of data, labels or our annotations need an update', () => {
    const data = observedCopy('team-a');
    data.data = { ...data.data, password: 'aGFja2Vk' };
    assert.equal(compareChild(data, desired, COPIES), 'update');
    const removedKey = observedCopy('team-a');
    removedKey.data = { password: 'czNjcjN0' };
    assert.equal(compareChild(removedKey, desired, COPIES), 'update');
    const label = observedCopy('team-a');
    (label.metadata?.labels ?? {}).extra = 'x';
    assert.equal(compareChild(label, desired, COPIES), 'update');
    const version = observedCopy('team-a');
    (version.metadata?.annotations ?? {})[SOURCE_VERSION_ANNOTATION] = '41';
    assert.equal(compareChild(version, desired, COPIES), 'update');
  });

  test('a type change or a data change of an immutable copy needs a recreate', () => {
    const retyped: V1Secret = { ...observedCopy('team-a'), type: 'kubernetes.io/tls' };
    assert.equal(compareChild(retyped, desired, COPIES), 'recreate');
    const immutable: V1Secret = { ...observedCopy('team-a'), immutable: true };
    assert.equal(compareChild(immutable, desired, COPIES), 'unchanged');
    const changed: V1Secret = { ...immutable, data: { x: 'eQ==' } };
    assert.equal(compareChild(changed, desired, COPIES), 'recreate');
  });

  test('the update body carries the current resourceVersion and uid, keeps others’ annotations, drops managedFields', () => {
    const current = observedCopy('team-a', source(), '99');
    (current.metadata?.annotations ?? {})['other/note'] = 'keep';
    current.data = { password: 'aGFja2Vk' };
    const step = planChild(key, COPIES, desired, current);
    assert.equal(step.op, 'update');
    if (step.op !== 'update') return;
    assert.equal(step.desired.metadata?.resourceVersion, '99');
    assert.equal(step.desired.metadata?.uid, 'uid-team-a');
    assert.equal(step.desired.metadata?.managedFields, undefined);
    assert.equal(step.desired.metadata?.annotations?.['other/note'], 'keep');
    assert.deepEqual((step.desired as V1Secret).data, desired.data);
    assert.deepEqual(step.desired.metadata?.labels, desired.metadata?.labels);
  });

  test('a recreate body is fresh (no resourceVersion)', () => {
    const retyped: V1Secret = { ...observedCopy('team-a'), type: 'kubernetes.io/tls' };
    const step = planChild(key, COPIES, desired, retyped);
    assert.equal(step.op, 'recreate');
    if (step.op !== 'recreate') return;
    assert.equal(step.desired.metadata?.resourceVersion, undefined);
  });

  test('absent → create; not owned → conflict', () => {
    assert.equal(planChild(key, COPIES, desired, undefined).op, 'create');
    assert.equal(planChild(key, COPIES, desired, foreign('team-a')).op, 'conflict');
  });
});

describe('planReplicas', () => {
  test('a new source: one create per target, nothing else', () => {
    const plan = planReplicas({ key, source: source(), namespaces: allNamespaces, observed: [], config });
    assert.deepEqual(plan.targets, ['team-a', 'team-b', 'team-c']);
    assert.deepEqual(namespacesOf(plan.create), ['team-a', 'team-b', 'team-c']);
    assert.deepEqual(
      [plan.update, plan.recreate, plan.delete, plan.conflicts, plan.unchanged],
      [[], [], [], [], []],
    );
  });

  test('converged: every target unchanged, no writes', () => {
    const observed = ['team-a', 'team-b', 'team-c'].map((n) => observedCopy(n));
    const plan = planReplicas({ key, source: source(), namespaces: allNamespaces, observed, config });
    assert.deepEqual(plan.unchanged, ['team-a', 'team-b', 'team-c']);
    assert.equal(plan.create.length + plan.update.length + plan.recreate.length + plan.delete.length, 0);
  });

  test('a source update reaches every copy', () => {
    const observed = ['team-a', 'team-b', 'team-c'].map((n) => observedCopy(n));
    const updated = source({ data: { password: 'bmV3' } });
    updated.metadata = { ...updated.metadata, resourceVersion: '43' };
    const plan = planReplicas({ key, source: updated, namespaces: allNamespaces, observed, config });
    assert.deepEqual(
      plan.update.map((c) => c.current.metadata?.namespace),
      ['team-a', 'team-b', 'team-c'],
    );
    for (const c of plan.update) {
      assert.deepEqual((c.desired as V1Secret).data, { password: 'bmV3' });
      assert.equal(c.desired.metadata?.annotations?.[SOURCE_VERSION_ANNOTATION], '43');
      assert.equal(c.desired.metadata?.resourceVersion, '7');
    }
  });

  test('a Secret Levelset does not own is a conflict, and the other targets still converge', () => {
    const observed = [foreign('team-b'), observedCopy('team-c')];
    const plan = planReplicas({ key, source: source(), namespaces: allNamespaces, observed, config });
    assert.deepEqual(plan.conflicts, [{ namespace: 'team-b', name: 'db-creds' }]);
    assert.deepEqual(namespacesOf(plan.create), ['team-a']);
    assert.deepEqual(plan.unchanged, ['team-c']);
    assert.equal(plan.delete.length, 0);
    assert.ok(!plan.update.some((c) => c.current.metadata?.namespace === 'team-b'));
  });

  test('a deleted source deletes every owned copy and nothing else', () => {
    const observed = [observedCopy('team-a'), observedCopy('team-b'), foreign('team-c')];
    const plan = planReplicas({ key, source: undefined, namespaces: undefined, observed, config });
    assert.deepEqual(namespacesOf(plan.delete), ['team-a', 'team-b']);
    assert.deepEqual([plan.targets, plan.create, plan.update, plan.conflicts], [[], [], [], []]);
  });

  test('a source being deleted or a service-account token has no copies', () => {
    const observed = [observedCopy('team-a')];
    const deleting = source();
    deleting.metadata = { ...deleting.metadata, deletionTimestamp: new Date() };
    const token = source({ type: 'kubernetes.io/service-account-token' });
    for (const src of [deleting, token]) {
      const plan = planReplicas({ key, source: src, namespaces: allNamespaces, observed, config });
      assert.deepEqual(namespacesOf(plan.delete), ['team-a']);
      assert.equal(plan.create.length, 0);
    }
  });

  test('narrowing the annotation deletes copies outside it, but not in Terminating namespaces', () => {
    const namespaces = [...allNamespaces, ns('team-d', true)];
    const observed = ['team-a', 'team-b', 'team-c', 'team-d'].map((n) => observedCopy(n));
    const src = source({}, { [REPLICATE_TO_ANNOTATION]: 'team-a' });
    // The annotation is part of the source: the source's resourceVersion would change with it.
    const plan = planReplicas({ key, source: src, namespaces, observed, config });
    assert.deepEqual(plan.targets, ['team-a']);
    assert.deepEqual(namespacesOf(plan.delete), ['team-b', 'team-c']);
    assert.deepEqual(plan.unchanged, ['team-a']);
  });

  test('copies in excluded namespaces and in the source namespace are deleted', () => {
    const observed = [observedCopy('kube-system'), observedCopy('levelset-system')];
    const plan = planReplicas({ key, source: source(), namespaces: allNamespaces, observed, config });
    assert.deepEqual(namespacesOf(plan.delete), ['kube-system', 'levelset-system']);
  });

  test('the source itself and non-owned Secrets outside the targets are never deleted', () => {
    const observed = [source(), foreign('kube-system')];
    const plan = planReplicas({ key, source: source(), namespaces: allNamespaces, observed, config });
    assert.deepEqual(plan.delete, []);
    assert.deepEqual(plan.conflicts, []);
  });

  test('Secrets of other names in the observed list are ignored; duplicates collapse to the first', () => {
    const other = { ...observedCopy('team-a'), metadata: { ...observedCopy('team-a').metadata, name: 'x' } };
    const observed = [other, observedCopy('team-b'), foreign('team-b')];
    const plan = planReplicas({ key, source: source(), namespaces: allNamespaces, observed, config });
    assert.deepEqual(namespacesOf(plan.create), ['team-a', 'team-c']);
    assert.deepEqual(plan.unchanged, ['team-b']);
    assert.deepEqual(plan.conflicts, []);
  });

  test('a new namespace gets a copy; copies of a deleted namespace are not re-created', () => {
    const observed = ['team-a', 'team-b', 'team-c'].map((n) => observedCopy(n));
    const plan = planReplicas({
      key,
      source: source(),
      namespaces: [...allNamespaces, ns('team-new')],
      observed,
      config,
    });
    assert.deepEqual(namespacesOf(plan.create), ['team-new']);
    const gone = planReplicas({
      key,
      source: source(),
      namespaces: allNamespaces.slice(0, -1),
      observed,
      config,
    });
    assert.deepEqual(namespacesOf(gone.delete), ['team-c'], 'a copy left in an unlisted namespace is pruned');
  });

  test('an invalid annotation throws before any change is planned', () => {
    const observed = [observedCopy('team-a')];
    const src = source({}, { [REPLICATE_TO_ANNOTATION]: '(' });
    assert.throws(
      () => planReplicas({ key, source: src, namespaces: allNamespaces, observed, config }),
      (err: unknown) =>
        err instanceof TerminalError &&
        err.reason === 'InvalidReplicateTo' &&
        err.object?.kind === 'Secret' &&
        err.object.metadata?.name === 'db-creds' &&
        !('data' in err.object),
    );
  });
});
