/**
 * The relay's HTTP endpoints for the kubelet and Prometheus:
 * - `GET /healthz` — 200 while the process serves HTTP (liveness).
 * - `GET /readyz` — 200 once every informer's first LIST is in its cache (client-go's
 *   `WaitForCacheSync`) and while every informer can watch; else 503 naming each informer still
 *   syncing or unable to watch (readiness: a relay that cannot watch is not doing its job).
 * - `GET /metrics` — Prometheus text format from the relay's registry.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface HealthServerOptions {
  /** TCP port; 0 picks a free one. */
  port: number;
  /** Bind address; default all interfaces (`::`, falling back to IPv4). */
  host?: string;
  /** Why the relay is not ready, one line per informer (`v1/secrets: not synced`); empty means ready. */
  notReady(): string[];
  registry: Registry;
}

export interface HealthServer {
  /** The port actually bound. */
  port: number;
  close(): Promise<void>;
}

/**
 * Starts the health/metrics server.
 * @throws the listen error (e.g. `EADDRINUSE`).
 */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const reasons = options.notReady();
      if (reasons.length === 0) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      else res.writeHead(503, { 'content-type': 'text/plain' }).end(`not ready: ${reasons.join('; ')}\n`);
    } else if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': options.registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`),
      );
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
