/**
 * The KubeConfig class of every Levelset process: client-node's, with requests sharing connections.
 */
import { readFileSync } from 'node:fs';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';
import { type ClientLimits, type Limiter, requestLimiter } from './request-budget.ts';

type Dispatcher = ReturnType<RequestContext['getDispatcher']>;

/**
 * A KubeConfig whose requests share keep-alive connections.
 *
 * client-node 2.0.1 builds a new undici `Agent` for every request to a TLS endpoint (and to
 * `http://` with `insecure-skip-tls-verify`): `applySecurityAuthentication` → `createDispatcher`.
 * Each request then opens its own connection (a TLS handshake with a real cluster), left open until
 * the keep-alive timeout; a busy process holds hundreds of sockets. This class keeps the first
 * dispatcher made for a cluster and user and gives it to every later request, so requests share one
 * connection pool, as client-go's transport cache does (one `http.Transport` per TLS config).
 * The key is the one client-node uses for its own https.Agent cache (cluster name, user name), plus
 * the server URL, so the pool keeps the TLS material of its first request, as client-go's transport
 * keeps its `rest.Config`'s. Credentials sent as headers (tokens, exec plugins, the Cloud Run
 * authenticator) are still applied per request. client-node still builds (and this class drops) an
 * Agent per request (`createDispatcher` is private, so only the pool, hence the connections and
 * handshakes, is shared), and would read `caFile`/`certFile`/`keyFile` per request: {@link inlineTlsFiles}
 * reads them once.
 */
export class PooledKubeConfig extends KubeConfig {
  readonly #dispatchers = new Map<string, NonNullable<Dispatcher>>();
  /** The client-side limit of this cluster's requests, when one is set (core/request-budget.ts). */
  readonly limiter: Limiter | undefined;

  /**
   * @param limits at most `limit` requests to this KubeConfig's cluster in any `intervalMs` window
   *   (a sliding window, core/request-budget.ts): every request, watches included, waits for it
   *   first. Omitted: no limit.
   */
  constructor(limits?: ClientLimits) {
    super();
    this.limiter = limits ? requestLimiter(limits) : undefined;
  }

  /**
   * Reads the CA, client certificate and client key files the loaded configuration names (an
   * in-cluster config's `ca.crt`, a kubeconfig's `certificate-authority` and `client-certificate`
   * paths) once, into its `caData`/`certData`/`keyData`, as client-go's transport reads them once
   * when it is built: client-node reads them again on every request (`applyHTTPSOptions`), and the
   * pooled connections keep the first request's material anyway. Tokens (an in-cluster token
   * file, exec plugins) are untouched: their authenticators still refresh them.
   * @throws when a named file cannot be read (as the first request would)
   */
  inlineTlsFiles(): void {
    const data = (file: string) => readFileSync(file).toString('base64');
    this.loadFromOptions({
      clusters: this.clusters.map(({ caFile, ...c }) => (caFile ? { ...c, caData: data(caFile) } : c)),
      users: this.users.map(({ certFile, keyFile, ...u }) => ({
        ...u,
        ...(certFile ? { certData: data(certFile) } : {}),
        ...(keyFile ? { keyData: data(keyFile) } : {}),
      })),
      contexts: this.contexts,
      currentContext: this.currentContext,
    });
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await this.limiter?.();
    await super.applySecurityAuthentication(context);
    const made = context.getDispatcher();
    if (!made) return; // plain http: fetch's global dispatcher, which pools already
    const cluster = this.getCurrentCluster();
    const key = JSON.stringify([cluster?.name, cluster?.server, this.getCurrentUser()?.name]);
    const shared = this.#dispatchers.get(key);
    if (shared) context.setDispatcher(shared);
    else this.#dispatchers.set(key, made);
  }
}
