/**
 * `levelset logs`: as the real binary against a running local stack (its log files), filtered by
 * controller, key and outcome, and `--follow` printing a new delivery as it is written; and its
 * `--project` path through the real `@google-cloud/logging` client over its REST transport, against
 * a fake Cloud Logging HTTP endpoint (no emulator exists): the same filter a Logs Explorer query
 * uses, the same output as the local lines.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Logging } from '@google-cloud/logging';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { OAuth2Client } from 'google-auth-library';
import { cloudLogSource, formatRecord, localRecord, runLogs } from '../../cli/impl/logs.ts';
import { LABELS } from '../../core/log.ts';
import { repoRoot } from '../../local/service.ts';
import { type Pipeline, startPipeline } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);
const bin = join(
  repoRoot,
  (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin
    .levelset ?? 'missing',
);
const resource = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos' };

describe('levelset logs against the local stack', () => {
  let p: Pipeline;
  let ns: string;
  let stateDir: string;
  let follower: ChildProcess | undefined;
  const env = () => ({ ...process.env, LEVELSET_STATE_DIR: stateDir });
  const outcomes = () =>
    p.logs.filter(({ service, line }) => {
      const labels = line[LABELS] as { key?: string } | undefined;
      return service === 'reconcile' && labels?.key === `${ns}/web` && typeof line.outcome === 'string';
    }).length;

  before(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'levelset-state-'));
    p = await startPipeline(
      async (cluster) => {
        ns = await cluster.createNamespace('logs');
        await cluster.applyCrd(join(repoRoot, 'examples/foo/controllers/foo/crd.yaml'), resource, ns);
        return {};
      },
      { mode: 'serverless', stateDir },
    );
    await p.cluster.kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...resource,
      namespace: ns,
      body: {
        apiVersion: 'samplecontroller.k8s.io/v1alpha1',
        kind: 'Foo',
        metadata: { name: 'web' },
        spec: { deploymentName: 'web-nginx', replicas: 1 },
      },
    });
    // The first delivery of a stack just started: the function loads the controller on its first
    // request. Under npm test's load (two files at once on 2 cores, e.g. beside the tiny bench) it
    // once took over the default 20 s.
    await waitFor(() => outcomes() >= 1, { message: 'a delivery of the Foo', timeoutMs: 60_000 });
  });
  after(async () => {
    follower?.kill('SIGTERM');
    await p?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it("prints one key's outcome lines, filtered by controller, key and outcome", async () => {
    const { stdout } = await exec(
      process.execPath,
      [bin, 'logs', '--controller', 'foo', '--key', `${ns}/web`, '--outcome', 'success'],
      { cwd: repoRoot, env: env() },
    );
    const lines = stdout.trim().split('\n');
    assert.ok(lines.length >= 1, stdout);
    for (const line of lines)
      assert.match(
        line,
        new RegExp(
          `^\\S+Z INFO +reconcile +foo ${ns}/web reconciled outcome=success durationMs=\\d+ reason=watch`,
        ),
      );
    const json = await exec(process.execPath, [bin, 'logs', '--key', `${ns}/web`, '-o', 'json'], {
      cwd: repoRoot,
      env: env(),
    });
    const records = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { service: string; key: string; message: string });
    assert.ok(records.every((r) => r.key === `${ns}/web`));
    assert.ok(records.some((r) => r.service === 'reconcile' && r.message === 'children converged'));
  });

  it('--follow prints the next delivery as it is written', async () => {
    const child = spawn(
      process.execPath,
      [bin, 'logs', '--key', `${ns}/web`, '--outcome', 'success', '-f', '--limit', '1'],
      { cwd: repoRoot, env: env(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    follower = child;
    let stdout = '';
    child.stdout?.on('data', (d) => {
      stdout += String(d);
    });
    const lines = () => stdout.split('\n').filter(Boolean);
    // The last past line first: from then on the follower reads what is appended.
    await waitFor(() => lines().length === 1, { message: `the last past line (got: ${stdout})` });
    await p.cluster.kubeConfig
      .makeApiClient(CustomObjectsApi)
      .patchNamespacedCustomObject(
        { ...resource, namespace: ns, name: 'web', body: { spec: { replicas: 2 } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    await waitFor(() => lines().length >= 2, { message: `the followed line (got: ${stdout})` });
    assert.match(lines()[1] ?? '', new RegExp(`reconcile +foo ${ns}/web reconciled outcome=success`));
    child.kill('SIGTERM');
    follower = undefined;
  });
});

describe('levelset logs --project (Cloud Logging over its REST transport, fake endpoint)', () => {
  let server: Server;
  const requests: { url: string; body: { filter: string; orderBy: string; pageSize: number } }[] = [];
  let answers: object[][] = [];
  let logging: Logging;
  const local = JSON.stringify({
    severity: 'INFO',
    timestamp: { seconds: 1795600000, nanos: 123000000 },
    [LABELS]: { controller: 'foo', key: 'team-a/web' },
    outcome: 'success',
    durationMs: 12,
    reason: 'resync',
    serviceContext: { service: 'levelset-functions' },
    message: 'reconciled',
  });
  const entry = {
    logName: 'projects/p/logs/run.googleapis.com%2Fstdout',
    timestamp: '2026-11-25T09:46:40.123Z',
    severity: 'INFO',
    labels: { controller: 'foo', key: 'team-a/web' },
    resource: { type: 'cloud_run_revision', labels: { service_name: 'levelset-reconcile' } },
    jsonPayload: {
      outcome: 'success',
      durationMs: 12,
      reason: 'resync',
      serviceContext: { service: 'levelset-functions' },
      message: 'reconciled',
    },
  };

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        requests.push({ url: req.url ?? '', body: JSON.parse(body) });
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ entries: answers.shift() ?? [] }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const auth = new OAuth2Client();
    auth.setCredentials({ access_token: 'test-token', expiry_date: Date.now() + 3_600_000 });
    logging = new Logging({
      projectId: 'p',
      apiEndpoint: '127.0.0.1',
      port: (server.address() as { port: number }).port,
      protocol: 'http',
      fallback: true,
      authClient: auth,
    } as ConstructorParameters<typeof Logging>[0]);
  });
  after(() => {
    server?.close();
  });

  it("queries entries.list with the Logs Explorer filter and prints them as the local stack's lines", async () => {
    answers = [[entry]];
    const out: string[] = [];
    await runLogs(
      {
        project: 'p',
        controller: 'foo',
        key: 'team-a/web',
        outcome: 'success',
        follow: false,
        limit: 50,
        output: 'text',
      },
      { logging, out: (l) => out.push(l) },
    );
    const sent = requests.at(-1);
    assert.equal(sent?.url.split('?')[0], '/v2/entries:list');
    assert.match(
      sent?.body.filter ?? '',
      /^labels\.controller="foo" AND labels\.key="team-a\/web" AND jsonPayload\.outcome="success"/,
    );
    assert.equal(sent?.body.orderBy, 'timestamp desc');
    assert.equal(sent?.body.pageSize, 50);
    const fromLocal = localRecord('reconcile', local);
    assert.ok(fromLocal);
    assert.deepEqual(out, [formatRecord(fromLocal)]);
    assert.equal(
      out[0],
      '2026-11-25T09:46:40.123Z INFO    reconcile foo team-a/web reconciled outcome=success durationMs=12 reason=resync',
    );
  });

  it('follows by asking for entries newer than the last one printed', async () => {
    answers = [[entry], [{ ...entry, timestamp: '2026-11-25T09:47:00.000Z', severity: 400 }]];
    const source = cloudLogSource(logging, { key: 'team-a/web' }, 10);
    assert.equal((await source.last(10)).length, 1);
    const iterator = source.follow()[Symbol.asyncIterator]();
    const next = await iterator.next();
    await iterator.return?.();
    assert.equal(next.value?.[0]?.severity, 'WARNING');
    assert.match(requests.at(-1)?.body.filter ?? '', /timestamp>"2026-11-25T09:46:40\.123Z"/);
    assert.equal(requests.at(-1)?.body.orderBy, 'timestamp asc');
  });
});
