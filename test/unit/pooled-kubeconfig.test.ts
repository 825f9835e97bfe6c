import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { PooledKubeConfig } from '../../core/pooled-kubeconfig.ts';

// A server that counts the connections made to it and answers any GET with a Namespace.
let connections = 0;
const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  res.setHeader('Content-Type', 'application/json');
  res.end(
    JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: req.url?.split('/').pop() } }),
  );
});
server.on('connection', () => connections++);
let url = '';
before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

/** `kc` loaded with a cluster for which client-node builds an undici Agent (skip TLS verify). */
function load<T extends KubeConfig>(kc: T, user = 'u'): T {
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: url, skipTLSVerify: true }],
    users: [{ name: user, token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user }],
    currentContext: 'x',
  });
  return kc;
}

async function connectionsFor(kc: KubeConfig, requests: number): Promise<number> {
  const before = connections;
  const core = kc.makeApiClient(CoreV1Api);
  for (let i = 0; i < requests; i++)
    assert.equal((await core.readNamespace({ name: `n${i}` })).metadata?.name, `n${i}`);
  return connections - before;
}

test('client-node as shipped opens a connection per request (the baseline this class fixes)', async () => {
  assert.equal(await connectionsFor(load(new KubeConfig()), 10), 10);
});

// undici's pool may open a second connection for the request that follows a response still being
// finished on the first; after that, requests reuse the two.
test('PooledKubeConfig: sequential requests share keep-alive connections', async () => {
  assert.ok((await connectionsFor(load(new PooledKubeConfig()), 20)) <= 2);
});

test('PooledKubeConfig: another user gets a pool of its own', async () => {
  const kc = load(new PooledKubeConfig());
  assert.ok((await connectionsFor(kc, 10)) <= 2);
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: url, skipTLSVerify: true }],
    users: [{ name: 'other', token: 't2' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'other' }],
    currentContext: 'x',
  });
  const opened = await connectionsFor(kc, 10);
  assert.ok(opened >= 1 && opened <= 2, `${opened} connections`);
});

test('PooledKubeConfig.inlineTlsFiles: the TLS files are read once, into the data fields; the token is untouched', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'levelset-tls-'));
  try {
    for (const f of ['ca.crt', 'client.crt', 'client.key']) await writeFile(join(dir, f), `pem of ${f}`);
    const kc = new PooledKubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1', caFile: join(dir, 'ca.crt') }],
      users: [{ name: 'u', certFile: join(dir, 'client.crt'), keyFile: join(dir, 'client.key'), token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    kc.inlineTlsFiles();
    await rm(dir, { recursive: true });
    const decoded = (data: string | undefined) => Buffer.from(data ?? '', 'base64').toString();
    assert.equal(kc.getCurrentCluster()?.caFile, undefined);
    assert.equal(decoded(kc.getCurrentCluster()?.caData), 'pem of ca.crt');
    assert.equal(decoded(kc.getCurrentUser()?.certData), 'pem of client.crt');
    assert.equal(decoded(kc.getCurrentUser()?.keyData), 'pem of client.key');
    assert.equal(kc.getCurrentUser()?.token, 't');
    // The files are gone: what client-node applies now comes from the data fields.
    const options: { ca?: Buffer; headers?: Record<string, string> } = {};
    await kc.applyToHTTPSOptions(options);
    assert.equal(options.ca?.toString(), 'pem of ca.crt');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
