/**
 * The `levelset` command's pure parts: key parsing, owned kinds, dead-letter decoding, metric parsing.
 * The commands themselves run as a real process in test/cli/levelset.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CliError } from '../../cli/errors.ts';
import { ownedKinds } from '../../cli/impl/controllers.ts';
import { decodeDeadLetter } from '../../cli/impl/dead-letters.ts';
import { parseKey, requireController } from '../../cli/impl/reconcile.ts';
import { countDriftLines, metricSamples } from '../../cli/impl/status.ts';
import { controllers } from '../../examples/registry.ts';

const foo = controllers.find((c) => c.name === 'foo');

test('requireController: a registered controller, else a usage error naming the registered ones', () => {
  assert.equal(requireController('foo', controllers), foo);
  assert.throws(
    () => requireController('bar', controllers),
    (err: unknown) =>
      err instanceof CliError && err.exitCode === 2 && /one of secret-replicator, foo/.test(err.message),
  );
});

test('parseKey: namespace/name for a namespaced primary, as SplitMetaNamespaceKey', () => {
  assert.ok(foo);
  assert.deepEqual(parseKey(foo, 'team-a/my.foo'), { namespace: 'team-a', name: 'my.foo' });
  for (const bad of ['my-foo', 'a/b/c', '/x', 'x/', 'Team/x', 'a/b c'])
    assert.throws(
      () => parseKey(foo, bad),
      (err: unknown) =>
        err instanceof CliError && err.exitCode === 2 && err.message.includes('namespace/name'),
      bad,
    );
  const clusterScoped = { ...foo, primary: { ...foo.primary, namespaced: false } };
  assert.deepEqual(parseKey(clusterScoped, 'node-1'), { namespace: '', name: 'node-1' });
  assert.throws(() => parseKey(clusterScoped, 'a/b'), /cluster-scoped/);
});

test('ownedKinds: the kinds a controller declares it owns, else watched kinds it may create', () => {
  assert.ok(foo);
  assert.deepEqual(ownedKinds(foo), ['Deployment'], 'declared by the kit (Controller.owns)');
  const undeclared = { ...foo, owns: undefined };
  assert.deepEqual(ownedKinds(undeclared), ['Deployment'], 'watched, and RBAC grants create');
  assert.deepEqual(
    ownedKinds({ ...undeclared, rbac: foo.rbac.filter((r) => !r.apiGroups.includes('apps')) }),
    [],
  );
});

test('decodeDeadLetter: key, delivery attempts and times; degrades without the attributes', () => {
  const message = {
    v: 1,
    controller: 'foo',
    namespace: 'team-a',
    name: 'x',
    reason: 'watch',
    enqueuedAt: '2026-01-01T00:00:00.000Z',
  };
  const full = decodeDeadLetter({
    ackId: 'a',
    messageId: '1',
    data: Buffer.from(JSON.stringify(message)),
    attributes: {
      CloudPubSubDeadLetterSourceDeliveryCount: '5',
      CloudPubSubDeadLetterSourceTopicPublishTime: '2026-01-01T00:00:01.000Z',
    },
    orderingKey: '',
    publishTime: new Date('2026-01-01T00:01:00.000Z'),
  });
  assert.deepEqual(full.message, message);
  assert.equal(full.deliveryAttempts, 5);
  assert.equal(full.firstPublished, '2026-01-01T00:00:01.000Z');
  assert.equal(full.deadLetteredAt, '2026-01-01T00:01:00.000Z');
  const bare = decodeDeadLetter({
    ackId: 'b',
    messageId: '2',
    data: Buffer.from('not json'),
    attributes: {},
    orderingKey: '',
    publishTime: undefined,
  });
  assert.equal(bare.message, undefined);
  assert.equal(bare.deliveryAttempts, undefined);
  assert.equal(bare.firstPublished, undefined);
});

test('metricSamples: sums a Prometheus metric by its first label', () => {
  const text = [
    '# HELP levelset_relay_informer_synced x',
    'levelset_relay_informer_synced{resource="v1/secrets"} 1',
    'levelset_relay_informer_synced{resource="apps/v1/deployments"} 0',
    'levelset_relay_informer_restarts_total{resource="v1/secrets"} 2',
    'levelset_relay_informer_restarts_total{resource="v1/pods"} 3',
  ].join('\n');
  assert.deepEqual(
    [...metricSamples(text, 'levelset_relay_informer_synced')],
    [
      ['v1/secrets', 1],
      ['apps/v1/deployments', 0],
    ],
  );
  assert.equal(
    [...metricSamples(text, 'levelset_relay_informer_restarts_total').values()].reduce((a, b) => a + b),
    5,
  );
});

test('countDriftLines: the drift lines of a reconcile log by controller, as the log-based metric counts them', () => {
  const line = (controller: string, extra: object) =>
    JSON.stringify({
      severity: 'INFO',
      'logging.googleapis.com/labels': { controller, key: 'ns/a' },
      ...extra,
    });
  const text = [
    line('foo', { message: 'reconciled', outcome: 'success' }),
    line('foo', { severity: 'WARNING', drift: true, message: 'drift corrected' }),
    line('foo', { severity: 'WARNING', drift: true, message: 'drift corrected' }),
    line('icecream', { severity: 'WARNING', drift: true, message: 'drift corrected' }),
    line('icecream', { message: 'mentions "drift":false', drift: false }),
    '{"drift":true, cut off',
  ].join('\n');
  assert.deepEqual(countDriftLines(text), { foo: 2, icecream: 1 });
});
