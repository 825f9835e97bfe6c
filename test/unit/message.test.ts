import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyString, orderingKeyOf, parseKeyString } from '../../core/contract/key.ts';
import {
  clusterOf,
  decodePushEnvelope,
  encodeKeyMessage,
  type KeyMessage,
  keyMessageOf,
  keyOfMessage,
  MalformedMessageError,
} from '../../core/message.ts';

const valid: KeyMessage = {
  v: 1,
  controller: 'secret-replicator',
  namespace: 'team-a',
  name: 'db-creds',
  reason: 'watch',
  enqueuedAt: '2026-11-21T10:00:00.000Z',
};

const envelopeOf = (data: unknown) => ({
  message: {
    data: Buffer.from(typeof data === 'string' ? data : JSON.stringify(data)).toString('base64'),
    attributes: { controller: 'secret-replicator', reason: 'watch' },
    messageId: '42',
    publishTime: '2026-11-21T10:00:01.000Z',
  },
  subscription: 'projects/p/subscriptions/levelset-keys-reconcile',
});

describe('key message', () => {
  it('encodes with ordering key cluster/controller/namespace/name and repeats cluster, controller and reason as attributes', () => {
    const encoded = encodeKeyMessage(valid);
    assert.equal(encoded.orderingKey, 'default/secret-replicator/team-a/db-creds');
    assert.deepEqual(encoded.attributes, {
      cluster: 'default',
      controller: 'secret-replicator',
      reason: 'watch',
    });
    assert.deepEqual(JSON.parse(encoded.data.toString()), valid);
    const v2 = encodeKeyMessage({ ...valid, v: 2, cluster: 'gke-eu' });
    assert.equal(v2.orderingKey, 'gke-eu/secret-replicator/team-a/db-creds');
    assert.equal(v2.attributes.cluster, 'gke-eu');
  });

  it("carries the primary's resourceVersion as an attribute when given; a delivery ignores one that is not a resourceVersion", () => {
    const encoded = encodeKeyMessage(valid, '4711');
    assert.equal(encoded.attributes.resourceVersion, '4711');
    assert.equal(encodeKeyMessage(valid, 'not-a-version').attributes.resourceVersion, undefined);
    const withAttribute = (resourceVersion: string) => {
      const envelope = envelopeOf(valid);
      return {
        ...envelope,
        message: { ...envelope.message, attributes: { ...envelope.message.attributes, resourceVersion } },
      };
    };
    assert.equal(decodePushEnvelope(withAttribute('4711')).resourceVersion, '4711');
    assert.equal(decodePushEnvelope(envelopeOf(valid)).resourceVersion, undefined);
    // A hint, not the key: the key is still reconciled, with consistent reads.
    for (const bad of ['', '0', '12a', '-1', '1'.repeat(21)]) {
      const delivery = decodePushEnvelope(withAttribute(bad));
      assert.equal(delivery.resourceVersion, undefined, bad);
      assert.deepEqual(delivery.message, valid);
    }
  });

  it('a v1 message (no cluster) means the default cluster; v2 names its cluster', () => {
    assert.equal(clusterOf(valid), 'default');
    const { message } = decodePushEnvelope(envelopeOf({ ...valid, v: 2, cluster: 'gke-eu' }));
    assert.deepEqual(keyOfMessage(message), {
      cluster: 'gke-eu',
      controller: 'secret-replicator',
      namespace: 'team-a',
      name: 'db-creds',
    });
  });

  it('writes v1 for a key of the default cluster (as before clusters), v2 for any other', () => {
    const key = { controller: 'secret-replicator', namespace: 'team-a', name: 'db-creds' };
    assert.deepEqual(keyMessageOf({ cluster: 'default', ...key }, 'watch', valid.enqueuedAt), valid);
    assert.deepEqual(keyMessageOf({ cluster: 'b', ...key }, 'watch', valid.enqueuedAt), {
      ...valid,
      v: 2,
      cluster: 'b',
    });
    for (const cluster of ['default', 'gke-eu', 'b'])
      assert.deepEqual(keyOfMessage(keyMessageOf({ cluster, ...key }, 'resync', valid.enqueuedAt)), {
        cluster,
        ...key,
      });
  });

  it('keeps an empty namespace for cluster-scoped keys', () => {
    assert.equal(orderingKeyOf({ cluster: 'a', controller: 'c', namespace: '', name: 'n' }), 'a/c//n');
    assert.equal(keyString({ namespace: '', name: 'n' }), 'n');
    assert.equal(keyString({ namespace: 'ns', name: 'n' }), 'ns/n');
  });

  it('parses a key string back to its key, as SplitMetaNamespaceKey', () => {
    for (const key of [
      { namespace: '', name: 'n' },
      { namespace: 'ns', name: 'my.name' },
    ])
      assert.deepEqual(parseKeyString(keyString(key)), key);
    assert.throws(() => parseKeyString('a/b/c'), /unexpected key format/);
  });

  it('round-trips through a push envelope', () => {
    const { message, messageId } = decodePushEnvelope(envelopeOf(valid));
    assert.deepEqual(message, valid);
    assert.equal(messageId, '42');
  });

  it('refuses to publish an invalid message', () => {
    assert.throws(() => encodeKeyMessage({ ...valid, controller: 'Not Kebab' }));
    assert.throws(() => encodeKeyMessage({ ...valid, name: '' }));
  });

  const malformed: [string, unknown][] = [
    ['no envelope', { hello: 'world' }],
    ['not base64 JSON', { message: { data: '!!!not json' } }],
    ['unknown version', envelopeOf({ ...valid, v: 3 })],
    ['v2 without a cluster', envelopeOf({ ...valid, v: 2 })],
    ['v1 with a cluster', envelopeOf({ ...valid, cluster: 'a' })],
    ['cluster not a DNS-1123 label', envelopeOf({ ...valid, v: 2, cluster: 'Gke_EU' })],
    ['cluster of 64 characters', envelopeOf({ ...valid, v: 2, cluster: 'c'.repeat(64) })],
    ['empty cluster', envelopeOf({ ...valid, v: 2, cluster: '' })],
    ['unknown field', envelopeOf({ ...valid, extra: true })],
    ['unknown reason', envelopeOf({ ...valid, reason: 'because' })],
    ['missing name', envelopeOf({ ...valid, name: undefined })],
    ['bad timestamp', envelopeOf({ ...valid, enqueuedAt: 'yesterday' })],
    ['JSON but not an object', envelopeOf('"just a string"')],
    ['not standard base64', { message: { data: 'eyJ2Ijox!!' } }],
    ['name with a slash', envelopeOf({ ...valid, name: 'a/b' })],
    ['name in upper case', envelopeOf({ ...valid, name: 'ABC' })],
    ['name of 254 characters', envelopeOf({ ...valid, name: 'a'.repeat(254) })],
    ['name ending in a dash', envelopeOf({ ...valid, name: 'db-' })],
    ['namespace with an underscore', envelopeOf({ ...valid, namespace: 'Bad_NS' })],
    ['namespace with a dot (a subdomain, not a label)', envelopeOf({ ...valid, namespace: 'team.a' })],
    ['namespace of 64 characters', envelopeOf({ ...valid, namespace: 'n'.repeat(64) })],
  ];
  it('accepts names as apimachinery does: DNS-1123 subdomains, namespaces DNS-1123 labels of ≤ 63', () => {
    for (const [namespace, name] of [
      ['n'.repeat(63), 'a'.repeat(253)],
      ['team-a', 'db.creds-1'],
      ['0ns', '0'],
      ['', 'cluster-scoped'],
    ] as const) {
      assert.deepEqual(decodePushEnvelope(envelopeOf({ ...valid, namespace, name })).message.name, name);
    }
  });

  for (const [what, body] of malformed) {
    it(`rejects as malformed: ${what}`, () => {
      assert.throws(() => decodePushEnvelope(body), MalformedMessageError);
    });
  }
});
