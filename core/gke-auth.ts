/**
 * The Cloud Run path of the functions' Kubernetes client: the GKE DNS-based control-plane endpoint
 * (`KUBERNETES_ENDPOINT`) and a Google OAuth 2.0 access token of the runtime service account, as
 * `kubectl` does with `gcloud container clusters get-credentials --dns-endpoint`. GKE checks the
 * IAM permission `container.clusters.connect`, authenticates the token as the service account's
 * email and authorises the request with Kubernetes RBAC bound to that email (terraform/kubernetes.tf).
 *
 * The token comes from google-auth-library (Application Default Credentials: the metadata server
 * on Cloud Run), which caches it and refreshes it before it expires. It is asked for on every
 * request and never stored in the KubeConfig, never logged.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import * as z from 'zod';
import type { Logger } from './log.ts';
import { PooledKubeConfig } from './pooled-kubeconfig.ts';
import type { ClientLimits } from './request-budget.ts';

/** OAuth 2.0 scope of the access token; GKE accepts cloud-platform tokens. */
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

/** The kubeconfig auth-provider name this module registers (distinct from client-node's `gcp`). */
export const AUTH_PROVIDER_NAME = 'levelset-google-access-token';

/**
 * Where access tokens come from. google-auth-library's `GoogleAuth` (string) and `AuthClient`
 * (`{ token }`) both fit. Called once per Kubernetes API request: it must cache.
 */
export interface AccessTokenSource {
  getAccessToken(): Promise<string | null | undefined | { token?: string | null }>;
}

/** How to reach the cluster from Cloud Run. */
export interface GkeConnection {
  /** `https://<host>` without a trailing slash, e.g. `https://gke-0123.europe-west1.gke.goog`. */
  server: string;
  /** Base64 PEM of the cluster CA; absent for the DNS endpoint, whose certificate is publicly trusted. */
  caData?: string;
}

const endpoint = z
  .string()
  .trim()
  .min(1)
  // A bare host (as the GKE API reports the DNS endpoint) means https.
  .transform((s) => (/^[a-z][a-z0-9+.-]*:\/\//i.test(s) ? s : `https://${s}`))
  .pipe(z.url({ protocol: /^https$/, error: 'must be an https URL or a host name' }))
  .refine((s) => new URL(s).pathname.replace(/\/$/, '') === '', 'must not have a path')
  .transform((s) => s.replace(/\/$/, ''));

const caData = z
  .string()
  .trim()
  .pipe(z.base64())
  .refine(
    (s) => Buffer.from(s, 'base64').toString('utf8').includes('-----BEGIN CERTIFICATE-----'),
    'must be a base64-encoded PEM certificate',
  );

/**
 * The Cloud Run environment of the Kubernetes client.
 * - `KUBERNETES_ENDPOINT` (required): the control-plane endpoint, an https URL or a bare host
 *   (https is implied); Terraform sets the cluster's DNS-based endpoint.
 * - `KUBERNETES_CA_DATA` (optional): base64 PEM of the cluster CA, only for an endpoint whose
 *   certificate is not publicly trusted (the IP endpoint reached through a VPC).
 */
export const gkeEnvSchema = z.object({
  KUBERNETES_ENDPOINT: endpoint,
  KUBERNETES_CA_DATA: caData.optional(),
});

/**
 * Reads {@link gkeEnvSchema} from `env`.
 * @throws {Error} naming every missing or invalid variable.
 */
export function readGkeConnection(env: NodeJS.ProcessEnv = process.env): GkeConnection {
  const parsed = gkeEnvSchema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid Kubernetes environment for Cloud Run: ${issues}`);
  }
  const { KUBERNETES_ENDPOINT: server, KUBERNETES_CA_DATA: ca } = parsed.data;
  return ca ? { server, caData: ca } : { server };
}

/**
 * Application Default Credentials with the cloud-platform scope (the runtime service account on
 * Cloud Run). google-auth-library (and its gaxios, gcp-metadata) is imported at the first token
 * request, not when the module loads: a process that never asks for a token never loads it, and
 * one that does loads it while its first request waits for the token anyway.
 */
export function googleAccessTokens(): AccessTokenSource {
  let auth: Promise<AccessTokenSource> | undefined;
  return {
    async getAccessToken() {
      auth ??= import('google-auth-library').then(
        ({ GoogleAuth }) => new GoogleAuth({ scopes: [CLOUD_PLATFORM_SCOPE] }),
      );
      return (await auth).getAccessToken();
    },
  };
}

async function currentToken(tokens: AccessTokenSource): Promise<string> {
  let got: Awaited<ReturnType<AccessTokenSource['getAccessToken']>>;
  try {
    got = await tokens.getAccessToken();
  } catch (err) {
    // The cause is google-auth-library's error (metadata server or ADC); it never holds a token.
    throw new Error('could not get a Google access token for the Kubernetes API', { cause: err });
  }
  const token = typeof got === 'string' ? got : got?.token;
  if (!token) throw new Error('could not get a Google access token for the Kubernetes API: empty token');
  return token;
}

type Authenticator = Parameters<KubeConfig['addAuthenticator']>[0];

export interface GkeKubeConfigOptions {
  /** Default: {@link googleAccessTokens}. */
  tokens?: AccessTokenSource;
  /** Logs the endpoint at creation and token failures; never the token. */
  log?: Logger;
  /** The client-side limit of its requests (core/request-budget.ts); default none. */
  limits?: ClientLimits;
}

/**
 * A KubeConfig for `connection` whose every request (API clients, watch, fetch options) carries
 * `Authorization: Bearer <token>` with the token `tokens` holds at that moment.
 */
export function gkeKubeConfig(connection: GkeConnection, options: GkeKubeConfigOptions = {}): KubeConfig {
  const tokens = options.tokens ?? googleAccessTokens();
  const log = options.log;
  const authenticator: Authenticator = {
    isAuthProvider: (user) => user?.authProvider?.name === AUTH_PROVIDER_NAME,
    async applyAuthentication(_user, opts) {
      let token: string;
      try {
        token = await currentToken(tokens);
      } catch (err) {
        log?.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'Kubernetes API: no access token',
        );
        throw err;
      }
      opts.headers ??= {};
      (opts.headers as Record<string, string>).Authorization = `Bearer ${token}`;
    },
  };
  const kc = new PooledKubeConfig(options.limits);
  kc.addAuthenticator(authenticator);
  kc.loadFromClusterAndUser(
    { name: 'gke', server: connection.server, caData: connection.caData, skipTLSVerify: false },
    { name: 'cloud-run-service-account', authProvider: { name: AUTH_PROVIDER_NAME, config: {} } },
  );
  log?.debug({ server: connection.server }, 'Kubernetes API: GKE endpoint with a Google access token');
  return kc;
}
