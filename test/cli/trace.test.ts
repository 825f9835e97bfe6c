/**
 * `levelset trace --project`: the real binary against a fake Cloud Trace API v1 endpoint
 * (`LEVELSET_CLOUD_TRACE_API`; no emulator exists), authenticated by the real `google-auth-library`
 * with an `external_account` credentials file whose token exchange (`token_url`) is the same fake
 * server, so no request leaves the machine and no Application Default Credentials are needed.
 * Asserts the `projects.traces.list` query (filter, time window, view, paging), the waterfall
 * printed from v1 spans (order, indentation under parents, exit code 0), `--json`'s span ids in
 * OTLP's hex, exit code 1 for a key without a trace and for a refused request, and
 * `GOOGLE_CLOUD_PROJECT` standing in for `--project` when no local stack runs.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cloudSpan, cloudTraceFilter, hexSpanId, type KeyTrace, rfc3339Ms } from '../../cli/impl/trace.ts';
import { repoRoot } from '../../local/service.ts';

const bin = join(repoRoot, 'cli/levelset.ts');
const TOKEN = 'ya29.fake-sts-token';
const TRACE_A = '0af7651916cd43dd8448eb211c80319c';
const TRACE_B = '4bf92f3577b34da6a3ce929d0e0e4736';
/** v1 span ids: uint64 in decimal, as the API answers them. */
const ID = {
  aEnqueue: '1311768467463790320', // 0x123456789abcdef0
  aReconcile: '2',
  aGet: '3',
  bEnqueue: '11',
  bReconcile: '12',
  bPatch: '13',
};
const agent = { 'g.co/agent': 'opentelemetry-js 2.12.0; google-cloud-trace-exporter 3.1.0' };
const keyLabels = {
  'levelset.controller': 'foo',
  'levelset.key': 'team-a/web',
  'levelset.cluster': 'default',
};

/** The older trace: the relay saw the Foo's ADDED event; one delivery; one API call. */
const traceA = {
  projectId: 'p',
  traceId: TRACE_A,
  spans: [
    {
      spanId: ID.aGet, // listed before its parent: the reader orders by start
      kind: 'RPC_CLIENT',
      name: 'GET',
      startTime: '2026-11-25T09:46:40.025Z',
      endTime: '2026-11-25T09:46:40.035Z',
      parentSpanId: ID.aReconcile,
      labels: {
        ...agent,
        'service.name': 'levelset-functions',
        'http.request.method': 'GET',
        'url.path': '/apis/samplecontroller.k8s.io/v1alpha1/namespaces/team-a/foos/web',
        'http.response.status_code': '200',
      },
    },
    {
      spanId: ID.aEnqueue,
      kind: 'SPAN_KIND_UNSPECIFIED',
      name: 'enqueue',
      startTime: '2026-11-25T09:46:40.000000000Z',
      endTime: '2026-11-25T09:46:40.004500000Z',
      labels: {
        ...agent,
        ...keyLabels,
        'service.name': 'levelset-relay',
        'levelset.cause': 'watch',
        'levelset.event.type': 'ADDED',
        'levelset.resource': 'samplecontroller.k8s.io/v1alpha1/foos',
        'levelset.resource_version': '42',
        'messaging.message.id': '17',
        'g.co/r/generic_node/location': 'global',
      },
    },
    {
      spanId: ID.aReconcile,
      kind: 'RPC_SERVER',
      name: 'reconcile',
      startTime: '2026-11-25T09:46:40.020123456Z',
      endTime: '2026-11-25T09:46:40.080123456Z',
      parentSpanId: ID.aEnqueue,
      labels: {
        ...agent,
        ...keyLabels,
        'service.name': 'levelset-functions',
        'messaging.gcp_pubsub.message.delivery_attempt': '1',
        'levelset.reason': 'watch',
        'levelset.outcome': 'success',
      },
    },
  ],
};

