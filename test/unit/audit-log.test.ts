/**
 * Drift from Cloud Audit Logs, without a cluster: the kit's resource name patterns and the checks of
 * a declaration, the Topic's way back from a topic ID to its key, the `auditLog` function's decoding
 * of a push (the documented `LogEntry` shape accepted, anything else malformed), the sink's filter
 * generated from the registry, and drift counted by source.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { auditLogFilter } from '../../cli/build/generate-manifests.ts';
import { createLogger } from '../../core/log.ts';
import { controllers } from '../../examples/registry.ts';
import { defaultTopicId } from '../../functions/controllers/topic/api.ts';
import { keyOfTopicId, topicAuditLog } from '../../functions/controllers/topic/audit-log.ts';
import { compileAuditLog, matchResourceName, resourceNameRegex } from '../../functions/kit/audit-log.ts';
import { customResource } from '../../functions/kit/index.ts';
import { AUDIT_LOG_TYPE, decodeAuditLogPush } from '../../functions/runtime/audit-log.ts';
import { driftCorrected, recordDrift } from '../../functions/runtime/drift.ts';
import { auditLogEntry } from '../../local/audit-log.ts';
import { pushEnvelope } from '../support/pipeline.ts';

const widgets = customResource({ group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets' });
const ctx = { cluster: 'default', kubeConfig: undefined as never, log: createLogger('test') };

describe('resource name patterns (kit)', () => {
  it('match a name segment by segment, a variable being one non-empty segment', () => {
    const pattern = 'projects/{project}/topics/{topic}';
    assert.deepEqual(matchResourceName(pattern, 'projects/p/topics/k8s.a.b'), {
      project: 'p',
      topic: 'k8s.a.b',
    });
    for (const name of [
      'projects/p/topics',
      'projects/p/topics/a/b',
      'projects/p/subscriptions/a',
      'projects//topics/a',
    ])
      assert.equal(matchResourceName(pattern, name), undefined, name);
    assert.equal(resourceNameRegex(pattern), '^projects/[^/]+/topics/[^/]+$');
    const re = new RegExp(resourceNameRegex(pattern));
    assert.ok(re.test('projects/p/topics/k8s.a.b') && !re.test('projects/p/topics/a/b'));
  });

  it('refuse a declaration of the wrong shape, naming it', () => {
    const ok = {
      serviceName: 'pubsub.googleapis.com',
      resourceNames: ['projects/{p}/topics/{t}'],
      keyOfName: () => undefined,
    };
    assert.doesNotThrow(() => compileAuditLog('w', widgets, ok));
    for (const [wrong, message] of [
      [{ ...ok, serviceName: 'pubsub' }, /not a service name/],
      [{ ...ok, resourceNames: [] }, /resourceNames is empty/],
      [{ ...ok, resourceNames: ['projects/{p}/topics'] }, /collection\/\{id\} pairs/],
      [{ ...ok, resourceNames: ['projects/p/topics/{t}'] }, /segment 2 "p" must be a \{variable\}/],
      [{ serviceName: ok.serviceName, resourceNames: ok.resourceNames }, /needs keyOfName or namesOf/],
    ] as const)
      assert.throws(() => compileAuditLog('w', widgets, wrong), message);
  });

  it('keysOf: a name no pattern matches has no owner; keyOfName answers without a read', async () => {
    const source = compileAuditLog('w', widgets, {
      serviceName: 'example.googleapis.com',
      resourceNames: ['projects/{project}/widgets/{widget}'],
      keyOfName: ({ ids }) => ({ namespace: 'ns', name: ids.widget ?? '' }),
    });
    assert.deepEqual(await source.keysOf('projects/p/widgets/w1', ctx), [{ namespace: 'ns', name: 'w1' }]);
    assert.deepEqual(await source.keysOf('projects/p/gadgets/w1', ctx), []);
  });
});

describe('the Topic controller: from a Pub/Sub resource name back to its Topic', () => {
  it('a default topic ID names its Topic; any other ID does not', () => {
    assert.deepEqual(keyOfTopicId(defaultTopicId('team-a', 'orders.v2')), {
      namespace: 'team-a',
      name: 'orders.v2',
    });
    const long = `n${'x'.repeat(252)}`;
    assert.equal(
      keyOfTopicId(defaultTopicId('team-a', long)),
      undefined,
      'a shortened ID: looked up instead',
    );
    for (const id of ['orders', 'k8s.team-a', 'k8s.Team.a', 'other.team-a.orders', 'k8s.team-a.Orders'])
      assert.equal(keyOfTopicId(id), undefined, id);
  });

  it("declares its topics and subscriptions; a subscription is looked up in the Topics' status", () => {
    const source = compileAuditLog('topic', widgets, topicAuditLog);
    assert.equal(source.serviceName, 'pubsub.googleapis.com');
    const topic = {
      metadata: { name: 'x' },
      status: { topic: 'projects/p/topics/t', subscriptions: ['projects/p/subscriptions/s'] },
    };
    assert.deepEqual(topicAuditLog.namesOf?.(topic), ['projects/p/topics/t', 'projects/p/subscriptions/s']);
    assert.deepEqual(topicAuditLog.namesOf?.({}), [undefined]);
    const match = { pattern: '', name: 'projects/p/subscriptions/s', ids: { subscription: 's' } };
    assert.equal(topicAuditLog.keyOfName?.(match), undefined);
  });
});

describe('auditLog function: decoding a push', () => {
  const change = {
    serviceName: 'pubsub.googleapis.com',
    methodName: 'google.pubsub.v1.Publisher.DeleteTopic',
    resourceName: 'projects/p/topics/k8s.a.b',
  };

  it('accepts the documented LogEntry with an AuditLog protoPayload, its other fields ignored', () => {
    const decoded = decodeAuditLogPush(pushEnvelope(auditLogEntry('p', change)));
    assert.ok('entry' in decoded, JSON.stringify(decoded));
    assert.equal(decoded.entry.protoPayload.resourceName, change.resourceName);
    assert.equal(decoded.entry.protoPayload.authenticationInfo?.principalEmail, 'operator@example.com');
  });

  it('refuses what is not one, saying why', () => {
    const entry = auditLogEntry('p', change);
    const cases: [unknown, RegExp][] = [
      [{ nope: true }, /message/],
      [{ message: { data: Buffer.from('not json').toString('base64') } }, /message data is not JSON/],
      [
        pushEnvelope({ ...entry, protoPayload: { ...entry.protoPayload, '@type': 'type.googleapis.com/x' } }),
        /@type/,
      ],
      [pushEnvelope({ ...entry, protoPayload: { ...entry.protoPayload, resourceName: '' } }), /resourceName/],
      [pushEnvelope({ textPayload: 'hello' }), /protoPayload/],
    ];
    for (const [body, why] of cases) {
      const decoded = decodeAuditLogPush(body);
      assert.ok('issues' in decoded, JSON.stringify(body));
      assert.match(decoded.issues.join('; '), why);
    }
    assert.equal(AUDIT_LOG_TYPE, 'type.googleapis.com/google.cloud.audit.AuditLog');
  });
});

describe('the log sink filter, generated from the registry', () => {
  it('selects Admin Activity entries of the services and names the registered controllers declare', () => {
    assert.equal(
      auditLogFilter(controllers),
      'log_id("cloudaudit.googleapis.com/activity") AND ((protoPayload.serviceName="pubsub.googleapis.com" AND (protoPayload.resourceName=~"^projects/[^/]+/subscriptions/[^/]+$" OR protoPayload.resourceName=~"^projects/[^/]+/topics/[^/]+$")))',
    );
    assert.equal(auditLogFilter(controllers.filter((c) => !c.auditLog)), '', 'none declared: no sink');
  });
});

describe('drift by source', () => {
  it('a changing reconcile of an audit-log key is drift labelled audit-log; of a watch key it is not', async () => {
    const lines: string[] = [];
    const log = createLogger(
      'test',
      new Writable({
        write(chunk: Buffer, _e, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    const count = async (source: string) =>
      (await driftCorrected.get()).values.find(
        (v) => v.labels.controller === 'drift-test' && v.labels.source === source,
      )?.value ?? 0;
    assert.equal(recordDrift('drift-test', 'audit-log', { changed: true }, log), true);
    assert.equal(recordDrift('drift-test', 'audit-log', {}, log), false, 'nothing changed: no drift');
    assert.equal(
      recordDrift('drift-test', 'watch', { changed: true }, log),
      false,
      'announced by a watch event',
    );
    assert.equal(await count('audit-log'), 1);
    assert.equal(await count('resync'), 0);
    const drift = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.drift === true);
    assert.deepEqual(
      drift.map((l) => [l.severity, l.driftSource]),
      [['WARNING', 'audit-log']],
    );
  });
});
