/**
 * The functions' Cloud Run path to the Kubernetes API (core/gke-auth.ts, core/kube.ts):
 * real @kubernetes/client-node requests against a stand-in API server that records the
 * Authorization header, and real google-auth-library against a stand-in GCE metadata server
 * (`GCE_METADATA_HOST`), which is where Cloud Run's runtime service account token comes from.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import {
  type AccessTokenSource,
  AUTH_PROVIDER_NAME,
  gkeKubeConfig,
  readGkeConnection,
} from '../../core/gke-auth.ts';
import { loadKubeConfig } from '../../core/kube.ts';
import { createLogger } from '../../core/log.ts';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/**
 * A self-signed certificate for 127.0.0.1 (client-node refuses plain http unless TLS checks are
 * off, and the Cloud Run path never turns them off). `caData` is the base64 PEM, as in KUBERNETES_CA_DATA.
 */
function selfSignedCertificate(): { key: string; cert: string; caData: string } {
  const dir = mkdtempSync(join(tmpdir(), 'levelset-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    const cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
    return {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert,
      caData: Buffer.from(cert).toString('base64'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const tls = selfSignedCertificate();

/** A stand-in kube-apiserver over TLS: answers `GET /api/v1/namespaces` and records each Authorization header. */
function startApiServer(): { server: Server; authorizations: Array<string | undefined> } {
  const authorizations: Array<string | undefined> = [];
  const server = createHttpsServer({ key: tls.key, cert: tls.cert }, (req: IncomingMessage, res) => {
    authorizations.push(req.headers.authorization);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        kind: 'NamespaceList',
        apiVersion: 'v1',
        metadata: { resourceVersion: '1' },
        items: [],
      }),
    );
  });
  return { server, authorizations };
}

/** A source that hands out `token-1`, `token-2`, … and counts calls. */
function countingTokens(): AccessTokenSource & { calls: number } {
  const source = {
    calls: 0,
    async getAccessToken() {
      source.calls++;
      return { token: `token-${source.calls}` };
    },
  };
  return source;
}

/** Captures a logger's lines (LOG_LEVEL=trace, so that every line a level could emit is seen). */
function capturingLogger() {
  const lines: string[] = [];
  const previous = process.env.LOG_LEVEL;
  process.env.LOG_LEVEL = 'trace';
  const log = createLogger(
    'functions',
    new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    }),
  );
  if (previous === undefined) delete process.env.LOG_LEVEL;
  else process.env.LOG_LEVEL = previous;
  return { log, text: () => lines.join('') };
}

describe('gkeKubeConfig', () => {
  let api: ReturnType<typeof startApiServer>;
  let server: string;
  before(async () => {
    api = startApiServer();
    server = `https://${await listen(api.server)}`;
  });
  after(() => close(api.server));
  beforeEach(() => {
    api.authorizations.length = 0;
  });

  test('asks the token source on every request and sends the token it holds then', async () => {
    const tokens = countingTokens();
    const core = gkeKubeConfig({ server, caData: tls.caData }, { tokens }).makeApiClient(CoreV1Api);
    await core.listNamespace();
    await core.listNamespace();
    await core.listNamespace();
    assert.equal(tokens.calls, 3);
    assert.deepEqual(api.authorizations, ['Bearer token-1', 'Bearer token-2', 'Bearer token-3']);
  });

  test('accepts a google-auth-library style string token', async () => {
    const core = gkeKubeConfig(
      { server, caData: tls.caData },
      { tokens: { getAccessToken: async () => 'ya29.plain' } },
    ).makeApiClient(CoreV1Api);
    await core.listNamespace();
    assert.deepEqual(api.authorizations, ['Bearer ya29.plain']);
  });

  test('fails the request, without calling the API server, when no token can be had', async () => {
    const empty = gkeKubeConfig(
      { server, caData: tls.caData },
      { tokens: { getAccessToken: async () => null } },
    );
    await assert.rejects(empty.makeApiClient(CoreV1Api).listNamespace(), /empty token/);
    const failing = gkeKubeConfig(
      { server, caData: tls.caData },
      {
        tokens: {
          getAccessToken: async () => {
            throw new Error('metadata server unreachable');
          },
        },
      },
    );
    await assert.rejects(failing.makeApiClient(CoreV1Api).listNamespace(), (err: Error) => {
      assert.match(err.message, /could not get a Google access token/);
      assert.match(String((err.cause as Error).message), /metadata server unreachable/);
      return true;
    });
    assert.deepEqual(api.authorizations, []);
  });

  test('never stores the token in the KubeConfig nor logs it, on success or failure', async () => {
    const { log, text } = capturingLogger();
    let fail = false;
    const secret = 'ya29.SECRET-token-value';
    const kc = gkeKubeConfig(
      { server, caData: tls.caData },
      {
        log,
        tokens: {
          async getAccessToken() {
            if (fail) throw new Error('refresh failed');
            return secret;
          },
        },
      },
    );
    await kc.makeApiClient(CoreV1Api).listNamespace();
    fail = true;
    await assert.rejects(kc.makeApiClient(CoreV1Api).listNamespace(), (err: Error) => {
      assert.ok(!`${err.message} ${String(err.cause)}`.includes(secret));
      return true;
    });
    assert.equal(api.authorizations[0], `Bearer ${secret}`, 'the token was used');
    assert.ok(text().includes('no access token'), 'the failure was logged');
    assert.ok(text().includes(server), 'the endpoint was logged');
    assert.ok(!text().includes(secret), 'the token was not logged');
    assert.ok(!kc.exportConfig().includes(secret), 'exportConfig holds no token');
    assert.ok(!JSON.stringify(kc).includes(secret), 'the KubeConfig object holds no token');
  });
});

