/**
 * The local API server's admission webhooks (webhooks.ts) against webhook servers of the test's own
 * (real HTTPS servers with the local CA, answering AdmissionReviews as the test says): the order and
 * reinvocation of mutating webhooks, a timeout, an answer with the wrong uid, a webhook with side
 * effects meeting a dry run, and the request a webhook receives.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { KubeConfig } from '@kubernetes/client-node';
import { type LocalApiServer, servingCert, startLocalApiServer } from '../index.ts';
import { raw } from './helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: AdmissionReview JSON
type Review = any;
type Answer = (review: Review) => Record<string, unknown> | 'hang';

/** An HTTPS webhook server answering with `answer`; it records the requests it got. */
async function webhookServer(answer: Answer): Promise<{ url: string; reviews: Review[]; server: Server }> {
  const { key, cert } = servingCert();
  const reviews: Review[] = [];
  const server = createServer({ key, cert }, (req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      text += c;
    });
    req.on('end', () => {
      const review = JSON.parse(text);
      reviews.push(review);
      const response = answer(review);
      if (response === 'hang') return; // never answered: the caller's timeout decides
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { uid: review.request.uid, allowed: true, ...response },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, reviews, server };
}

const jsonPatch = (ops: unknown[]) => ({
  patchType: 'JSONPatch',
  patch: Buffer.from(JSON.stringify(ops)).toString('base64'),
});

describe('admission webhooks of the local API server', () => {
  let server: LocalApiServer;
  let kc: KubeConfig;
  const servers: Server[] = [];
  const caBundle = Buffer.from(servingCert().cert).toString('base64');

  before(async () => {
    server = await startLocalApiServer();
    kc = server.kubeConfig();
  });
  after(async () => {
    for (const s of servers) s.closeAllConnections();
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    await server.stop();
  });

  /** Registers one webhook for ConfigMaps labelled `test=<label>`. */
  async function register(
    kind: 'Mutating' | 'Validating',
    name: string,
    label: string,
    url: string,
    extra: Record<string, unknown> = {},
  ): Promise<void> {
    const plural = `${kind.toLowerCase()}webhookconfigurations`;
    const r = await raw(kc, 'POST', `/apis/admissionregistration.k8s.io/v1/${plural}`, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: `${kind}WebhookConfiguration`,
      metadata: { name },
      webhooks: [
        {
          name: `${name}.example.com`,
          clientConfig: { url, caBundle },
          rules: [
            {
              operations: ['CREATE', 'UPDATE'],
              apiGroups: [''],
              apiVersions: ['v1'],
              resources: ['configmaps'],
            },
          ],
          objectSelector: { matchLabels: { test: label } },
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          ...extra,
        },
      ],
    });
    assert.equal(r.status, 201, r.text);
  }

  const create = (name: string, label: string, query = '') =>
    raw(kc, 'POST', `/api/v1/namespaces/default/configmaps${query}`, {
      metadata: { name, labels: { test: label } },
      data: { a: '1' },
    });

  it('calls mutating webhooks in name order, and once more an IfNeeded one that a later change came after', async () => {
    let firstCalls = 0;
    const first = await webhookServer((review) => {
      firstCalls++;
      const labels = review.request.object.metadata.labels;
      return labels.second
        ? jsonPatch([{ op: 'add', path: '/metadata/labels/first-saw-second', value: 'yes' }])
        : {};
    });
    const second = await webhookServer(() =>
      jsonPatch([{ op: 'add', path: '/metadata/labels/second', value: 'yes' }]),
    );
    servers.push(first.server, second.server);
    await register('Mutating', 'a-first', 'reinvoke', first.url, { reinvocationPolicy: 'IfNeeded' });
    await register('Mutating', 'b-second', 'reinvoke', second.url);
    const r = await create('reinvoked', 'reinvoke');
    assert.equal(r.status, 201, r.text);
    assert.equal(firstCalls, 2, 'a-first called again after b-second changed the object');
    assert.deepEqual(r.json.metadata.labels, { test: 'reinvoke', second: 'yes', 'first-saw-second': 'yes' });
    const request = first.reviews[0].request;
    assert.equal(request.operation, 'CREATE');
    assert.equal(request.namespace, 'default');
    assert.deepEqual(request.resource, { group: '', version: 'v1', resource: 'configmaps' });
    assert.equal(request.dryRun, false);
    assert.equal(typeof request.userInfo.username, 'string');
  });

  it('a webhook that does not answer within timeoutSeconds fails the call (Fail: 500 within the timeout)', async () => {
    const hanging = await webhookServer(() => 'hang');
    servers.push(hanging.server);
    await register('Validating', 'hangs', 'hang', hanging.url, { timeoutSeconds: 1 });
    const started = performance.now();
    const r = await create('hung', 'hang');
    const took = performance.now() - started;
    assert.equal(r.status, 500, r.text);
    assert.match(r.json.message, /failed calling webhook "hangs\.example\.com": context deadline exceeded/);
    assert.ok(took >= 900 && took < 5000, `answered after ${took} ms`);
  });

  it('an answer with another uid is a failed call; Ignore admits it', async () => {
    const liar = await webhookServer(() => ({ uid: 'not-yours', allowed: false }));
    servers.push(liar.server);
    await register('Validating', 'liar', 'liar', liar.url, { failurePolicy: 'Ignore' });
    const r = await create('lied-to', 'liar');
    assert.equal(r.status, 201, r.text);
    assert.equal(liar.reviews.length, 1);
  });

  it('a webhook without side effects sees a dry run (dryRun: true), its warning returned, nothing stored', async () => {
    const none = await webhookServer(() => ({ warnings: ['seen'] }));
    servers.push(none.server);
    await register('Validating', 'none', 'none', none.url);
    const dry = await create('dry-none', 'none', '?dryRun=All');
    assert.equal(dry.status, 201, dry.text);
    assert.equal(none.reviews.at(-1).request.dryRun, true);
    assert.match(dry.headers.warning ?? '', /seen/);
    assert.equal((await raw(kc, 'GET', '/api/v1/namespaces/default/configmaps/dry-none')).status, 404);
  });

  it('refuses a configuration kube-apiserver refuses (422), in its words', async () => {
    const path = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';
    const configuration = (name: string, webhook: Record<string, unknown>) => ({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name },
      webhooks: [
        {
          name: 'checks.example.com',
          clientConfig: { url: 'https://127.0.0.1:1/x', caBundle },
          rules: [
            { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] },
          ],
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          ...webhook,
        },
      ],
    });
    const cases: [Record<string, unknown>, string][] = [
      [
        { sideEffects: 'Some' },
        'webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"',
      ],
      [
        { clientConfig: { url: 'http://127.0.0.1:1/x' } },
        `webhooks[0].clientConfig.url: Invalid value: "http://127.0.0.1:1/x": 'https' is the only allowed URL scheme`,
      ],
      [
        { name: 'checks' },
        'webhooks[0].name: Invalid value: "checks": should be a domain with at least three segments separated by dots',
      ],
      [
        { timeoutSeconds: 31 },
        'webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds',
      ],
      [
        { admissionReviewVersions: [] },
        'webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1',
      ],
    ];
    for (const [i, [webhook, said]] of cases.entries()) {
      const r = await raw(kc, 'POST', path, configuration(`refused-${i}`, webhook));
      assert.equal(r.status, 422, r.text);
      assert.equal(
        r.json.message,
        `ValidatingWebhookConfiguration.admissionregistration.k8s.io "refused-${i}" is invalid: ${said}`,
      );
    }
    // A configuration is never sent to a webhook (kube-apiserver exempts them): a catch-all one that
    // is down cannot block its own repair.
    await register('Validating', 'catch-all', 'unused', 'https://127.0.0.1:1/down');
    const patched = await raw(
      kc,
      'PATCH',
      '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/catch-all',
      JSON.stringify([
        {
          op: 'replace',
          path: '/webhooks/0/rules',
          value: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
        },
        { op: 'replace', path: '/webhooks/0/objectSelector', value: {} },
      ]),
      { 'Content-Type': 'application/json-patch+json' },
    );
    assert.equal(patched.status, 200, patched.text);
    const deleted = await raw(
      kc,
      'DELETE',
      '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/catch-all',
    );
    assert.equal(deleted.status, 200, deleted.text);
  });

  it('a denial without a message, and with a code of its own', async () => {
    const denier = await webhookServer(() => ({ allowed: false, status: { code: 422, reason: 'Invalid' } }));
    servers.push(denier.server);
    await register('Validating', 'denier', 'deny', denier.url);
    const r = await create('denied', 'deny');
    assert.equal(r.status, 422, r.text);
    assert.equal(r.json.reason, 'Invalid');
    // The webhook's status as it gave it (webhook/errors.ToStatusErr), no `is forbidden` prefix.
    assert.equal(r.json.message, 'admission webhook "denier.example.com" denied the request: Invalid');
  });

  it('an apply whose object a mutating webhook changed stays the applier’s: the next apply meets no conflict', async () => {
    const defaulter = await webhookServer((review) =>
      review.request.object.data?.size ? {} : jsonPatch([{ op: 'add', path: '/data/size', value: 'small' }]),
    );
    servers.push(defaulter.server);
    await register('Mutating', 'defaulter', 'apply', defaulter.url);
    const apply = (data: Record<string, string>) =>
      raw(
        kc,
        'PATCH',
        '/api/v1/namespaces/default/configmaps/applied?fieldManager=tester',
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'applied', labels: { test: 'apply' } },
          data,
        }),
        { 'Content-Type': 'application/apply-patch+yaml' },
      );
    const created = await apply({ a: '1' });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.json.data, { a: '1', size: 'small' });
    const managers = created.json.metadata.managedFields.map((m: Review) => `${m.manager}/${m.operation}`);
    assert.deepEqual(managers, ['tester/Apply']);
    assert.ok(JSON.stringify(created.json.metadata.managedFields[0].fieldsV1).includes('f:size'));
    const again = await apply({ a: '2', size: 'large' });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.json.data, { a: '2', size: 'large' });
  });
});
