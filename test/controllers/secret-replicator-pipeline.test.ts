/**
 * The Secret replicator end to end, on real parts: relay → Pub/Sub emulator (ordered push
 * subscription) → `reconcile` under functions-framework → Kubernetes API (local API server, or the
 * cluster in TEST_KUBECONFIG). Only the Kubernetes API is used to arrange and observe.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import {
  COPY_LABEL,
  REPLICATE_TO_ANNOTATION,
  SOURCE_ANNOTATION,
} from '../../functions/controllers/secret-replicator/plan.ts';
import { type TestCluster, uniqueSuffix } from '../../functions/kit/testing.ts';
import type { StackMode } from '../../local/stack.ts';
import {
  PIPELINE_MODES,
  type Pipeline,
  pushEnvelope,
  serverlessStack,
  startPipeline,
} from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

/** The suite, run once per mode (below). */
const suite = (mode: StackMode) => () => {
  // Each suite its own names: on a real cluster the previous suite's namespaces may still terminate
  // (409 "object is being deleted" for a namespace of the same name).
  const run = uniqueSuffix();
  /** Every namespace of this suite matches this; sources narrow their targets to it, so a shared real cluster is safe. */
  const targetsPattern = `e2e-${run}-.*`;
  const secretValue = `s3cr3t-${run}`;
  /** Checks of the functions and Pub/Sub themselves: only the serverless mode has them. */
  const serverlessOnly = { skip: mode !== 'serverless' && 'serverless mode only (functions, Pub/Sub)' };
  let p: Pipeline;
  let core: CoreV1Api;
  let source: string;
  const targets: string[] = [];

  let cluster: TestCluster;
  /** A namespace `e2e-<run>-<label>-<random>`, deleted (and on a real cluster waited for) when the cluster stops. */
  const makeNamespace = (label: string) => cluster.createNamespace(`e2e-${run}-${label}`);
  const readCopy = (namespace: string, name: string) =>
    core.readNamespacedSecret({ namespace, name }).catch((err: { code?: number }) => {
      if (err.code === 404) return undefined;
      throw err;
    });
  const sourceSecret = (
    name: string,
    value: string,
    extra: Partial<V1Secret['metadata']> = {},
  ): V1Secret => ({
    metadata: {
      name,
      namespace: source,
      labels: { app: 'db' },
      annotations: { [REPLICATE_TO_ANNOTATION]: targetsPattern },
      ...extra,
    },
    type: 'Opaque',
    data: { password: Buffer.from(value).toString('base64') },
  });
  const decoded = (s: V1Secret | undefined) => Buffer.from(s?.data?.password ?? '', 'base64').toString();
  const copiesEverywhere = (name: string, value: string, namespaces: string[]) =>
    waitFor(
      async () => {
        const copies = await Promise.all(namespaces.map((ns) => readCopy(ns, name)));
        return copies.every((c) => c && decoded(c) === value) ? copies : undefined;
      },
      { message: `copies of ${name} = ${value} in ${namespaces.join(', ')}` },
    );

  before(async () => {
    p = await startPipeline(
      async (c) => {
        cluster = c;
        core = cluster.kubeConfig.makeApiClient(CoreV1Api);
        source = await makeNamespace('source');
        targets.push(await makeNamespace('a'), await makeNamespace('b'));
        return { LEVELSET_SOURCE_NAMESPACE: source };
      },
      { mode },
    );
  });

  after(async () => {
    await p?.stop();
  });

  it('copies a new source Secret into every target namespace, labelled and annotated as ours', async () => {
    await core.createNamespacedSecret({ namespace: source, body: sourceSecret('db-creds', secretValue) });
    const copies = await copiesEverywhere('db-creds', secretValue, targets);
    for (const copy of copies) {
      assert.equal(copy?.type, 'Opaque');
      assert.equal(copy?.metadata?.labels?.app, 'db', 'labels mirrored');
      assert.ok(copy?.metadata?.labels?.[COPY_LABEL], 'copy label');
      assert.equal(copy?.metadata?.annotations?.[SOURCE_ANNOTATION], `${source}/db-creds`);
    }
    assert.equal(
      await readCopy(source, 'db-creds').then((s) => s?.metadata?.labels?.[COPY_LABEL]),
      undefined,
    );
  });

  it('gives a new namespace every copy', async () => {
    const ns = await makeNamespace('c');
    targets.push(ns);
    await copiesEverywhere('db-creds', secretValue, [ns]);
  });

  it('carries an update of the source to every copy', async () => {
    const current = await core.readNamespacedSecret({ namespace: source, name: 'db-creds' });
    current.data = { password: Buffer.from(`${secretValue}-v2`).toString('base64') };
    await core.replaceNamespacedSecret({ namespace: source, name: 'db-creds', body: current });
    await copiesEverywhere('db-creds', `${secretValue}-v2`, targets);
  });

  it('restores a copy edited by hand and a copy deleted by hand', async () => {
    const [edited, deleted] = targets as [string, string];
    await core.patchNamespacedSecret({
      namespace: edited,
      name: 'db-creds',
      body: [{ op: 'replace', path: '/data/password', value: Buffer.from('tampered').toString('base64') }],
    });
    await core.deleteNamespacedSecret({ namespace: deleted, name: 'db-creds' });
    await copiesEverywhere('db-creds', `${secretValue}-v2`, [edited, deleted]);
  });

  it('never touches a Secret it does not own, reports the conflict, and replicates elsewhere', async () => {
    const [owned, ...others] = targets as [string, ...string[]];
    await core.createNamespacedSecret({
      namespace: owned,
      body: {
        metadata: { name: 'api-key' },
        type: 'Opaque',
        data: { password: Buffer.from('theirs').toString('base64') },
      },
    });
    await core.createNamespacedSecret({ namespace: source, body: sourceSecret('api-key', secretValue) });
    await copiesEverywhere('api-key', secretValue, others);
    const event = await waitFor(
      async () => {
        const events = await core.listNamespacedEvent({ namespace: source });
        return events.items.find((e) => e.involvedObject.name === 'api-key' && e.type === 'Warning');
      },
      { message: 'a Warning Event on the source Secret' },
    );
    assert.match(event.message ?? '', new RegExp(owned));
    await waitFor(
      () =>
        p.logs.some(
          ({ service, line }) =>
            service === 'reconcile' && line.severity === 'ERROR' && JSON.stringify(line).includes(owned),
        ),
      { message: 'an ERROR log line naming the conflicting namespace' },
    );
    const theirs = await core.readNamespacedSecret({ namespace: owned, name: 'api-key' });
    assert.equal(decoded(theirs), 'theirs', 'not overwritten');
    assert.equal(theirs.metadata?.labels?.[COPY_LABEL], undefined, 'not labelled');
  });

  it('deletes the copies of a deleted source', async () => {
    await core.createNamespacedSecret({ namespace: source, body: sourceSecret('temp', secretValue) });
    await copiesEverywhere('temp', secretValue, targets);
    await core.deleteNamespacedSecret({ namespace: source, name: 'temp' });
    await waitFor(
      async () => (await Promise.all(targets.map((ns) => readCopy(ns, 'temp')))).every((c) => !c),
      {
        message: 'copies of a deleted source gone',
      },
    );
  });

  it('heals with one resync what happened while the relay was down', serverlessOnly, async () => {
    await core.createNamespacedSecret({ namespace: source, body: sourceSecret('doomed', secretValue) });
    await copiesEverywhere('doomed', secretValue, targets);
    await p.stack.stopRelay();
    await core.deleteNamespacedSecret({ namespace: source, name: 'doomed' });
    const late = await makeNamespace('late');
    // Nothing watches now: the deletion and the new namespace are missed events.
    const report = await serverlessStack(p).runResync();
    assert.ok((report.controllers['secret-replicator']?.published ?? 0) >= 2, JSON.stringify(report));
    await copiesEverywhere('db-creds', `${secretValue}-v2`, [late]);
    await waitFor(
      async () => (await Promise.all(targets.map((ns) => readCopy(ns, 'doomed')))).every((c) => !c),
      {
        message: 'copies of a source deleted while the relay was down gone',
      },
    );
    targets.push(late);
    await p.stack.startRelay();
  });

  it('converges to the same state when the same key is delivered twice at once', serverlessOnly, async () => {
    const current = await core.readNamespacedSecret({ namespace: source, name: 'db-creds' });
    current.data = { password: Buffer.from(`${secretValue}-v3`).toString('base64') };
    await p.stack.stopRelay();
    await core.replaceNamespacedSecret({ namespace: source, name: 'db-creds', body: current });
    const message = {
      v: 1,
      controller: 'secret-replicator',
      namespace: source,
      name: 'db-creds',
      reason: 'manual',
      enqueuedAt: new Date().toISOString(),
    };
    const deliver = () =>
      fetch(serverlessStack(p).reconcile.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(pushEnvelope(message)),
      });
    const answers = await Promise.all([deliver(), deliver()]);
    assert.deepEqual(
      answers.map((a) => a.status),
      [204, 204],
    );
    await copiesEverywhere('db-creds', `${secretValue}-v3`, targets);
    await p.stack.startRelay();
  });

  it('acknowledges a malformed message without retrying it', serverlessOnly, async () => {
    const res = await fetch(serverlessStack(p).reconcile.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(pushEnvelope({ v: 2, controller: 'secret-replicator', name: 'x' })),
    });
    assert.equal(res.status, 204);
  });

  it('never writes Secret data to a log line', () => {
    const everything = JSON.stringify(p.logs);
    for (const value of [secretValue, `${secretValue}-v2`, 'theirs', 'tampered']) {
      assert.ok(!everything.includes(value), `plain value ${value} logged`);
      assert.ok(
        !everything.includes(Buffer.from(value).toString('base64')),
        `base64 value of ${value} logged`,
      );
    }
    assert.ok(p.logs.length > 0, 'logs were captured');
  });
};

for (const mode of PIPELINE_MODES) describe(`secret-replicator end to end (${mode})`, suite(mode));
