/**
 * One key's trace across the whole local pipeline (serverless mode: relay → Pub/Sub emulator →
 * `reconcile` under functions-framework → Kubernetes API), as `levelset dev` collects it: each
 * process exports OTLP/JSON lines into the stack's state dir (core/tracing.ts `file`). Asserts
 * the spans of one trace and their parent links, the trace fields of the log lines, and
 * `levelset trace` as the real binary (output and exit codes).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { type KeyTrace, keyTraces, readSpans, type TracedSpan } from '../../cli/impl/trace.ts';
import { ATTR, SPAN } from '../../core/k8s/tracing.ts';
import { LABELS } from '../../core/log.ts';
import { repoRoot } from '../../local/service.ts';
import { type Pipeline, serverlessStack, startPipeline } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const CRD = join(repoRoot, 'examples/foo/controllers/foo/crd.yaml');
const CUSTOMCLUSTER_CRD = join(repoRoot, 'examples/customcluster/controllers/customcluster/crd.yaml');
const group = 'samplecontroller.k8s.io';
const version = 'v1alpha1';
const plural = 'foos';
const bin = join(repoRoot, 'cli/levelset.ts');

/** Runs the levelset bin with this Node and collects its output. */
function levelset(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('one key, one trace: relay, publish, delivery, reconcile, API calls (serverless)', () => {
  let p: Pipeline;
  let ns: string;
  let stateDir: string;
  let custom: CustomObjectsApi;
  let apps: AppsV1Api;

  before(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'levelset-trace-'));
    p = await startPipeline(
      async (cluster) => {
        ns = await cluster.createNamespace('trace');
        await cluster.applyCrd(CRD, { group, version, plural }, ns);
        await cluster.applyCrd(
          CUSTOMCLUSTER_CRD,
          { group: 'sde.dev', version: 'v1alpha1', plural: 'customclusters' },
          ns,
        );
        return {};
      },
      { mode: 'serverless', stateDir },
    );
    custom = p.cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    apps = p.cluster.kubeConfig.makeApiClient(AppsV1Api);
  });

  after(async () => {
    await p?.stop();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  /** The trace whose relay `enqueue` saw the Foo's ADDED event, once its reconcile succeeded. */
  const addedTrace = (name: string): Promise<KeyTrace> =>
    waitFor(
      () =>
        keyTraces(readSpans(join(stateDir, 'traces')), `${ns}/${name}`, 'foo').find(
          (t) =>
            t.outcome === 'success' &&
            t.spans.some(
              (s) =>
                s.name === SPAN.enqueue &&
                s.attributes[ATTR.eventType] === 'ADDED' &&
                String(s.attributes[ATTR.resource]).endsWith('/foos'),
            ),
        ),
      { timeoutMs: 30_000, message: `a successful trace of foo ${ns}/${name} from its ADDED event` },
    );

  it('holds the relay span, the publish, each delivery (a retried one too), the reconcile and its API calls, linked', async () => {
    const retried = p.cluster.local !== undefined;
    // The first delivery's read of the Foo fails (the local API server's fault injection): the key is
    // requeued (functions/runtime/retry.ts), and the second attempt continues the same trace.
    const stopFailing = p.cluster.local?.faults.failNext(
      { verb: 'get', resource: 'foos', namespace: ns, name: 'traced' },
      1,
      { status: 500 },
    );
    try {
      await custom.createNamespacedCustomObject({
        group,
        version,
        plural,
        namespace: ns,
        body: {
          apiVersion: `${group}/${version}`,
          kind: 'Foo',
          metadata: { name: 'traced' },
          spec: { deploymentName: 'traced-deploy', replicas: 1 },
        },
      });
      await waitFor(
        () => apps.readNamespacedDeployment({ namespace: ns, name: 'traced-deploy' }).catch(() => undefined),
        {
          timeoutMs: 30_000,
          message: 'the Foo’s Deployment',
        },
      );
      const t = await addedTrace('traced');
      const byId = new Map(t.spans.map((s) => [s.spanId, s]));
      const parentOf = (s: TracedSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);

      const [enqueue, ...moreEnqueues] = t.spans.filter((s) => s.name === SPAN.enqueue);
      assert.ok(enqueue, 'the relay’s enqueue span');
      assert.equal(moreEnqueues.length, 0);
      assert.equal(enqueue.service, 'levelset-relay');
      assert.equal(enqueue.parentSpanId, undefined, 'the enqueue span starts the trace');
      assert.equal(enqueue.attributes[ATTR.controller], 'foo');
      assert.equal(enqueue.attributes[ATTR.key], `${ns}/traced`);
      assert.match(String(enqueue.attributes[ATTR.resourceVersion]), /^\d+$/);

      const publish = t.spans.find(
        (s) => s.name.endsWith(' create') && s.attributes['messaging.system'] === 'gcp_pubsub',
      );
      assert.ok(publish, 'the Pub/Sub client’s publish span');
      assert.equal(parentOf(publish), enqueue, 'published under the enqueue span');

      const deliveries = t.spans.filter((s) => s.name === SPAN.reconcile);
      assert.equal(deliveries.length, retried ? 2 : 1, 'one reconcile span per delivery');
      for (const [i, d] of deliveries.entries()) {
        assert.equal(d.service, 'levelset-functions');
        if (i === 0)
          assert.equal(parentOf(d), publish, 'the delivery continues the published message’s context');
        else {
          // A retry: acknowledged, then requeued to the keys topic (functions/runtime/retry.ts) under a
          // requeue span of the delivery before, whose context the requeued message carries.
          const requeue = parentOf(d);
          assert.equal(requeue?.name, SPAN.requeue);
          assert.equal(requeue && parentOf(requeue), deliveries[i - 1], 'requeued by the failed delivery');
        }
        assert.equal(d.attributes[ATTR.deliveryAttempt], i + 1);
        assert.ok(d.startMs >= enqueue.startMs && d.startMs >= publish.startMs, 'in order');
      }
      const last = deliveries.at(-1) as TracedSpan;
      assert.equal(last.attributes[ATTR.outcome], 'success');
      if (retried) {
        assert.equal(deliveries[0]?.attributes[ATTR.outcome], 'transient');
        assert.equal(deliveries[0]?.status.code, 2, 'a failed delivery is an ERROR span');
      }

      // The API calls of the successful delivery: under it, directly or under the kit's child spans.
      const under = (s: TracedSpan, ancestor: TracedSpan): boolean => {
        for (let q = parentOf(s); q; q = parentOf(q)) if (q === ancestor) return true;
        return false;
      };
      const calls = t.spans.filter(
        (s) => s.attributes['http.request.method'] !== undefined && under(s, last),
      );
      const getFoo = calls.find(
        (s) =>
          s.attributes['http.request.method'] === 'GET' &&
          String(s.attributes['url.path']).endsWith(`/foos/traced`),
      );
      assert.ok(getFoo, 'the read of the Foo');
      assert.equal(parentOf(getFoo), last);
      assert.equal(getFoo.attributes['http.response.status_code'], 200);
      const create = t.spans.find((s) => s.name === 'child create' && under(s, last));
      assert.ok(create, 'the kit’s child create span');
      assert.equal(create.attributes[ATTR.child], 'Deployment traced-deploy');
      const post = calls.find(
        (s) => s.attributes['http.request.method'] === 'POST' && parentOf(s) === create,
      );
      assert.ok(post, 'the Deployment’s POST under the child create span');
      assert.match(
        String(post.attributes['url.path']),
        new RegExp(`/apis/apps/v1/namespaces/${ns}/deployments$`),
      );
      assert.ok(
        post.startMs >= last.startMs && post.startMs + post.durationMs <= last.startMs + last.durationMs + 1,
      );

      // Log lines written inside the span carry its trace (Cloud Logging's fields).
      const project = serverlessStack(p).emulator.projectId;
      const outcomeLines = () =>
        p.logs.filter(({ service, line }) => {
          const labels = line[LABELS] as { controller?: string; key?: string } | undefined;
          return (
            service === 'reconcile' && labels?.key === `${ns}/traced` && typeof line.outcome === 'string'
          );
        });
      // The function's span is in its trace file once it ended; its outcome line reaches this
      // process through its stdout, which may come a moment later.
      const successLine = await waitFor(
        () => outcomeLines().find(({ line }) => line['logging.googleapis.com/spanId'] === last.spanId),
        { message: 'the outcome line of the traced delivery, carrying its span id' },
      );
      assert.equal(
        successLine.line['logging.googleapis.com/trace'],
        `projects/${project}/traces/${t.traceId}`,
      );
      assert.equal(successLine.line['logging.googleapis.com/trace_sampled'], true);
      // …and nothing outside a span does: the relay's start line.
      const started = p.logs.find(
        ({ service, line }) => service === 'relay' && line.message === 'relay started',
      );
      assert.ok(started);
      assert.equal(started.line['logging.googleapis.com/trace'], undefined);
    } finally {
      stopFailing?.();
    }
  });

  it('a requeue continues the trace: the requeued delivery is a child of the requeue span of the delivery that asked', async () => {
    // 101 pods: the customcluster controller creates at most 100 per reconcile and asks to come
    // back in 1 s for the rest (examples/customcluster).
    await custom.createNamespacedCustomObject({
      group: 'sde.dev',
      version: 'v1alpha1',
      plural: 'customclusters',
      namespace: ns,
      body: {
        apiVersion: 'sde.dev/v1alpha1',
        kind: 'Customcluster',
        metadata: { name: 'requeued' },
        spec: { message: 'traced', count: 101 },
      },
    });
    const found = await waitFor(
      () => {
        for (const t of keyTraces(readSpans(join(stateDir, 'traces')), `${ns}/requeued`, 'customcluster')) {
          const byId = new Map(t.spans.map((s) => [s.spanId, s]));
          const requeued = t.spans.find(
            (s) =>
              s.name === SPAN.reconcile &&
              s.attributes[ATTR.reason] === 'requeue' &&
              s.attributes[ATTR.outcome],
          );
          const requeue = requeued?.parentSpanId ? byId.get(requeued.parentSpanId) : undefined;
          const asked = requeue?.parentSpanId ? byId.get(requeue.parentSpanId) : undefined;
          if (requeued && requeue && asked) return { t, requeued, requeue, asked };
        }
        return undefined;
      },
      { timeoutMs: 60_000, message: `a requeued delivery of customcluster ${ns}/requeued in its trace` },
    );
    assert.equal(found.requeue.name, SPAN.requeue);
    assert.equal(found.requeue.attributes[ATTR.requeueAfterMs], 1000);
    assert.equal(found.asked.name, SPAN.reconcile);
    assert.equal(found.asked.attributes[ATTR.outcome], 'requeue');
    assert.ok(found.requeued.startMs >= found.asked.startMs + 1000 - 5, 'delivered after the delay');
    assert.ok(
      found.t.spans.some((s) => s.name === SPAN.enqueue && s.parentSpanId === undefined),
      'the same trace starts at the relay',
    );
  });

  it('levelset trace prints the waterfall of the key (exit 0), --json for tools, exit 1 for a key without a trace', async () => {
    const t = await addedTrace('traced');
    const env = { LEVELSET_STATE_DIR: stateDir };
    const text = await levelset(['trace', 'foo', `${ns}/traced`, '--last', '5'], env);
    assert.equal(text.code, 0, text.stderr);
    if (process.env.LEVELSET_TEST_VERBOSE) process.stderr.write(text.stdout);
    assert.match(text.stdout, new RegExp(`^trace ${t.traceId}  foo ${ns}/traced .* outcome success$`, 'm'));
    assert.match(
      text.stdout,
      /^ +\+0 ms +(\d+ ms|\d+\.\d s) {2}enqueue \[relay\] {2}event seen: ADDED samplecontroller\.k8s\.io\/v1alpha1\/foos rv \d+/m,
    );
    assert.match(text.stdout, /^ .* {2}levelset-keys create \[relay\] {2}published to levelset-keys$/m);
    assert.match(
      text.stdout,
      /reconcile \[functions\] {2}delivered \(attempt 1\), reason watch, outcome (success|transient)/,
    );
    // The first delivery's GET of the primary at the version the relay saw (its event's), which
    // the API server serves from its watch cache; a retry (after the 500 the local server may
    // inject) reads the latest. One of them answered.
    const seenAt = /event seen: ADDED \S+ rv (\d+)/.exec(text.stdout)?.[1];
    assert.ok(seenAt, text.stdout);
    const primaryGet = `GET \\[functions\\]  /apis/${group}/${version}/namespaces/${ns}/foos/traced`;
    assert.match(text.stdout, new RegExp(`${primaryGet}\\?resourceVersion=${seenAt} → \\d+`));
    assert.match(text.stdout, new RegExp(`${primaryGet}(\\?resourceVersion=\\d+)? → 200`));
    assert.match(text.stdout, /child create \[functions\] {2}Deployment traced-deploy/);
    // Indentation follows the parent links: the POST sits under the child create span.
    const lines = text.stdout.split('\n');
    // Columns: offset (10), duration (9), then the span indented two spaces per level.
    const indent = (l: string | undefined) => (l ?? '').slice(22).match(/^ */)?.[0].length ?? -1;
    const createAt = lines.findIndex((l) => l.includes('child create [functions]'));
    assert.ok(
      indent(lines[createAt + 1]) > indent(lines[createAt]),
      lines.slice(createAt, createAt + 2).join('\n'),
    );

    const json = await levelset(['trace', 'foo', `${ns}/traced`, '--json'], env);
    assert.equal(json.code, 0, json.stderr);
    const traces = JSON.parse(json.stdout) as KeyTrace[];
    assert.ok(traces.some((x) => x.traceId === t.traceId && x.outcome === 'success'));

    const none = await levelset(['trace', 'foo', `${ns}/absent`], env);
    assert.equal(none.code, 1);
    assert.equal(none.stdout, '');
    assert.match(none.stderr, new RegExp(`^levelset: no trace of foo ${ns}/absent in `));
    // The trace files are OTLP/JSON lines (the OpenTelemetry Collector file exporter's format).
    const first = readFileSync(join(stateDir, 'traces', 'reconcile.jsonl'), 'utf8').split('\n')[0] ?? '';
    assert.ok(Array.isArray(JSON.parse(first).resourceSpans));
  });
});
