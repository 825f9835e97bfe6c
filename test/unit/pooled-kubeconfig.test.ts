import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
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
