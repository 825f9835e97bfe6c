/**
 * Environment configuration of the `secret-replicator` controller, validated with zod on first use
 * and cached for the life of the process.
 */
import * as z from 'zod';
import { dns1123Label } from '../../kit/index.ts';

const commaList = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== ''),
  )
  .pipe(z.array(dns1123Label));

const envSchema = z.object({
  /** The namespace whose Secrets are replicated (the primaries). */
  LEVELSET_SOURCE_NAMESPACE: dns1123Label.default('levelset-system'),
  /** Comma-separated namespaces that never receive copies. */
  LEVELSET_EXCLUDE_NAMESPACES: commaList.default(['kube-system', 'kube-public', 'kube-node-lease']),
});

export interface SecretReplicatorConfig {
  /** The namespace whose Secrets are the sources (`LEVELSET_SOURCE_NAMESPACE`, default `levelset-system`). */
  sourceNamespace: string;
  /**
   * Namespaces that never receive copies (`LEVELSET_EXCLUDE_NAMESPACES`, default
   * `kube-system,kube-public,kube-node-lease`). The source namespace is always excluded as well.
   */
  excludeNamespaces: readonly string[];
}

/**
 * Parses the controller's configuration from an environment.
 * @throws {Error} `invalid secret-replicator configuration: <VAR>: <problem>; …` naming every invalid variable.
 */
export function parseSecretReplicatorConfig(env: NodeJS.ProcessEnv): SecretReplicatorConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid secret-replicator configuration: ${issues}`);
  }
  return {
    sourceNamespace: parsed.data.LEVELSET_SOURCE_NAMESPACE,
    excludeNamespaces: parsed.data.LEVELSET_EXCLUDE_NAMESPACES,
  };
}

let cached: SecretReplicatorConfig | undefined;

/**
 * The configuration from `process.env`, parsed on the first call and cached.
 * @throws {Error} as {@link parseSecretReplicatorConfig} (on every call until the environment is fixed).
 */
export function secretReplicatorConfigFromEnv(): SecretReplicatorConfig {
  cached ??= parseSecretReplicatorConfig(process.env);
  return cached;
}