/** The newer trace: the resync enqueued the key; the second attempt asked for a requeue. */
const traceB = {
  projectId: 'p',
  traceId: TRACE_B,
  spans: [
    {
      spanId: ID.bEnqueue,
      name: 'enqueue',
      startTime: '2026-11-25T10:00:00Z',
      endTime: '2026-11-25T10:00:00.002Z',
      parentSpanId: '0',
      labels: { ...keyLabels, 'service.name': 'levelset-functions', 'levelset.cause': 'resync' },
    },
    {
      spanId: ID.bReconcile,
      name: 'reconcile',
      startTime: '2026-11-25T10:00:01.500Z',
      endTime: '2026-11-25T10:00:01.740Z',
      parentSpanId: ID.bEnqueue,
      labels: {
        ...keyLabels,
        'service.name': 'levelset-functions',
        'messaging.gcp_pubsub.message.delivery_attempt': '2',
        'levelset.reason': 'resync',
        'levelset.outcome': 'requeue',
        'levelset.requeue_after_ms': '30000',
      },
    },
    {
      spanId: ID.bPatch,
      name: 'PATCH',
      startTime: '2026-11-25T10:00:01.600Z',
      endTime: '2026-11-25T10:00:01.650Z',
      parentSpanId: ID.bReconcile,
      labels: {
        'service.name': 'levelset-functions',
        'http.request.method': 'PATCH',
        'url.path': '/apis/apps/v1/namespaces/team-a/deployments/web-nginx',
        'url.query': '?fieldManager=levelset',
        'http.response.status_code': '200',
      },
    },
  ],
};

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('levelset trace --project (Cloud Trace API v1, fake endpoint, real binary)', () => {
  let server: Server;
  let base: string;
  let dir: string;
  const traceRequests: { url: URL; authorization: string | undefined }[] = [];
  let tokenRequests = 0;

  /** Runs the levelset bin with this Node, no local stack, credentials that reach only the fake. */
  const levelset = (args: string[], env: Record<string, string | undefined> = {}): Promise<Run> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [bin, ...args], {
        cwd: repoRoot,
        env: {
          ...process.env,
          GOOGLE_CLOUD_PROJECT: undefined,
          METADATA_SERVER_DETECTION: 'none',
          LEVELSET_STATE_DIR: join(dir, 'state'), // no stack.json: no local stack
          CLOUDSDK_CONFIG: join(dir, 'gcloud'), // no gcloud application default credentials
          GOOGLE_APPLICATION_CREDENTIALS: join(dir, 'credentials.json'),
          LEVELSET_CLOUD_TRACE_API: base,
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => {
        stdout += d;
      });
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });

  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://fake');
      req.resume();
      res.setHeader('Content-Type', 'application/json');
      if (req.method === 'POST' && url.pathname === '/token') {
        // The STS token exchange of the external_account credentials.
        tokenRequests++;
        res.end(
          JSON.stringify({
            access_token: TOKEN,
            issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
            token_type: 'Bearer',
            expires_in: 3600,
          }),
        );
        return;
      }
      if (req.method === 'GET' && url.pathname === '/v1/projects/p/traces') {
        traceRequests.push({ url, authorization: req.headers.authorization });
        const filter = url.searchParams.get('filter') ?? '';
        if (filter.includes('levelset.key:team-a/forbidden')) {
          res.statusCode = 403;
          res.end(
            JSON.stringify({
              error: {
                code: 403,
                message: 'The caller does not have permission',
                status: 'PERMISSION_DENIED',
              },
            }),
          );
          return;
        }
        if (!/\+levelset\.key:team-a\/web( |$)/.test(filter)) {
          res.end('{}');
          return;
        }
        // Newest first (orderBy=start desc), one trace per page.
        if (url.searchParams.get('pageToken') === 'page-2') res.end(JSON.stringify({ traces: [traceA] }));
        else res.end(JSON.stringify({ traces: [traceB], nextPageToken: 'page-2' }));
        return;
      }
      res.statusCode = 404;
      res.end(JSON.stringify({ error: { code: 404, message: `no ${req.method} ${url.pathname}` } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    dir = mkdtempSync(join(tmpdir(), 'levelset-trace-cloud-'));
    writeFileSync(join(dir, 'subject-token'), 'fake-subject-token');
    writeFileSync(
      join(dir, 'credentials.json'),
      JSON.stringify({
        type: 'external_account',
        audience:
          '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/test/providers/test',
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        token_url: `${base}/token`,
        credential_source: { file: join(dir, 'subject-token') },
      }),
    );
  });
  after(() => {
    server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("lists the key's traces with the label filter and prints their waterfalls, oldest first (exit 0)", async () => {
    traceRequests.length = 0;
    const startedAt = Date.now();
    const run = await levelset(['trace', 'foo', 'team-a/web', '--project', 'p']);
    assert.equal(run.code, 0, run.stderr);
    if (process.env.LEVELSET_TEST_VERBOSE) process.stderr.write(run.stdout);

    // Two pages: the first held one trace of the key, fewer than --last (3).
    assert.equal(traceRequests.length, 2);
    const [first, second] = traceRequests;
    assert.ok(first && second);
    const q = first.url.searchParams;
    assert.equal(q.get('view'), 'COMPLETE');
    assert.equal(q.get('filter'), '+levelset.key:team-a/web +levelset.controller:foo');
    assert.equal(q.get('orderBy'), 'start desc');
    assert.equal(q.get('pageSize'), '10');
    assert.equal(q.get('pageToken'), null);
    const start = Date.parse(q.get('startTime') ?? '');
    const end = Date.parse(q.get('endTime') ?? '');
    assert.ok(end >= startedAt - 1000 && end <= Date.now(), `endTime ${q.get('endTime')} is now`);
    assert.equal(end - start, 24 * 3_600_000, 'looks back 24 h');
    assert.equal(second.url.searchParams.get('pageToken'), 'page-2');
    assert.equal(second.url.searchParams.get('filter'), q.get('filter'));
    for (const r of traceRequests) assert.equal(r.authorization, `Bearer ${TOKEN}`);
    assert.ok(tokenRequests >= 1, 'the token came from the fake STS endpoint');

    assert.equal(
      run.stdout,
      [
        `trace ${TRACE_A}  foo team-a/web  2026-11-25T09:46:40.000Z  1 delivery, outcome success`,
        '     +0 ms      5 ms  enqueue [relay]  event seen: ADDED samplecontroller.k8s.io/v1alpha1/foos rv 42, published as message 17',
        '    +20 ms     60 ms    reconcile [functions]  delivered (attempt 1), reason watch, outcome success',
        '    +25 ms     10 ms      GET [functions]  /apis/samplecontroller.k8s.io/v1alpha1/namespaces/team-a/foos/web → 200',
        '',
        `trace ${TRACE_B}  foo team-a/web  2026-11-25T10:00:00.000Z  1 delivery, outcome requeue`,
        '     +0 ms      2 ms  enqueue [functions]  enqueued (resync)',
        '    +1.5 s    240 ms    reconcile [functions]  delivered (attempt 2), reason resync, outcome requeue, requeue after 30000 ms',
        '    +1.6 s     50 ms      PATCH [functions]  /apis/apps/v1/namespaces/team-a/deployments/web-nginx?fieldManager=levelset → 200',
        '',
        '',
      ].join('\n'),
    );
  });

  it('--json prints the same traces with OTLP hex span ids and the labels as attributes', async () => {
    const run = await levelset(['trace', 'foo', 'team-a/web', '--project', 'p', '--json']);
    assert.equal(run.code, 0, run.stderr);
    const traces = JSON.parse(run.stdout) as KeyTrace[];
    assert.deepEqual(
      traces.map((t) => [t.traceId, t.outcome, t.deliveries]),
      [
        [TRACE_A, 'success', 1],
        [TRACE_B, 'requeue', 1],
      ],
    );
    const [enqueue, reconcile, get] = traces[0]?.spans ?? [];
    assert.equal(enqueue?.spanId, '123456789abcdef0');
    assert.equal(enqueue?.parentSpanId, undefined);
    assert.equal(reconcile?.spanId, '0000000000000002');
    assert.equal(reconcile?.parentSpanId, '123456789abcdef0');
    assert.equal(get?.parentSpanId, '0000000000000002');
    assert.equal(reconcile?.service, 'levelset-functions');
    assert.equal(reconcile?.durationMs, 60);
    assert.deepEqual(reconcile?.attributes, {
      ...keyLabels,
      'messaging.gcp_pubsub.message.delivery_attempt': '1',
      'levelset.reason': 'watch',
      'levelset.outcome': 'success',
    });
    assert.equal(traces[1]?.spans[0]?.parentSpanId, undefined, 'parentSpanId 0 is a root');
  });

  it('exit 1 for a key without a trace, and for a request Cloud Trace refuses', async () => {
    const none = await levelset(['trace', 'foo', 'team-a/absent', '--project', 'p']);
    assert.equal(none.code, 1);
    assert.equal(none.stdout, '');
    assert.match(
      none.stderr,
      /^levelset: no trace of foo team-a\/absent in Cloud Trace of project p in the last 24h \(filter: \+levelset\.key:team-a\/absent \+levelset\.controller:foo;/,
    );
    assert.doesNotMatch(none.stderr, /\n\s+at /, 'no stack trace');

    const refused = await levelset(['trace', 'foo', 'team-a/forbidden', '--project', 'p']);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^levelset: Cloud Trace \(project p\): The caller does not have permission \(needs roles\/cloudtrace\.user; filter: \+levelset\.key:team-a\/forbidden \+levelset\.controller:foo\)\n$/,
    );
  });

  it('GOOGLE_CLOUD_PROJECT stands in for --project when no local stack runs; --since sets the window', async () => {
    traceRequests.length = 0;
    const run = await levelset(['trace', 'foo', 'team-a/web', '--since', '90m', '--last', '1'], {
      GOOGLE_CLOUD_PROJECT: 'p',
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(traceRequests.length, 1, 'one trace of the key is enough for --last 1');
    const q = traceRequests[0]?.url.searchParams;
    assert.equal(q?.get('filter'), '+levelset.key:team-a/web +levelset.controller:foo');
    assert.equal(Date.parse(q?.get('endTime') ?? '') - Date.parse(q?.get('startTime') ?? ''), 90 * 60_000);
    assert.match(run.stdout, new RegExp(`^trace ${TRACE_B}  foo team-a/web `));
    assert.doesNotMatch(run.stdout, new RegExp(TRACE_A));

    const bad = await levelset(['trace', 'foo', 'team-a/web', '--since', 'yesterday', '--project', 'p']);
    assert.equal(bad.code, 1, 'as every check of a flag (cli/levelset.ts rethrows a check error)');
    assert.match(bad.stderr, /^levelset: --since "yesterday": a duration such as 90m, 24h or 7d\n/);
    assert.equal(traceRequests.length, 1, 'no request for a bad --since');
  });
});

describe('Cloud Trace v1 spans as traced spans', () => {
  it('quotes a label value that is not a simple token', () => {
    assert.equal(cloudTraceFilter('ns/name-1.x_y'), '+levelset.key:ns/name-1.x_y');
    assert.equal(
      cloudTraceFilter('odd "key"\\', 'foo bar'),
      '+levelset.key:"odd \\"key\\"\\\\" +levelset.controller:"foo bar"',
    );
  });

  it('reads RFC 3339 times to the µs, decimal span ids as hex, /error/message as an error status', () => {
    const ms = rfc3339Ms('2026-11-25T09:46:40.123456789Z') - Date.UTC(2026, 10, 25, 9, 46, 40);
    assert.ok(Math.abs(ms - 123.456) < 1e-3, String(ms));
    assert.equal(rfc3339Ms('2026-11-25T10:46:40+01:00'), Date.UTC(2026, 10, 25, 9, 46, 40));
    assert.throws(() => rfc3339Ms('yesterday'), /not an RFC 3339 time/);
    assert.equal(hexSpanId('18446744073709551615'), 'ffffffffffffffff');
    assert.equal(hexSpanId('00F067AA0BA902B7'), '00f067aa0ba902b7');
    const span = cloudSpan('T', {
      spanId: '1',
      name: 'reconcile',
      startTime: '2026-11-25T09:46:40Z',
      endTime: '2026-11-25T09:46:41Z',
      labels: { '/error/message': 'boom', 'levelset.outcome': 'error' },
    });
    assert.deepEqual(span.status, { code: 2, message: 'boom' });
    assert.equal(span.service, 'unknown');
    assert.equal(span.traceId, 't');
    assert.equal(span.durationMs, 1000);
  });
});
