/**
 * functions-framework runs each HTTP request inside a `node:domain`; the functions replace the
 * domain it creates with a stand-in (functions/runtime/http.ts `withoutRequestDomains`), so that no
 * domain's async hook tracks the promises of a reconcile. Served by the framework's own test server
 * (its real wrapper). The replacement is process-wide, so the tests run in order: the framework's
 * own behaviour first.
 */
import assert from 'node:assert/strict';
import domain from 'node:domain';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import * as ff from '@google-cloud/functions-framework';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import { withoutRequestDomains } from '../../functions/runtime/http.ts';

type Probe = { inHandler: boolean; afterAwait: boolean };

const inDomain = () => (process as { domain?: unknown }).domain != null;
const probe = async (res: { json(body: Probe): void }) => {
  const inHandler = inDomain();
  await new Promise((resolve) => setTimeout(resolve, 1));
  res.json({ inHandler, afterAwait: inDomain() });
};
ff.http('domain-probe', (_req, res) => probe(res));
ff.http('domain-probe-throws', async () => {
  throw new Error('boom');
});

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

describe('functions without the framework request domain', () => {
  it('the framework alone runs a handler inside a domain (what the stand-in removes)', async () => {
    const res = await post('domain-probe');
    assert.deepEqual(await res.json(), { inHandler: true, afterAwait: true });
  });

  it('with the stand-in, a handler and what it awaits run outside any domain, and no domain is created', async () => {
    withoutRequestDomains();
    withoutRequestDomains(); // idempotent
    assert.ok(!(domain.create() instanceof domain.Domain));
    const res = await post('domain-probe');
    assert.deepEqual(await res.json(), { inHandler: false, afterAwait: false });
  });

  it("a handler's rejection is still answered 500 by the framework", async () => {
    const res = await post('domain-probe-throws');
    assert.equal(res.status, 500);
    await res.arrayBuffer();
  });
});
