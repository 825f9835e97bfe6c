/**
 * HTTPS in front of the local `admission` function: kube-apiserver calls a webhook URL only over
 * HTTPS, trusting the configuration's `caBundle`, and functions-framework serves plain HTTP. Locally
 * (`levelset dev`, the tests) this front terminates TLS with the local API server's self-signed
 * certificate (for `localhost`, `127.0.0.1` and `::1`: `@levelset/apiserver`'s `servingCert`,
 * whose certificate is its own CA, hence the `caBundle`) and forwards each request as it came. On
 * Cloud Run the service's Google-managed HTTPS endpoint plays this part.
 */
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { servingCert } from '@levelset/apiserver';

/** A running front. */
export interface AdmissionTlsFront {
  /** `https://127.0.0.1:<port>`: the base of the webhooks' URLs. */
  url: string;
  /** base64 of the PEM certificate to trust: a webhook configuration's `clientConfig.caBundle`. */
  caBundle: string;
  /** Closes the server and its connections. */
  stop(): Promise<void>;
}

/**
 * Starts an HTTPS front on 127.0.0.1 (port 0: a free one) forwarding to `target` (an `http://` base
 * URL); a request the target does not answer gets 502.
 * @throws the listen error; what `servingCert` throws when `openssl` is missing
 */
export async function startAdmissionTlsFront(target: string, port = 0): Promise<AdmissionTlsFront> {
  const base = new URL(target);
  const { key, cert } = servingCert();
  const server: Server = createServer({ key, cert }, (req, res) => {
    const upstream = httpRequest(
      { host: base.hostname, port: base.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`admission function unreachable: ${err.message}\n`);
    });
    req.pipe(upstream);
  });
  const sockets = new Set<Socket>();
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    caBundle: Buffer.from(cert).toString('base64'),
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
