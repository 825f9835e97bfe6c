/**
 * Malformed deliveries and requests against the real functions-framework server (one `reconcile`
 * and one `resync` process for the whole table): every malformed delivery is answered `204` with
 * exactly one ERROR line (so Pub/Sub never retries it), no stack trace is printed, and the process
 * stays up and keeps reconciling. Both processes require a shared token (`LEVELSET_FUNCTIONS_TOKEN`);
 * deliveries carry it in the push URL as a Pub/Sub push endpoint would.
 */
import assert from 'node:assert/strict';
import { type IncomingHttpHeaders, request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import { resyncTopicOf } from '../../core/config.ts';
import { emulatorClientOptions } from '../../core/publish.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { MAX_BODY_BYTES } from '../../functions/runtime/http.ts';
import { freePort, type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import { type Service, startService } from '../../local/service.ts';
import { functionsCli, functionsMain } from '../../local/stack-services.ts';
import { pushEnvelope } from '../support/pipeline.ts';
import { startAll } from '../support/start.ts';
import { waitFor } from '../support/wait.ts';

const token = 'bad-input-test-token-0123456789abcdef';
const valid = {
  v: 1,
  controller: 'secret-replicator',
  namespace: 'levelset-system',
  name: 'absent',
  reason: 'watch',
  enqueuedAt: '2026-11-21T10:00:00.000Z',
};
const b64 = (s: string) => Buffer.from(s).toString('base64');
const envelope = (data: string, extra: Record<string, unknown> = {}) => ({
  message: { data, attributes: {}, messageId: '1', ...extra },
  subscription: 'projects/local-project/subscriptions/test',
});
const keyEnvelope = (m: object) => JSON.stringify(pushEnvelope(m));

interface Delivery {
  method?: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Query string of the push URL; default `?token=<token>`. */
  query?: string;
}

/** Sends one raw HTTP request (fetch cannot send every malformed request, e.g. a wrong Content-Length). */
function send(
  url: string,
  d: Delivery,
): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const body = d.body === undefined ? undefined : Buffer.from(d.body);
    const req = request(
      `${url}${d.query ?? `?token=${token}`}`,
      {
        method: d.method ?? 'POST',
        headers: {
          'content-type': 'application/json',
          ...(body ? { 'content-length': String(body.length) } : {}),
          ...d.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** What, the delivery, and the status expected (default 204: acknowledged, never retried). */
const malformed: [string, Delivery, number?][] = [
  ['not JSON', { body: '{"message": not json' }],
  ['a JSON string (body-parser strict mode)', { body: '"hello"' }],
  ['empty body', { body: '' }],
  ['a JSON array', { body: '[]' }],
  ['no message', { body: JSON.stringify({ subscription: 'projects/p/subscriptions/s' }) }],
  ['message without data', { body: JSON.stringify({ message: { messageId: '1' } }) }],
  ['bad base64', { body: JSON.stringify(envelope('!!!not-base64!!!')) }],
  ['base64 of non-JSON', { body: JSON.stringify(envelope(b64('not json'))) }],
  ['base64 of a JSON array', { body: JSON.stringify(envelope(b64('[1,2]'))) }],
  ['version 2', { body: keyEnvelope({ ...valid, v: 2 }) }],
  ['unknown controller', { body: keyEnvelope({ ...valid, controller: 'no-such-controller' }) }],
  ['extra field in the key message', { body: keyEnvelope({ ...valid, extra: true }) }],
  ['missing name', { body: keyEnvelope({ ...valid, name: undefined }) }],
  ['name with a slash (a/b)', { body: keyEnvelope({ ...valid, name: 'a/b' }) }],
  ['name in upper case (ABC)', { body: keyEnvelope({ ...valid, name: 'ABC' }) }],
  ['missing namespace', { body: keyEnvelope({ ...valid, namespace: undefined }) }],
  ['namespace Bad_NS', { body: keyEnvelope({ ...valid, namespace: 'Bad_NS' }) }],
  ['namespace of 64 characters', { body: keyEnvelope({ ...valid, namespace: 'n'.repeat(64) }) }],
  ['unknown reason', { body: keyEnvelope({ ...valid, reason: 'because' }) }],
  ['bad enqueuedAt', { body: keyEnvelope({ ...valid, enqueuedAt: 'yesterday' }) }],
  [
    'oversized body',
    { body: JSON.stringify(envelope(b64(JSON.stringify(valid)), { pad: 'x'.repeat(MAX_BODY_BYTES) })) },
  ],
  ['wrong content type', { body: keyEnvelope(valid), headers: { 'content-type': 'text/plain' } }],
  ['no content type', { body: keyEnvelope(valid), headers: { 'content-type': '' } }],
  [
    'unsupported charset',
    { body: keyEnvelope(valid), headers: { 'content-type': 'application/json; charset=klingon' } },
  ],
  ['unsupported content encoding', { body: keyEnvelope(valid), headers: { 'content-encoding': 'compress' } }],
  ['GET', { method: 'GET' }, 405],
  ['PUT of a valid envelope', { method: 'PUT', body: keyEnvelope(valid) }, 405],
  ['namespace "" for a namespaced controller', { body: keyEnvelope({ ...valid, namespace: '' }) }],
  [
    'attributes not strings',
    { body: JSON.stringify(envelope(b64(JSON.stringify(valid)), { attributes: { controller: 5 } })) },
  ],
  ['attributes an array', { body: JSON.stringify(envelope(b64(JSON.stringify(valid)), { attributes: [] })) }],
];

describe('malformed deliveries and requests', () => {
  let cluster: TestCluster;
  let emulator: PubSubEmulator | undefined;
  let reconcile: Service;
  let resync: Service;
  const errors = (s: Service) => s.logs.filter((l) => l.severity === 'ERROR');
  const alive = (s: Service) => {
    try {
      process.kill(s.pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  before(async () => {
    cluster = await startTestCluster();
    // A real cluster holds objects whose keys the resync publishes (the local server starts empty):
    // there the functions get a Pub/Sub of their own with the resync's topic, as the local stack gives them.
    if (!cluster.local) {
      emulator = await startPubSubEmulator();
      const pubsub = new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.host) });
      await pubsub.createTopic(resyncTopicOf('levelset-keys'));
      await pubsub.close();
    }
    const start = async (target: string) => {
      const port = await freePort();
      return startService({
        name: target,
        args: [functionsCli, `--target=${target}`, `--port=${port}`, `--source=${functionsMain}`],
        port,
        env: {
          KUBECONFIG: cluster.kubeconfigPath,
          GOOGLE_CLOUD_PROJECT: 'local-project',
          LEVELSET_FUNCTIONS_TOKEN: token,
          LEVELSET_SOURCE_NAMESPACE: 'levelset-system',
          ...(emulator
            ? { PUBSUB_EMULATOR_HOST: emulator.host, GOOGLE_CLOUD_PROJECT: emulator.projectId }
            : {}),
        },
      });
    };
    [reconcile, resync] = await startAll([start('reconcile'), start('resync')]);
  });

  after(async () => {
    await Promise.all([reconcile?.stop(), resync?.stop()]);
    await Promise.all([cluster?.stop(), emulator?.stop()]);
  });

  it(`answers each of ${malformed.length} malformed deliveries 204 (another method: 405) with exactly one ERROR line, and stays up`, async () => {
    assert.ok(malformed.length >= 20);
    for (const [what, delivery, status = 204] of malformed) {
      const before = errors(reconcile).length;
      const res = await send(reconcile.url, delivery);
      assert.equal(res.status, status, `${what}: status`);
      if (status === 405) assert.equal(res.headers.allow, 'POST', `${what}: Allow`);
      const lines = await waitFor(
        () => errors(reconcile).length > before && errors(reconcile).slice(before),
        {
          message: `the ERROR line of "${what}"`,
        },
      );
      assert.equal(lines[0]?.outcome, 'malformed', `${what}: ${JSON.stringify(lines)}`);
      assert.ok(alive(reconcile), `${what}: process alive`);
    }
    // A valid delivery after the table is still reconciled; its line comes after every earlier one.
    const res = await send(reconcile.url, { body: keyEnvelope(valid) });
    assert.equal(res.status, 204);
    // Its Secret does not exist: a success with nothing to do.
    await waitFor(
      () =>
        reconcile.logs.some(
          (l) => l.message === 'not found: nothing to do' && l.outcome === 'success' && l.notFound === true,
        ),
      { message: 'the valid delivery reconciled' },
    );
    assert.equal(errors(reconcile).length, malformed.length, 'exactly one ERROR line per malformed delivery');
    const raw = reconcile.logs.filter(
      (l) => l.raw !== undefined && !/^(Serving function|Function|Signature type|URL):?/.test(l.raw),
    );
    assert.deepEqual(raw, [], 'no stack trace or other unstructured output');
  });

  it('refuses a delivery without the token, or with a wrong one: 401, one ERROR line', async () => {
    for (const query of ['', '?token=wrong']) {
      const before = errors(reconcile).length;
      const res = await send(reconcile.url, { body: keyEnvelope(valid), query });
      assert.equal(res.status, 401);
      await waitFor(() => errors(reconcile).length === before + 1, { message: 'the ERROR line' });
    }
    const res = await send(reconcile.url, {
      body: keyEnvelope(valid),
      query: '',
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 204, 'the token is also accepted as a bearer token');
  });

  it('resync refuses a request without the token, of another method, size or content type; accepts {}', async () => {
    const cases: [string, Delivery, number][] = [
      ['no token', { body: '{}', query: '' }, 401],
      ['wrong token', { body: '{}', headers: { authorization: 'Bearer nope' }, query: '' }, 401],
      ['GET', { method: 'GET' }, 405],
      ['not JSON', { body: '{oops' }, 400],
      ['text/plain', { body: 'hello', headers: { 'content-type': 'text/plain' } }, 415],
      ['oversized', { body: JSON.stringify({ pad: 'x'.repeat(MAX_BODY_BYTES) }) }, 413],
    ];
    for (const [what, delivery, status] of cases) {
      const before = errors(resync).length;
      const res = await send(resync.url, delivery);
      assert.equal(res.status, status, what);
      assert.ok(JSON.parse(res.body).error, `${what}: an error body`);
      await waitFor(() => errors(resync).length === before + 1, { message: `the ERROR line of ${what}` });
    }
    const ok = await send(resync.url, { body: '{}' });
    assert.equal(ok.status, 200, ok.body);
    const empty = await send(resync.url, { headers: { 'content-type': '' } });
    assert.equal(empty.status, 200, `an empty POST, as the local resync timer sends: ${empty.body}`);
    assert.ok(alive(resync));
    const raw = resync.logs.filter(
      (l) => l.raw !== undefined && !/^(Serving function|Function|Signature type|URL):?/.test(l.raw),
    );
    assert.deepEqual(raw, [], 'no stack trace or other unstructured output');
  });
});
