/**
 * A self-signed serving certificate for the local API server's HTTPS mode, made with the `openssl`
 * binary (Node cannot issue X.509 certificates). One per process, reused by every server it starts.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ServingCert {
  /** PEM private key. */
  key: string;
  /** PEM certificate; also the CA clients trust (it is self-signed). */
  cert: string;
}

let cached: ServingCert | undefined;

/**
 * Returns a self-signed EC P-256 certificate for `localhost`, `127.0.0.1` and `::1`, valid 365 days.
 * @throws when `openssl` is not installed
 */
export function servingCert(): ServingCert {
  if (cached) return cached;
  const dir = mkdtempSync(join(tmpdir(), 'levelset-apiserver-tls-'));
  try {
    const key = join(dir, 'tls.key');
    const cert = join(dir, 'tls.crt');
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
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '365',
        '-subj',
        '/CN=levelset-local-apiserver',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
      ],
      { stdio: 'ignore' },
    );
    cached = { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
    return cached;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
