/**
 * Behaviour specific to the local API server (its options, CLI and extensions); what it shares with
 * kube-apiserver is pinned by conformance.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import {
  CoreV1Api,
  KubeConfig,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { applyFaultConfig, faultConfigFromEnv } from '../faults.ts';
import { startLocalApiServer } from '../index.ts';
import { openWatch, raw } from './helpers.ts';
import { waitFor } from './wait.ts';

const run = promisify(execFile);

test('a watch older than the bounded history (historySize) gets 410 without forced compaction', async () => {
  const server = await startLocalApiServer({ historySize: 3 });
  try {
    const kc = server.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const first = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'c0' } },
    });
    for (let i = 1; i < 6; i++)
      await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `c${i}` } } });
    const w = await openWatch(
      kc,
      `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${first.metadata?.resourceVersion}`,
    );
    await w.done;
    assert.equal(w.events[0]?.type, 'ERROR');
    assert.equal(w.events[0]?.object.code, 410);
    // Other resources keep their own window.
    const list = await core.listNamespacedSecret({ namespace: 'default' });
    const ok = await openWatch(
      kc,
      `/api/v1/namespaces/default/secrets?watch=1&resourceVersion=${list.metadata?.resourceVersion}&timeoutSeconds=1`,
    );
    await ok.done;
    assert.ok(!ok.events.some((e) => e.type === 'ERROR'));
  } finally {
    await server.stop();
  }
});

test('periodic BOOKMARKs every bookmarkIntervalMs; sendInitialEvents ends the initial list with a marked BOOKMARK', async () => {
  const server = await startLocalApiServer({ bookmarkIntervalMs: 100 });
  try {
    const kc = server.kubeConfig();
    const w = await openWatch(
      kc,
      '/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=1',
    );
    await waitFor(() => w.events.filter((e) => e.type === 'BOOKMARK').length >= 2, {
      message: 'two bookmarks',
    });
    w.close();
    const init = await openWatch(
      kc,
      '/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1',
    );
    await init.done;
    const end = init.events.findIndex(
      (e) => e.type === 'BOOKMARK' && e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true',
    );
    assert.ok(end > 0, 'initial ADDED events then the marked bookmark');
    assert.ok(init.events.slice(0, end).every((e) => e.type === 'ADDED'));
  } finally {
    await server.stop();
  }
});

test('users: addUser tokens are subject to RBAC; unauthenticated requests are the admin unless configured otherwise', async () => {
  const server = await startLocalApiServer({ unauthenticated: 'anonymous' });
  try {
    const { kubeConfig } = server.addUser('bob', ['team-a']);
    const denied = await raw(kubeConfig, 'GET', '/api/v1/namespaces/default/secrets');
    assert.equal(denied.status, 403);
    assert.match(denied.json.message, /User "bob" cannot list resource "secrets"/);
    const anonymous = await fetch(`${server.url}/api/v1/namespaces`);
    assert.equal(anonymous.status, 403);
    assert.match(
      ((await anonymous.json()) as { message: string }).message,
      /User "system:anonymous" cannot list/,
    );
    const health = await fetch(`${server.url}/healthz`);
    assert.equal(health.status, 200, 'system:public-info-viewer');
  } finally {
    await server.stop();
  }
  const open = await startLocalApiServer();
  try {
    const r = await fetch(`${open.url}/api/v1/namespaces`);
    assert.equal(r.status, 200, 'kubectl sends no token over http: no credentials = admin by default');
  } finally {
    await open.stop();
  }
});

test('fault config from env: periodic watch drops, latency, failures', async () => {
  const config = faultConfigFromEnv({
    LOCAL_APISERVER_DROP_WATCHES_EVERY: '0.2',
    LOCAL_APISERVER_LATENCY_MS: '5',
    LOCAL_APISERVER_FAIL: 'list:secrets:503:1',
  });
  assert.deepEqual(config, { dropWatchesEverySeconds: 0.2, latencyMs: 5, fail: 'list:secrets:503:1' });
  const server = await startLocalApiServer();
  try {
    applyFaultConfig(server.faults, config);
    const kc = server.kubeConfig();
    assert.equal((await raw(kc, 'GET', '/api/v1/namespaces/default/secrets')).status, 503);
    assert.equal((await raw(kc, 'GET', '/api/v1/namespaces/default/secrets')).status, 200);
    const w = await openWatch(kc, '/api/v1/namespaces/default/secrets?watch=1');
    await w.done; // ended by the periodic drop
    assert.throws(() => applyFaultConfig(server.faults, { fail: 'garbage' }), /bad fault spec/);
  } finally {
    await server.stop();
  }
});

test('an informer keeps its cache through periodic watch drops', async () => {
  const server = await startLocalApiServer();
  try {
    const kc = server.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const informer = makeInformer(kc, '/api/v1/namespaces/default/configmaps', () =>
      core.listNamespacedConfigMap({ namespace: 'default' }),
    );
    await informer.start();
    server.faults.dropWatchesEvery(100);
    for (let i = 0; i < 5; i++)
      await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `d${i}` } } });
    await waitFor(
      () => informer.list('default').filter((o) => o.metadata?.name?.startsWith('d')).length === 5,
      { message: 'all five in the cache' },
    );
    server.faults.dropWatchesEvery(0);
    await informer.stop();
  } finally {
    await server.stop();
  }
});

test('dropNextWatchEvents loses the next event of one object on every open watch, which stays healthy', async () => {
  const server = await startLocalApiServer();
  try {
    const kc = server.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const list = await core.listNamespacedConfigMap({ namespace: 'default' });
    const w = await openWatch(
      kc,
      `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${list.metadata?.resourceVersion}`,
    );
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'a' } } });
    server.faults.dropNextWatchEvents({ storage: '/configmaps', namespace: 'default', name: 'a' }, 1);
    await core.patchNamespacedConfigMap(
      { namespace: 'default', name: 'a', body: { data: { lost: 'yes' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'b' } } });
    await core.patchNamespacedConfigMap(
      { namespace: 'default', name: 'a', body: { data: { seen: 'yes' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor(() => w.events.length >= 3, { message: 'three events' });
    assert.deepEqual(
      w.events.map((e) => [
        e.type,
        e.object.metadata.name,
        Object.keys(e.object.data ?? {})
          .sort()
          .join(),
      ]),
      [
        ['ADDED', 'a', ''],
        ['ADDED', 'b', ''],
        ['MODIFIED', 'a', 'lost,seen'],
      ],
    );
    assert.deepEqual((await core.readNamespacedConfigMap({ namespace: 'default', name: 'a' })).data, {
      lost: 'yes',
      seen: 'yes',
    });
    w.close();
  } finally {
    await server.stop();
  }
});

test('kubectl imperative commands send protobuf bodies: create secret, create role, auth can-i, delete', async () => {
  const server = await startLocalApiServer();
  const kubectl = (...args: string[]) =>
    run('kubectl', ['--kubeconfig', server.kubeconfigPath, ...args], { timeout: 30_000 });
  try {
    await kubectl('create', 'namespace', 'pb');
    await kubectl('-n', 'pb', 'create', 'secret', 'generic', 's', '--from-literal=a=b');
    await kubectl('-n', 'pb', 'create', 'serviceaccount', 'bot');
    await kubectl('-n', 'pb', 'create', 'role', 'r', '--verb=get', '--resource=secrets');
    await kubectl('-n', 'pb', 'create', 'rolebinding', 'rb', '--role=r', '--serviceaccount=pb:bot');
    const can = await kubectl(
      '-n',
      'pb',
      'auth',
      'can-i',
      'get',
      'secrets',
      '--as=system:serviceaccount:pb:bot',
    );
    assert.equal(can.stdout.trim(), 'yes');
    const cannot = await kubectl(
      '-n',
      'pb',
      'auth',
      'can-i',
      'delete',
      'secrets',
      '--as=system:serviceaccount:pb:bot',
    ).catch((e) => e);
    assert.equal(cannot.stdout.trim(), 'no');
    // A SelfSubjectReview in protobuf: who the request's user is.
    const whoami = await kubectl('auth', 'whoami', '--as=system:serviceaccount:pb:bot');
    assert.match(whoami.stdout, /Username\s+system:serviceaccount:pb:bot/);
    const data = await kubectl('-n', 'pb', 'get', 'secret', 's', '-o', 'jsonpath={.data.a}');
    assert.equal(Buffer.from(data.stdout, 'base64').toString(), 'b');
    await kubectl('delete', 'namespace', 'pb');
    const core = server.kubeConfig().makeApiClient(CoreV1Api);
    await waitFor(
      () =>
        core.readNamespace({ name: 'pb' }).then(
          () => false,
          () => true,
        ),
      { message: 'namespace gone' },
    );
  } finally {
    await server.stop();
  }
});

test('main.ts runs the server from the command line and writes a kubeconfig', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'apiserver-main-'));
  const kubeconfig = join(dir, 'kubeconfig');
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, '..', 'main.ts'), '--port', '0', '--kubeconfig', kubeconfig],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
    });
    const url = await waitFor(() => /listening on (http:\/\/\S+)/.exec(out)?.[1], {
      message: 'server started',
    });
    const kc = new KubeConfig();
    kc.loadFromString(readFileSync(kubeconfig, 'utf8'));
    assert.equal(kc.getCurrentCluster()?.server, url);
    const ns = await kc.makeApiClient(CoreV1Api).listNamespace();
    assert.ok(ns.items.some((n) => n.metadata?.name === 'default'));
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

test('tls: HTTPS with a self-signed CA in the kubeconfig; kubectl then authenticates with bearer tokens', async () => {
  const server = await startLocalApiServer({ tls: true });
  const dir = mkdtempSync(join(tmpdir(), 'apiserver-tls-'));
  try {
    assert.match(server.url, /^https:\/\//);
    const core = server.kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespacedServiceAccount({
      namespace: 'default',
      body: { metadata: { name: 'viewer' } },
    });
    const token = (
      await run('kubectl', ['--kubeconfig', server.kubeconfigPath, 'create', 'token', 'viewer'], {
        timeout: 30_000,
      })
    ).stdout.trim();
    const saKubeconfig = join(dir, 'viewer');
    await run(
      'kubectl',
      ['--kubeconfig', server.kubeconfigPath, 'config', 'view', '--raw', '--minify', '-o', 'yaml'],
      { timeout: 30_000 },
    ).then((r) => writeFileSync(saKubeconfig, r.stdout.replace(/token: \S+/, `token: ${token}`)));
    const denied = await run('kubectl', ['--kubeconfig', saKubeconfig, 'get', 'secrets'], {
      timeout: 30_000,
    }).catch((e) => e);
    assert.match(
      String(denied.stderr),
      /Error from server \(Forbidden\): secrets is forbidden: User "system:serviceaccount:default:viewer" cannot list resource "secrets" in API group "" in the namespace "default"/,
    );
    const self = await run('kubectl', ['--kubeconfig', saKubeconfig, 'auth', 'can-i', 'list', 'secrets'], {
      timeout: 30_000,
    }).catch((e) => e);
    assert.equal(String(self.stdout).trim(), 'no');
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('requestLogEntries bounds the request log to the latest entries; its counters count every request', async () => {
  const server = await startLocalApiServer({ requestLogEntries: 2 });
  try {
    const core = server.kubeConfig().makeApiClient(CoreV1Api);
    for (const name of ['a', 'b', 'c'])
      await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name } } });
    await core.readNamespacedConfigMap({ namespace: 'default', name: 'a' });
    await waitFor(() => server.requests.countsByVerb().get === 1, { message: 'the read logged' });
    assert.deepEqual(
      server.requests.entries().map((e) => `${e.verb} ${e.name}`),
      ['create ', 'get a'],
    );
    assert.equal(server.requests.countsByVerb().create, 3);
  } finally {
    await server.stop();
  }
});
