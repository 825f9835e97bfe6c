/**
 * The `admission` function on the real functions-framework server, serving this repository's
 * registry's webhooks (examples/foo's `foo-defaults` and `foo-scale`) at `/<name>`: a denial, a
 * patch, the failure answers that are not reviews (404, 405, 400), a log line per denial, and the
 * Prometheus metrics. It runs with a path token (`LEVELSET_ADMISSION_PATH_TOKEN`): every webhook is
 * at `/<token>/<name>`, and its bare path is a 404.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { describeSpan, keyTraces, readSpans } from '../../cli/impl/trace.ts';
import { createPrettyLog } from '../../local/progress.ts';
import { freePort } from '../../local/pubsub-emulator.ts';
import { type Service, startService } from '../../local/service.ts';
import { functionsCli, functionsMain } from '../../local/stack-services.ts';
import { scrapeSum } from '../support/metrics.ts';
import { waitFor } from '../support/wait.ts';

const review = (request: Record<string, unknown>) => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: crypto.randomUUID(),
    kind: { group: 'samplecontroller.k8s.io', version: 'v1alpha1', kind: 'Foo' },
    resource: { group: 'samplecontroller.k8s.io', version: 'v1alpha1', resource: 'foos' },
    namespace: 'team-a',
    name: 'web',
    operation: 'CREATE',
    userInfo: { username: 'dev', groups: ['system:authenticated'] },
    ...request,
  },
});
const foo = (spec: Record<string, unknown>) => ({
  apiVersion: 'samplecontroller.k8s.io/v1alpha1',
  kind: 'Foo',
  metadata: { name: 'web', namespace: 'team-a' },
  spec,
});

const token = 'admission-test-token-0123456789abcdef';

describe('the admission function', () => {
  let admission: Service | undefined;
  let url = '';
  let metricsUrl = '';
  let traces = '';

  before(async () => {
    traces = mkdtempSync(join(tmpdir(), 'levelset-admission-traces-'));
    const [port, metricsPort] = [await freePort(), await freePort()];
    admission = await startService({
      name: 'admission',
      args: [functionsCli, '--target=admission', `--port=${port}`, `--source=${functionsMain}`],
      port,
      env: {
        LEVELSET_TRACING: 'file',
        LEVELSET_TRACE_FILE: join(traces, 'admission.jsonl'),
        LEVELSET_TRACE_SAMPLE_RATIO: '1',
        LEVELSET_METRICS_PORT: String(metricsPort),
        LOG_LEVEL: 'info',
        LEVELSET_ADMISSION_PATH_TOKEN: token,
      },
    });
    url = `http://127.0.0.1:${port}/${token}`;
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  });

  after(async () => {
    await admission?.stop();
    rmSync(traces, { recursive: true, force: true });
  });

  const post = async (path: string, body: unknown, init: RequestInit = {}) => {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      ...init,
    });
    // biome-ignore lint/suspicious/noExplicitAny: an AdmissionReview walked as plain JSON.
    return { status: res.status, body: (await res.json().catch(() => undefined)) as Record<string, any> };
  };

  it('denies with the webhook message, echoing the uid, and logs one line for the denial', async () => {
    const sent = review({ object: foo({ deploymentName: 'web', replicas: 7 }) });
    const { status, body } = await post('/foo-scale', sent);
    assert.equal(status, 200);
    assert.equal(body.apiVersion, 'admission.k8s.io/v1');
    assert.equal(body.response.uid, sent.request.uid);
    assert.equal(body.response.allowed, false);
    assert.equal(body.response.status.code, 403);
    assert.match(
      body.response.status.message,
      /more than 3 replicas only for members of the group foo-scalers/,
    );
    const line = await waitFor(
      () => admission?.logs.find((l) => l.outcome === 'denied' && l.uid === sent.request.uid),
      { timeoutMs: 10_000, message: 'the denial log line' },
    );
    assert.equal(line.severity, 'INFO');
    assert.equal((line['logging.googleapis.com/labels'] as Record<string, string>).webhook, 'foo-scale');
    assert.equal(line.object, undefined, 'the object is never logged');
    // levelset dev's pretty view shows it in one line.
    assert.match(
      createPrettyLog().lines('admission', line)[0] ?? '',
      /^admission {3}✗ foo-scale CREATE foos team-a\/web denied \(\d+ ms\) — admission denied: spec.replicas 7: more than 3/,
    );
    assert.equal(await scrapeSum(metricsUrl, 'levelset_admission_denied_total', 'webhook="foo-scale"'), 1);
    assert.equal(
      await scrapeSum(
        metricsUrl,
        'levelset_admission_duration_seconds_count',
        'webhook="foo-scale",outcome="denied"',
      ),
      1,
    );
    // An admission span of the object's key, always exported (a denial), which levelset trace shows.
    const [trace] = await waitFor(
      () => {
        const found = keyTraces(readSpans(traces), 'team-a/web', 'foo');
        return found.length > 0 && found;
      },
      { message: 'the admission span in the trace file' },
    );
    assert.equal(trace?.outcome, 'denied');
    const span = trace?.spans.find((x) => x.name === 'admission');
    assert.equal(span?.status.code, 2);
    assert.equal(
      describeSpan(span as NonNullable<typeof span>),
      'webhook foo-scale: CREATE samplecontroller.k8s.io/v1alpha1/foos denied, ERROR denied',
    );
  });

  it('answers a mutation with a base64 JSON Patch', async () => {
    const { status, body } = await post('/foo-defaults', review({ object: foo({ replicas: 1 }) }));
    assert.equal(status, 200);
    assert.equal(body.response.allowed, true);
    assert.equal(body.response.patchType, 'JSONPatch');
    assert.deepEqual(JSON.parse(Buffer.from(body.response.patch, 'base64').toString()), [
      { op: 'add', path: '/spec/deploymentName', value: 'web' },
    ]);
  });

  it('answers what is not a review for a served webhook with 404, 405, 415 or 400, never 5xx', async () => {
    assert.equal((await post('/no-such-webhook', review({}))).status, 404);
    const bare = await fetch(url.replace(`/${token}`, '/foo-scale'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(review({ object: foo({ replicas: 7 }) })),
    });
    assert.equal(bare.status, 404, 'without the path token');
    assert.equal(
      admission?.logs.some((l) => JSON.stringify(l).includes(token)),
      false,
      'the token is never logged',
    );
    assert.equal((await fetch(`${url}/foo-scale`)).status, 405);
    assert.equal((await post('/foo-scale', 'x', { headers: { 'content-type': 'text/plain' } })).status, 415);
    const noUid = await post('/foo-scale', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' });
    assert.equal(noUid.status, 400);
    assert.match(noUid.body.message, /not an admission.k8s.io\/v1 AdmissionReview/);
    const notJson = await fetch(`${url}/foo-scale`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"request": not json',
    });
    assert.equal(notJson.status, 400);
  });
});
