/**
 * The local Kubernetes API server: an in-process stand-in for kube-apiserver (+ the parts of
 * kube-controller-manager Levelset depends on: garbage collection, namespace lifecycle, CRD
 * establishment) over plain HTTP, faithful in wire format, status codes, `Status` bodies and watch
 * semantics, so that @kubernetes/client-node and kubectl work against it unchanged.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import YAML from 'yaml';
import { CrdController } from './crds.ts';
import { DEFAULT_EVENT_TTL_MS, EventExpiry } from './event-ttl.ts';
import { FaultInjector } from './faults.ts';
import { GarbageCollector } from './gc.ts';
import { createHandler } from './http.ts';
import { NamespaceController } from './namespaces.ts';
import { ANONYMOUS, Authenticator, Authorizer, bootstrapRbac } from './rbac.ts';
import { Registry } from './registry.ts';
import { RequestLog } from './requests.ts';
import { builtinResources, ResourceRegistry } from './resources.ts';
import { Store } from './store.ts';
import { servingCert } from './tls.ts';
import { WatchHub } from './watch.ts';
import { AdmissionWebhooks } from './webhooks.ts';

export type { Failure } from './faults.ts';
export { FaultInjector } from './faults.ts';
export type { RequestMatch } from './requestinfo.ts';
export type { RequestFilter, RequestLogEntry } from './requests.ts';
export { RequestLog } from './requests.ts';
export { type ServingCert, servingCert } from './tls.ts';
export type { WatchEventMatch } from './watch.ts';

export interface LocalApiServerOptions {
  /** Interface to listen on; default `127.0.0.1`. */
  host?: string;
  /** Port; default 0 (ephemeral). */
  port?: number;
  /** Where to write the kubeconfig; default a fresh temp file. */
  kubeconfigPath?: string;
  /** Watch events kept per resource for resumption and continue tokens (the watch cache window); default 1000. */
  historySize?: number;
  /**
   * Watch events older than this, ms, are dropped from a resource's history at its next change, as
   * etcd's periodic compaction drops old revisions; default none (the history is bounded by
   * `historySize` alone).
   */
  historyMs?: number;
  /**
   * How long an Event lives after its last write, ms, as kube-apiserver's `--event-ttl`; default
   * 3 600 000 (its default, 1 h). Expired Events are deleted (a DELETED watch event) at most a
   * minute late.
   */
  eventTtlMs?: number;
  /**
   * Answered requests {@link LocalApiServer.requests} keeps (the latest; its counters count all);
   * default 100 000. A server that runs for hours and whose log nobody reads keeps a few (the soak,
   * `levelset start`): at 50 requests a second the default fills for half an hour, ≈ 200 bytes a
   * request (decision 71).
   */
  requestLogEntries?: number;
  /** Interval between BOOKMARK events on watches that allow them, ms; default 60 000. */
  bookmarkIntervalMs?: number;
  /** The cluster-admin bearer token written to the kubeconfig; default random. */
  adminToken?: string;
  /**
   * Who a request without credentials is. `admin` (default): the cluster admin, as kube-apiserver's
   * old insecure port — needed because kubectl (client-go) never sends a bearer token over plain HTTP
   * (kubernetes/kubectl#744), so kubectl always arrives without credentials. `anonymous`:
   * `system:anonymous` in group `system:unauthenticated`, as a secure kube-apiserver port.
   */
  unauthenticated?: 'admin' | 'anonymous';
  /**
   * Serve HTTPS with a self-signed certificate (needs the `openssl` binary); the kubeconfig carries it
   * as `certificate-authority-data`. Then kubectl sends bearer tokens, and requests without
   * credentials default to `system:anonymous`. Default false (plain HTTP).
   */
  tls?: boolean;
}

export interface LocalApiServer {
  /** `http://HOST:PORT` (`https://` with {@link LocalApiServerOptions.tls}). */
  url: string;
  /** A kubeconfig (cluster, user and context `levelset-local`) usable by kubectl and client-node. */
  kubeconfigPath: string;
  /** The cluster-admin user's bearer token (group `system:masters`). */
  adminToken: string;
  /** A client configuration for the cluster-admin user. */
  kubeConfig(): KubeConfig;
  /**
   * Adds a user authenticated by a fresh bearer token (RBAC applies; no permissions until bound).
   * @returns a KubeConfig for that user, and its token
   */
  addUser(name: string, groups?: string[]): { token: string; kubeConfig: KubeConfig };
  faults: FaultInjector;
  requests: RequestLog;
  /** Closes the server and every open watch. */
  stop(): Promise<void>;
}

function kubeconfigYaml(server: string, token: string, user = 'levelset-local', ca?: string): string {
  // client-node refuses http:// unless insecure-skip-tls-verify is set; kubectl ignores it for http.
  const cluster = ca
    ? { server, 'certificate-authority-data': Buffer.from(ca).toString('base64') }
    : { server, 'insecure-skip-tls-verify': true };
  return YAML.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'levelset-local', cluster }],
    users: [{ name: user, user: { token } }],
    contexts: [
      { name: 'levelset-local', context: { cluster: 'levelset-local', user, namespace: 'default' } },
    ],
    'current-context': 'levelset-local',
    preferences: {},
  });
}