describe('google-auth-library tokens from the metadata server (Cloud Run)', () => {
  const saved = { ...process.env };
  let metadata: Server;
  let api: ReturnType<typeof startApiServer>;
  let apiServer: string;
  let tokenRequests = 0;
  let configDir: string;

  before(async () => {
    metadata = createServer((req, res) => {
      if (req.headers['metadata-flavor'] !== 'Google') {
        res.writeHead(403).end();
        return;
      }
      const url = new URL(req.url ?? '/', 'http://metadata');
      res.setHeader('Metadata-Flavor', 'Google');
      if (url.pathname === '/computeMetadata/v1/instance') {
        res.writeHead(200, { 'content-type': 'application/text' }).end('{}');
      } else if (url.pathname === '/computeMetadata/v1/instance/service-accounts/default/token') {
        tokenRequests++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            access_token: `ya29.sa-${tokenRequests}`,
            expires_in: 3600,
            token_type: 'Bearer',
          }),
        );
      } else {
        res.writeHead(404).end();
      }
    });
    const host = await listen(metadata);
    configDir = mkdtempSync(join(tmpdir(), 'levelset-gcloud-'));
    process.env.GCE_METADATA_HOST = host;
    process.env.CLOUDSDK_CONFIG = configDir; // no application_default_credentials.json here
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    api = startApiServer();
    apiServer = `https://${await listen(api.server)}`;
  });
  after(async () => {
    process.env = saved;
    rmSync(configDir, { recursive: true, force: true });
    await close(metadata);
    await close(api.server);
  });
  afterEach(() => {
    tokenRequests = 0;
  });

  test('caches the runtime service account token and refreshes it after it expires', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
    const core = gkeKubeConfig({ server: apiServer, caData: tls.caData }).makeApiClient(CoreV1Api);
    await core.listNamespace();
    await core.listNamespace();
    assert.equal(tokenRequests, 1, 'one metadata request while the token is fresh');
    t.mock.timers.tick(3600 * 1000);
    await core.listNamespace();
    assert.equal(tokenRequests, 2, 'a new token once the first expired');
    assert.deepEqual(api.authorizations, ['Bearer ya29.sa-1', 'Bearer ya29.sa-1', 'Bearer ya29.sa-2']);
  });
});

describe('readGkeConnection', () => {
  test('reads a bare host (the DNS endpoint as GKE reports it) as https', () => {
    assert.deepEqual(readGkeConnection({ KUBERNETES_ENDPOINT: 'gke-0123.europe-west1.gke.goog' }), {
      server: 'https://gke-0123.europe-west1.gke.goog',
    });
    assert.deepEqual(readGkeConnection({ KUBERNETES_ENDPOINT: 'https://gke-0123.europe-west1.gke.goog/' }), {
      server: 'https://gke-0123.europe-west1.gke.goog',
    });
  });

  test('takes base64 PEM CA data', () => {
    const ca = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString(
      'base64',
    );
    assert.deepEqual(readGkeConnection({ KUBERNETES_ENDPOINT: 'https://10.0.0.2', KUBERNETES_CA_DATA: ca }), {
      server: 'https://10.0.0.2',
      caData: ca,
    });
  });

  test('rejects a missing or non-https endpoint, a path, and CA data that is not a PEM', () => {
    assert.throws(() => readGkeConnection({}), /KUBERNETES_ENDPOINT/);
    assert.throws(
      () => readGkeConnection({ KUBERNETES_ENDPOINT: 'http://gke.example' }),
      /KUBERNETES_ENDPOINT/,
    );
    assert.throws(() => readGkeConnection({ KUBERNETES_ENDPOINT: 'https://gke.example/api' }), /path/);
    assert.throws(
      () => readGkeConnection({ KUBERNETES_ENDPOINT: 'gke.example', KUBERNETES_CA_DATA: 'bm90IGEgY2VydA==' }),
      /KUBERNETES_CA_DATA/,
    );
  });
});

describe('loadKubeConfig', () => {
  test('on Cloud Run (K_SERVICE) uses the endpoint with a Google access token', () => {
    const kc = loadKubeConfig(undefined, {
      K_SERVICE: 'levelset-reconcile',
      KUBERNETES_ENDPOINT: 'gke-0123.europe-west1.gke.goog',
    });
    assert.equal(kc.getCurrentCluster()?.server, 'https://gke-0123.europe-west1.gke.goog');
    assert.equal(kc.getCurrentUser()?.authProvider?.name, AUTH_PROVIDER_NAME);
  });

  test('on Cloud Run without KUBERNETES_ENDPOINT fails naming it', () => {
    assert.throws(
      () => loadKubeConfig(undefined, { K_SERVICE: 'levelset-reconcile' }),
      /KUBERNETES_ENDPOINT/,
    );
  });

  test('elsewhere, and with an explicit kubeconfig, reads the kubeconfig as before', () => {
    const dir = mkdtempSync(join(tmpdir(), 'levelset-kube-'));
    try {
      const file = join(dir, 'config');
      writeFileSync(
        file,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]',
          'users: [{name: u, user: {token: t}}]',
          'contexts: [{name: x, context: {cluster: c, user: u}}]',
          'current-context: x',
        ].join('\n'),
      );
      const kc = loadKubeConfig(file, { K_SERVICE: 'levelset-reconcile' });
      assert.equal(kc.getCurrentCluster()?.server, 'https://127.0.0.1:6443');
      assert.equal(kc.getCurrentUser()?.authProvider, undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
