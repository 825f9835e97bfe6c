/**
 * The secret-replicator module against a Kubernetes API server (the local one, or the cluster in
 * TEST_KUBECONFIG) through the kit's `reconcilerForTest`, no relay or Pub/Sub: the copies each
 * reconcile leaves, its Events and log lines, and a request count where the count is the point
 * (counted on the client side, so it holds on a real cluster too). Sources narrow their targets to
 * this run's namespaces, so a shared real cluster is safe.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import type { Controller } from '../../core/contract/controller.ts';
import type { Key } from '../../core/contract/key.ts';
import { createLogger } from '../../core/log.ts';
import { createSecretReplicator } from '../../functions/controllers/secret-replicator/index.ts';
import {
  CONTENT_HASH_ANNOTATION,
  COPY_LABEL,
  REPLICATE_TO_ANNOTATION,
  SOURCE_ANNOTATION,
  SOURCE_VERSION_ANNOTATION,
} from '../../functions/controllers/secret-replicator/plan.ts';
import {
  type ReconcilerForTest,
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
  uniqueSuffix,
  writesOf,
} from '../../functions/kit/testing.ts';

const run = uniqueSuffix();
const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString();
const secretValue = `s3cr3t-${run}`;

describe('secret-replicator against an API server', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let controller: Controller;
  let t: ReconcilerForTest;
  let sourceNs: string;
  const targets: string[] = [];
  const logLines: Record<string, unknown>[] = [];

  /** Reconciles the source `name`; its requests. */
  const reconcile = async (name: string) => {
    const { requests, error } = await t.reconcile({ namespace: sourceNs, name });
    if (error) throw error;
    return requests;
  };
  const reads = (requests: readonly string[]) => requests.length - writesOf(requests).length;
  const read = (namespace: string, name: string) =>
    core.readNamespacedSecret({ namespace, name }).catch((err: { code?: number }) => {
      if (err.code === 404) return undefined;
      throw err;
    });
  const makeSource = (name: string, value: string, extra: Partial<V1Secret> = {}) =>
    core.createNamespacedSecret({
      namespace: sourceNs,
      body: {
        metadata: {
          name,
          labels: { app: 'db' },
          annotations: { [REPLICATE_TO_ANNOTATION]: `sr-${run}-.*` },
        },
        type: 'Opaque',
        data: { password: b64(value) },
        ...extra,
      },
    });
  const newTarget = async (label: string) => {
    const ns = await cluster.createNamespace(`sr-${run}-${label}`);
    targets.push(ns);
    return ns;
  };

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    sourceNs = await cluster.createNamespace(`src-${run}`);
    await newTarget('a');
    await newTarget('b');
    controller = createSecretReplicator({ config: { sourceNamespace: sourceNs, excludeNamespaces: [] } });
    const log = createLogger('test', {
      write(line: string) {
        logLines.push(JSON.parse(line));
      },
    });
    t = reconcilerForTest(controller, cluster.kubeconfigPath, { log });
  });

  after(async () => {
    await cluster?.stop();
  });

  it('creates a labelled, annotated copy in every target', async () => {
    await makeSource('db-creds', secretValue);
    await reconcile('db-creds');
    const src = await core.readNamespacedSecret({ namespace: sourceNs, name: 'db-creds' });
    for (const ns of targets) {
      const copy = await read(ns, 'db-creds');
      assert.equal(unb64(copy?.data?.password), secretValue);
      assert.equal(copy?.type, 'Opaque');
      assert.equal(copy?.metadata?.labels?.app, 'db');
      assert.equal(copy?.metadata?.labels?.[COPY_LABEL], 'db-creds');
      assert.equal(copy?.metadata?.annotations?.[SOURCE_ANNOTATION], `${sourceNs}/db-creds`);
      assert.equal(copy?.metadata?.annotations?.[SOURCE_VERSION_ANNOTATION], src.metadata?.resourceVersion);
      assert.match(copy?.metadata?.annotations?.[CONTENT_HASH_ANNOTATION] ?? '', /^[0-9a-f]{64}$/);
    }
  });

  it('a converged reconcile makes 3 requests, all reads (the source, its copies, the namespaces)', async () => {
    cluster.local?.requests.clear();
    const requests = await reconcile('db-creds');
    assert.equal(requests.length, 3, requests.join('\n'));
    assert.deepEqual(writesOf(requests), []);
    // The server's side of the count (only this test talks to it now).
    if (cluster.local) assert.equal(cluster.local.requests.entries().length, 3);
  });

  it('the converged request count does not grow with the number of namespaces', async () => {
    const more = await Promise.all(Array.from({ length: 20 }, (_, i) => newTarget(`n${i}`)));
    await reconcile('db-creds');
    for (const ns of more) assert.ok(await read(ns, 'db-creds'), ns);
    assert.equal((await reconcile('db-creds')).length, 3, 'still 3, with 20 more namespaces');
  });

  it('restores a copy edited by hand and a copy deleted by hand; writes only those', async () => {
    const [edited, deleted] = targets as [string, string];
    const copy = (await read(edited, 'db-creds')) as V1Secret;
    copy.data = { password: b64('tampered') };
    await core.replaceNamespacedSecret({ namespace: edited, name: 'db-creds', body: copy });
    await core.deleteNamespacedSecret({ namespace: deleted, name: 'db-creds' });
    const requests = await reconcile('db-creds');
    assert.equal(unb64((await read(edited, 'db-creds'))?.data?.password), secretValue);
    assert.equal(unb64((await read(deleted, 'db-creds'))?.data?.password), secretValue);
    const writes = writesOf(requests);
    assert.equal(writes.length, 3, `one create, one update, one Event: ${writes.join('\n')}`);
  });

  it('restores a copy whose data was edited with its managedFields cleared (nothing says who wrote it)', async () => {
    const [edited] = targets as [string];
    await reconcile('db-creds');
    const copy = (await read(edited, 'db-creds')) as V1Secret;
    copy.data = { password: b64('tampered') };
    // `[{}]` strips every managedFields entry (kube-apiserver's managedfields reset): the
    // content-hash annotation still matches, and no other manager is seen to own the data.
    copy.metadata = { ...copy.metadata, managedFields: [{}] };
    await core.replaceNamespacedSecret({ namespace: edited, name: 'db-creds', body: copy });
    assert.deepEqual((await read(edited, 'db-creds'))?.metadata?.managedFields ?? [], []);
    await reconcile('db-creds');
    assert.equal(unb64((await read(edited, 'db-creds'))?.data?.password), secretValue);
    assert.equal((await reconcile('db-creds')).length, 3, 'converged again: 3 requests, no copy read whole');
  });

  it('carries a source update to every copy from their metadata: no copy is read whole', async () => {
    await reconcile('db-creds');
    const src = await core.readNamespacedSecret({ namespace: sourceNs, name: 'db-creds' });
    src.data = { password: b64(`${secretValue}-meta`) };
    await core.replaceNamespacedSecret({ namespace: sourceNs, name: 'db-creds', body: src });
    const requests = await reconcile('db-creds');
    for (const ns of targets)
      assert.equal(unb64((await read(ns, 'db-creds'))?.data?.password), `${secretValue}-meta`);
    // A converged reconcile's 3 reads, none more (no copy read whole), and one update per copy.
    assert.equal(reads(requests), 3, requests.join('\n'));
    assert.equal(requests.filter((r) => r.startsWith('PUT ')).length, targets.length, requests.join('\n'));
    src.data = { password: b64(secretValue) };
    await core.replaceNamespacedSecret({
      namespace: sourceNs,
      name: 'db-creds',
      body: { ...src, metadata: { ...src.metadata, resourceVersion: undefined } },
    });
    await reconcile('db-creds');
  });

  it('recreates a copy someone made immutable when the source changes, whether or not managedFields tell', async () => {
    const [frozen, untracked] = targets as [string, string];
    await reconcile('db-creds');
    const copy = (await read(frozen, 'db-creds')) as V1Secret;
    await core.replaceNamespacedSecret({
      namespace: frozen,
      name: 'db-creds',
      body: { ...copy, immutable: true },
    });
    // `managedFields: [{}]` clears them: the copy's metadata no longer shows who wrote it, so the
    // kit's PUT from its metadata is refused (422) and the copy is read whole and recreated.
    const other = (await read(untracked, 'db-creds')) as V1Secret;
    await core.replaceNamespacedSecret({
      namespace: untracked,
      name: 'db-creds',
      body: { ...other, immutable: true, metadata: { ...other.metadata, managedFields: [{}] } },
    });
    assert.equal((await read(untracked, 'db-creds'))?.metadata?.managedFields, undefined);
    const src = await core.readNamespacedSecret({ namespace: sourceNs, name: 'db-creds' });
    src.data = { password: b64(`${secretValue}-frozen`) };
    await core.replaceNamespacedSecret({ namespace: sourceNs, name: 'db-creds', body: src });
    await reconcile('db-creds');
    const after = await read(frozen, 'db-creds');
    assert.equal(unb64(after?.data?.password), `${secretValue}-frozen`);
    assert.notEqual(after?.metadata?.uid, copy.metadata?.uid, 'deleted and created again');
    const other2 = await read(untracked, 'db-creds');
    assert.equal(unb64(other2?.data?.password), `${secretValue}-frozen`);
    assert.notEqual(other2?.metadata?.uid, other.metadata?.uid, 'deleted and created again');
    src.data = { password: b64(secretValue) };
    await core.replaceNamespacedSecret({
      namespace: sourceNs,
      name: 'db-creds',
      body: { ...src, metadata: { ...src.metadata, resourceVersion: undefined } },
    });
    await reconcile('db-creds');
  });

  it('gives a new namespace its copy and carries a source update to every copy', async () => {
    const late = await newTarget('c');
    const src = await core.readNamespacedSecret({ namespace: sourceNs, name: 'db-creds' });
    src.data = { password: b64(`${secretValue}-v2`) };
    await core.replaceNamespacedSecret({ namespace: sourceNs, name: 'db-creds', body: src });
    await reconcile('db-creds');
    for (const ns of targets)
      assert.equal(unb64((await read(ns, 'db-creds'))?.data?.password), `${secretValue}-v2`);
    assert.ok(await read(late, 'db-creds'));
  });

  it("a new namespace's key (<namespace>/<source>) converges that namespace alone, in as many requests whatever the number of namespaces", async () => {
    const late = await newTarget('d');
    // The source changes meanwhile: the other namespaces' copies are the source key's work, not this one's.
    const src = await core.readNamespacedSecret({ namespace: sourceNs, name: 'db-creds' });
    src.data = { password: b64(`${secretValue}-v3`) };
    await core.replaceNamespacedSecret({ namespace: sourceNs, name: 'db-creds', body: src });
    const { requests, error } = await t.reconcile({ namespace: late, name: 'db-creds' });
    assert.equal(error, undefined);
    assert.equal(unb64((await read(late, 'db-creds'))?.data?.password), `${secretValue}-v3`);
    const other = targets.find((ns) => ns !== late) ?? '';
    assert.equal(unb64((await read(other, 'db-creds'))?.data?.password), `${secretValue}-v2`, 'untouched');
    // 7 requests, whatever the number of namespaces (two dozen by now): 5 reads, then that
    // namespace's copy and its Event.
    assert.equal(requests.length, 7, requests.join('\n'));
    assert.equal(writesOf(requests).length, 2, requests.join('\n'));
    await reconcile('db-creds'); // the source key brings every other copy to -v3
  });

  it('never touches a Secret it does not own: Warning Event, ERROR log, other targets converge', async () => {
    const [theirsNs, ...others] = targets as [string, ...string[]];
    await core.createNamespacedSecret({
      namespace: theirsNs,
      body: { metadata: { name: 'api-key' }, type: 'Opaque', data: { password: b64('theirs') } },
    });
    await makeSource('api-key', secretValue);
    await reconcile('api-key'); // resolves: a conflict is not a retry
    const theirs = await read(theirsNs, 'api-key');
    assert.equal(unb64(theirs?.data?.password), 'theirs');
    assert.equal(theirs?.metadata?.labels?.[COPY_LABEL], undefined);
    for (const ns of others) assert.equal(unb64((await read(ns, 'api-key'))?.data?.password), secretValue);
    const events = await core.listNamespacedEvent({ namespace: sourceNs });
    const warning = events.items.find(
      (e) => e.involvedObject.name === 'api-key' && e.type === 'Warning' && e.reason === 'ErrResourceExists',
    );
    assert.ok(warning, 'Warning Event on the source');
    assert.match(warning.message ?? '', new RegExp(theirsNs));
    assert.ok(
      logLines.some((l) => l.severity === 'ERROR' && l.namespace === theirsNs && l.name === 'api-key'),
      'ERROR log line naming the namespace',
    );
    // Deleting the source deletes our copies only.
    await core.deleteNamespacedSecret({ namespace: sourceNs, name: 'api-key' });
    await reconcile('api-key');
    assert.equal(unb64((await read(theirsNs, 'api-key'))?.data?.password), 'theirs');
    for (const ns of others) assert.equal(await read(ns, 'api-key'), undefined);
  });

  it('an invalid regex is a TerminalError on the source, a Warning Event, and changes no copy', async () => {
    const versions = async () =>
      Promise.all(targets.map(async (ns) => (await read(ns, 'db-creds'))?.metadata?.resourceVersion));
    const before = await versions();
    const src = await core.readNamespacedSecret({ namespace: sourceNs, name: 'db-creds' });
    src.metadata = { ...src.metadata, annotations: { [REPLICATE_TO_ANNOTATION]: 'sr-(' } };
    await core.replaceNamespacedSecret({ namespace: sourceNs, name: 'db-creds', body: src });
    const { error } = await t.reconcile({ namespace: sourceNs, name: 'db-creds' });
    assert.equal(error?.reason, 'InvalidReplicateTo');
    assert.deepEqual(await versions(), before, 'every copy as it was');
    const events = await core.listNamespacedEvent({ namespace: sourceNs });
    assert.ok(
      events.items.some(
        (e) =>
          e.involvedObject.name === 'db-creds' && e.type === 'Warning' && e.reason === 'InvalidReplicateTo',
      ),
      'Warning Event on the source',
    );
    const fresh = await core.readNamespacedSecret({ namespace: sourceNs, name: 'db-creds' });
    fresh.metadata = { ...fresh.metadata, annotations: { [REPLICATE_TO_ANNOTATION]: `sr-${run}-.*` } };
    await core.replaceNamespacedSecret({ namespace: sourceNs, name: 'db-creds', body: fresh });
  });

  it('recreates copies when the source is recreated with another type', async () => {
    await makeSource('typed', secretValue);
    await reconcile('typed');
    await core.deleteNamespacedSecret({ namespace: sourceNs, name: 'typed' });
    await makeSource('typed', secretValue, {
      type: 'kubernetes.io/basic-auth',
      data: { username: b64('u'), password: b64(secretValue) },
    });
    await reconcile('typed');
    for (const ns of targets) assert.equal((await read(ns, 'typed'))?.type, 'kubernetes.io/basic-auth');
  });

  it('listKeys yields every source and every source implied by an orphaned copy, once', async () => {
    // An orphan: a copy whose source is gone (deleted while nothing watched).
    await makeSource('orphaned', secretValue);
    await reconcile('orphaned');
    await core.deleteNamespacedSecret({ namespace: sourceNs, name: 'orphaned' });
    const keys: Key[] = [];
    for await (const k of controller.listKeys?.(t.ctx) ?? []) keys.push(k);
    const names = keys.map((k) => `${k.namespace}/${k.name}`);
    assert.equal(new Set(names).size, names.length, `duplicates in ${names.join(', ')}`);
    for (const name of ['db-creds', 'typed', 'orphaned'])
      assert.ok(names.includes(`${sourceNs}/${name}`), name);
    await reconcile('orphaned');
    for (const ns of targets) assert.equal(await read(ns, 'orphaned'), undefined);
  });

  it('never logs Secret data', () => {
    const everything = JSON.stringify(logLines);
    for (const value of [secretValue, `${secretValue}-v2`, 'theirs', 'tampered']) {
      assert.ok(!everything.includes(value) && !everything.includes(b64(value)), value);
    }
    assert.ok(logLines.length > 0);
  });
});
