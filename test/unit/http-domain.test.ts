/**
 * functions-framework runs each HTTP request inside a `node:domain`; the functions' handlers leave
 * it (functions/runtime/http.ts `outsideRequestDomain`), so that the promises of a reconcile are not
 * tracked by the domain's async hooks. Served by the framework's own test server (its real wrapper).
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import * as ff from '@google-cloud/functions-framework';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import { outsideRequestDomain } from '../../functions/runtime/http.ts';

type Probe = { inHandler: boolean; afterAwait: boolean };

const inDomain = () => (process as { domain?: unknown }).domain != null;
const probe = async (res: { json(body: Probe): void }) => {
  const inHandler = inDomain();
  await new Promise((resolve) => setTimeout(resolve, 1));
  res.json({ inHandler, afterAwait: inDomain() });
};
ff.http('domain-probe-framework', (_req, res) => probe(res));
ff.http(
  'domain-probe-outside',
  outsideRequestDomain((_req, res) => probe(res)),
);
ff.http(
  'domain-probe-throws',
  outsideRequestDomain(async () => {
    throw new Error('boom');
  }),
);

const servers: ReturnType<typeof getTestServer>[] = [];
async function post(target: string): Promise<Response> {
  const server = getTestServer(target);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
}
after(() => {
  for (const s of servers) s.close();
});

describe('functions outside the framework request domain', () => {
  it('the framework runs a plain handler inside a domain (what the wrapper undoes)', async () => {
    const res = await post('domain-probe-framework');
    assert.deepEqual(await res.json(), { inHandler: true, afterAwait: true });
  });

  it('a wrapped handler and what it awaits run outside any domain', async () => {
    const res = await post('domain-probe-outside');
    assert.deepEqual(await res.json(), { inHandler: false, afterAwait: false });
  });

  it("a wrapped handler's rejection is still answered 500 by the framework", async () => {
    const res = await post('domain-probe-throws');
    assert.equal(res.status, 500);
    await res.arrayBuffer();
  });
});