function kubeConfigFor(server: string, token: string, user: string, ca?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfigYaml(server, token, user, ca));
  return kc;
}

/**
 * Starts a local API server with the built-in namespaces (`default`, `kube-system`, `kube-public`,
 * `kube-node-lease`) and bootstrap RBAC, and writes its kubeconfig.
 * @throws when the port cannot be bound.
 */
/** Objects the API server makes itself are kube-apiserver's Update (as its bootstrap controllers). */
const BOOTSTRAP = { fieldManager: 'kube-apiserver' };

export async function startLocalApiServer(options: LocalApiServerOptions = {}): Promise<LocalApiServer> {
  const store = new Store({
    historySize: options.historySize,
    ...(options.historyMs !== undefined ? { historyMs: options.historyMs } : {}),
  });
  const resources = new ResourceRegistry(builtinResources());
  const registry = new Registry(store, resources);
  const crds = new CrdController(registry);
  const gc = new GarbageCollector(registry);
  const namespaces = new NamespaceController(registry);
  const eventTtlMs = options.eventTtlMs ?? DEFAULT_EVENT_TTL_MS;
  const events = new EventExpiry(store, eventTtlMs);
  const expiry = setInterval(() => events.expire(), Math.min(eventTtlMs, 60_000));
  expiry.unref();
  store.subscribe((e) => {
    events.onEvent(e);
    crds.onEvent(e);
    crds.onAnyEvent(e);
    gc.onEvent(e);
    namespaces.onEvent(e);
  });
  const watches = new WatchHub(store, registry, { bookmarkIntervalMs: options.bookmarkIntervalMs });
  const faults = new FaultInjector({
    dropWatches: (mode) => watches.dropAll(mode),
    silenceWatches: () => watches.silenceAll(),
    dropNextWatchEvents: (match, count) => watches.dropNextEvents(match, count),
    compact: () => store.compact(),
  });
  const requests = new RequestLog(options.requestLogEntries);
  const adminUser = { name: 'levelset-admin', groups: ['system:masters', 'system:authenticated'] };
  const unauthenticated = options.unauthenticated ?? (options.tls ? 'anonymous' : 'admin');
  const authn = new Authenticator(store, unauthenticated === 'anonymous' ? ANONYMOUS : adminUser);
  const authz = new Authorizer(store);
  const adminToken = options.adminToken ?? randomBytes(24).toString('hex');
  authn.addToken(adminToken, adminUser);

  const rbac = bootstrapRbac();
  const builtin = (group: string, plural: string) => {
    const t = resources.byPlural(group, 'v1', plural);
    if (!t) throw new Error(`built-in resource ${plural} missing`);
    return t;
  };
  for (const r of rbac.clusterRoles)
    registry.create(builtin('rbac.authorization.k8s.io', 'clusterroles'), undefined, r, BOOTSTRAP);
  for (const b of rbac.clusterRoleBindings)
    registry.create(builtin('rbac.authorization.k8s.io', 'clusterrolebindings'), undefined, b, BOOTSTRAP);
  const nsType = builtin('', 'namespaces');
  for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
    registry.create(nsType, undefined, { metadata: { name } }, BOOTSTRAP);

  let address = '';
  const handler = createHandler({
    registry,
    admission: new AdmissionWebhooks(registry),
    watches,
    faults,
    requests,
    authn,
    authz,
    address: () => address,
  });
  const cert = options.tls ? servingCert() : undefined;
  const server: Server = cert
    ? createHttpsServer({ keepAliveTimeout: 60_000, key: cert.key, cert: cert.cert }, handler)
    : createServer({ keepAliveTimeout: 60_000 }, handler);
  const sockets = new Set<Socket>();
  server.on(cert ? 'secureConnection' : 'connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  address = `${host}:${port}`;
  const url = `${cert ? 'https' : 'http'}://${address}`;
  // A kubeconfig in a temporary directory of our own unless a path is given; removed by stop().
  const ownDir = options.kubeconfigPath ? undefined : mkdtempSync(join(tmpdir(), 'levelset-apiserver-'));
  const kubeconfigPath = options.kubeconfigPath ?? join(ownDir as string, 'kubeconfig');
  writeFileSync(kubeconfigPath, kubeconfigYaml(url, adminToken, 'levelset-local', cert?.cert), {
    mode: 0o600,
  });

  let stopped = false;
  return {
    url,
    kubeconfigPath,
    adminToken,
    kubeConfig: () => kubeConfigFor(url, adminToken, 'levelset-local', cert?.cert),
    addUser(name, groups = []) {
      const token = authn.addUser(name, groups);
      return { token, kubeConfig: kubeConfigFor(url, token, name, cert?.cert) };
    },
    faults,
    requests,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(expiry);
      faults.clear();
      watches.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      for (const s of sockets) s.destroy();
      await closed;
      if (ownDir) rmSync(ownDir, { recursive: true, force: true });
    },
  };
}
