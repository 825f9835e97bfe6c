/**
 * The secret-replicator module against a Kubernetes API server (the local one, or the cluster in
 * TEST_KUBECONFIG): `reconcile` and `listKeys` called directly with real clients, no relay or
 * Pub/Sub. Every request the module makes is counted on the client side (one call of
 * `applySecurityAuthentication` per HTTP request), so the count holds on a real cluster too.
 * Sources narrow their targets to this run's namespaces, so a shared real cluster is safe.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import type { Controller, ReconcileContext } from '../../functions/contract/controller.ts';
import type { Key } from '../../functions/contract/key.ts';
import { createSecretReplicator } from '../../functions/controllers/secret-replicator/index.ts';
import {
  CONTENT_HASH_ANNOTATION,
  COPY_LABEL,
  REPLICATE_TO_ANNOTATION,
  SOURCE_ANNOTATION,
  SOURCE_VERSION_ANNOTATION,
} from '../../functions/controllers/secret-replicator/plan.ts';
import { TerminalError } from '../../functions/k8s/errors.ts';
import { createEventRecorder } from '../../functions/k8s/events.ts';
import { createLogger } from '../../functions/log.ts';
import { startTestCluster, type TestCluster, uniqueSuffix } from '../support/cluster.ts';
import { CountingKubeConfig } from '../support/counting-kubeconfig.ts';

const run = uniqueSuffix();
const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString();
const secretValue = `s3cr3t-${run}`;

describe('secret-replicator against an API server', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let kc: CountingKubeConfig;
  let controller: Controller;
  let sourceNs: string;
  const targets: string[] = [];
  const logLines: Record<string, unknown>[] = [];
  let ctx: ReconcileContext;

  const reconcile = async (name: string) => {
    kc.requests.length = 0;
    await controller.reconcile({ namespace: sourceNs, name }, ctx);
    return [...kc.requests];
  };
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
    kc = new CountingKubeConfig({ query: true });
    kc.loadFromFile(cluster.kubeconfigPath);
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
    ctx = {
      cluster: 'default',
      kubeConfig: kc,
      log,
      events: createEventRecorder(kc, 'secret-replicator', log),
    };
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

  it('a converged reconcile makes 3 requests: GET source and LIST copies together, then LIST namespaces', async () => {
    cluster.local?.requests.clear();
    const requests = await reconcile('db-creds');
    assert.equal(requests.length, 3, requests.join('\n'));
    if (cluster.local) {
      // The server's side of the count (only this test talks to it now).
      const served = cluster.local.requests.entries().map((e) => `${e.verb} ${e.resource} ${e.status}`);
      assert.deepEqual(served.slice(0, 2).sort(), ['get secrets 200', 'list secrets 200']);
      assert.equal(served[2], 'list namespaces 200');
    }
    const [get = '', copies = ''] = requests.slice(0, 2).sort();
    assert.match(get, new RegExp(`^GET /api/v1/namespaces/${sourceNs}/secrets/db-creds$`));
    assert.match(copies, /^GET \/api\/v1\/secrets\?.*labelSelector=levelset.dev%2Freplica-of%3Ddb-creds/);
    assert.match(requests[2] ?? '', /^GET \/api\/v1\/namespaces(\?|$)/);
  });

  it('the converged request count does not grow with the number of namespaces', async () => {
    const more = await Promise.all(Array.from({ length: 20 }, (_, i) => newTarget(`n${i}`)));
    await reconcile('db-creds');
    for (const ns of more) assert.ok(await read(ns, 'db-creds'), ns);
    assert.equal((await reconcile('db-creds')).length, 3);
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
    const writes = requests.filter((r) => !r.startsWith('GET'));
    assert.deepEqual(
      writes.map((w) => w.split(' ')[0]).sort(),
      ['POST', 'POST', 'PUT'],
      `one create, one update, one Event: ${writes.join('\n')}`,
    );
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
    const copyGets = requests.filter(
      (r) => r.startsWith('GET') && targets.some((ns) => r.includes(`/namespaces/${ns}/`)),
    );
    assert.deepEqual(copyGets, [], requests.join('\n'));
    assert.equal(requests.filter((r) => r.startsWith('PUT')).length, targets.length);
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

  it("a new namespace's key (<namespace>/<source>) converges that namespace alone, with namespace-scoped requests", async () => {
    const late = await newTarget('d');
    // The source changes meanwhile: the other namespaces' copies are the source key's work, not this one's.
    const src = await core.readNamespacedSecret({ namespace: sourceNs, name: 'db-creds' });
    src.data = { password: b64(`${secretValue}-v3`) };
    await core.replaceNamespacedSecret({ namespace: sourceNs, name: 'db-creds', body: src });
    kc.requests.length = 0;
    await controller.reconcile({ namespace: late, name: 'db-creds' }, ctx);
    const requests = [...kc.requests];
    assert.equal(unb64((await read(late, 'db-creds'))?.data?.password), `${secretValue}-v3`);
    const other = targets.find((ns) => ns !== late) ?? '';
    assert.equal(unb64((await read(other, 'db-creds'))?.data?.password), `${secretValue}-v2`, 'untouched');
    // No unfiltered LIST of namespaces; its copies are listed in that namespace alone (a cluster-wide
    // LIST of the copies of a source "<namespace>/<name>" is metadata-only: it can only prune).
    assert.ok(
      !requests.some((r) => /^GET \/api\/v1\/namespaces(\?(?!.*fieldSelector)|$)/.test(r)),
      requests.join('\n'),
    );
    assert.ok(
      requests.some((r) =>
        r.startsWith(
          `GET /api/v1/namespaces/${late}/secrets?labelSelector=levelset.dev%2Freplica-of%3Ddb-creds`,
        ),
      ),
      requests.join('\n'),
    );
    assert.ok(
      requests.some((r) => /^GET \/api\/v1\/namespaces\?.*fieldSelector=metadata.name%3D/.test(r)),
      requests.join('\n'),
    );
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

  it('an invalid regex is a TerminalError on the source and changes no copy', async () => {
    const src = await core.readNamespacedSecret({ namespace: sourceNs, name: 'db-creds' });
    src.metadata = { ...src.metadata, annotations: { [REPLICATE_TO_ANNOTATION]: 'sr-(' } };
    await core.replaceNamespacedSecret({ namespace: sourceNs, name: 'db-creds', body: src });
    kc.requests.length = 0;
    await assert.rejects(
      controller.reconcile({ namespace: sourceNs, name: 'db-creds' }, ctx),
      (err: unknown) => err instanceof TerminalError && err.reason === 'InvalidReplicateTo',
    );
    assert.deepEqual(
      kc.requests.filter((r) => !r.startsWith('GET')),
      [],
    );
    for (const ns of targets) assert.ok(await read(ns, 'db-creds'));
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
    for await (const k of controller.listKeys?.(ctx) ?? []) keys.push(k);
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
