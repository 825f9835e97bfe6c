/**
 * A metadata LIST whose continue token expired between two pages (core/k8s/list.ts
 * `listMetadataPaged`): a paced resync reads a page every few minutes, and a real API server's
 * etcd compaction (every 5 minutes by default) expires the token; the `410 Expired` answer carries a
 * token for the rest of the list, which the enumeration takes. Found against our own build of
 * kube-apiserver v1.36.2: a 10 000-key resync paced at 30 keys per second failed after 9 000 keys.
 * Against a stub HTTP server that answers as kube-apiserver does.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { listMetadataPaged } from '../../core/k8s/list.ts';
import { PooledKubeConfig } from '../../core/pooled-kubeconfig.ts';
import { configmaps } from '../../functions/kit/resources.ts';

const expired = (resumeWith: string | undefined) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: resumeWith ? { continue: resumeWith } : {},
  status: 'Failure',
  message: 'The provided continue parameter is too old to display a consistent list result.',
  reason: 'Expired',
  code: 410,
});

describe('listMetadataPaged after an expired continue token', () => {
  /** The `continue` of every request, in order. */
  const asked: (string | null)[] = [];
  /** Whether the 410 carries a token for the rest. */
  let resumable = true;
  const server = createServer((req, res) => {
    const token = new URL(req.url ?? '/', 'http://x').searchParams.get('continue');
    asked.push(token);
    res.setHeader('Content-Type', 'application/json');
    const page = (names: string[], next?: string) =>
      res.end(
        JSON.stringify({
          kind: 'PartialObjectMetadataList',
          apiVersion: 'meta.k8s.io/v1',
          metadata: next ? { continue: next } : {},
          items: names.map((name) => ({ metadata: { namespace: 'ns', name } })),
        }),
      );
    if (token === null) return page(['a', 'b'], 'first');
    if (token === 'first') {
      res.statusCode = 410;
      return res.end(JSON.stringify(expired(resumable ? 'resumed' : undefined)));
    }
    if (token === 'resumed') return page(['c']);
    res.statusCode = 400;
    res.end('{}');
  });
  let kc: PooledKubeConfig;
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    kc = new PooledKubeConfig();
    kc.loadFromOptions({
      clusters: [
        {
          name: 'c',
          server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          skipTLSVerify: true,
        },
      ],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  });
  after(() => server.close());

  const names = async () => {
    const all: string[] = [];
    for await (const o of listMetadataPaged(kc, configmaps)) all.push(o.metadata?.name ?? '');
    return all;
  };

  test('the enumeration goes on with the token the 410 carries, and lists the rest once', async () => {
    asked.length = 0;
    resumable = true;
    assert.deepEqual(await names(), ['a', 'b', 'c']);
    assert.deepEqual(asked, [null, 'first', 'resumed']);
  });

  test('a 410 without a token for the rest is thrown', async () => {
    asked.length = 0;
    resumable = false;
    await assert.rejects(names(), (err: { code?: number }) => err.code === 410);
  });
});
