/**
 * The pure half of `secret-replicator`: the labels and annotations that mark a copy
 * ({@link COPIES}, how the kit tracks children in other namespaces), the choice of target
 * namespaces, and the desired copies. No I/O here, so every rule is unit-tested without an API
 * server; the kit diffs the desired copies against the live ones (functions/kit/cross-namespace.ts).
 *
 * Ownership rule: Levelset owns a Secret only when it carries BOTH {@link COPY_LABEL} with the
 * source's label value AND {@link SOURCE_ANNOTATION} naming the source, under the source's name.
 * Anything else is never overwritten or deleted (a conflict, as sample-controller's `ErrResourceExists`).
 * In another cluster than the source's (opt-in, {@link REPLICATE_TO_CLUSTERS_ANNOTATION}), a copy
 * is owned only when it also carries {@link SOURCE_CLUSTER_ANNOTATION} naming the source's cluster;
 * in the source's cluster, only without it.
 */
import { createHash } from 'node:crypto';
import type { KubernetesObject, V1Namespace, V1ObjectMeta, V1Secret } from '@kubernetes/client-node';
import { RE2JS } from 're2js';
import {
  type CrossNamespaceTracking,
  isDNS1123Label,
  isDNS1123Subdomain,
  type Key,
  ownerClusterOf,
  TerminalError,
} from '../../kit/index.ts';
import type { SecretReplicatorConfig } from './config.ts';

/**
 * Label on every copy; its value identifies the source ({@link copyLabelValue}), so that
 * `levelset.dev/replica-of=<value>` lists the copies of one source and `levelset.dev/replica-of`
 * (exists) lists every copy.
 */
export const COPY_LABEL = 'levelset.dev/replica-of';
/** Annotation on every copy: the source's key, `<namespace>/<name>` (client-go's MetaNamespaceKeyFunc). */
export const SOURCE_ANNOTATION = 'levelset.dev/source';
/** Annotation on every copy: the source's `metadata.resourceVersion` the copy was made from. */
export const SOURCE_VERSION_ANNOTATION = 'levelset.dev/source-resource-version';
/**
 * Annotation on every copy: sha256 (hex) of the copy's intended content (type, data, mirrored labels),
 * see {@link contentHash}. A copy whose actual content no longer hashes to it was edited by hand.
 */
export const CONTENT_HASH_ANNOTATION = 'levelset.dev/content-hash';
/**
 * Annotation on a source Secret narrowing its target namespaces: a comma-separated list of
 * namespace names and/or RE2 regular expressions (linear-time matching, so no pattern such as
 * `(a+)+b` can stall a reconcile), each matched against the whole namespace name
 * (anchored, as kubernetes-reflector's `reflection-allowed-namespaces`). Absent: every eligible
 * namespace. Present but empty: no namespace (a way to keep one Secret un-replicated).
 */
export const REPLICATE_TO_ANNOTATION = 'levelset.dev/replicate-to';
/**
 * Annotation on a source Secret opting it in to copies in other clusters of the deployment
 * (`LEVELSET_CLUSTERS`): a comma-separated list of cluster ids and/or glob patterns (`*` any run
 * of characters, `?` one character), each matched against the whole id. The source's own cluster
 * is never a target. In each matched cluster the namespaces are chosen by the same rules as in the
 * source's cluster ({@link selectTargets}). Absent or empty: the source's cluster alone.
 */
export const REPLICATE_TO_CLUSTERS_ANNOTATION = 'levelset.dev/replicate-to-clusters';
/**
 * Annotation on every copy in another cluster than its source's: the source's cluster id. A copy
 * is its source's only with it (and a copy in the source's cluster only without it), so a copy of
 * cluster A's source is never taken for a copy of cluster B's source of the same name.
 */
export const SOURCE_CLUSTER_ANNOTATION = 'levelset.dev/source-cluster';
/** Event / TerminalError reason for an unparseable {@link REPLICATE_TO_CLUSTERS_ANNOTATION}. */
export const REASON_INVALID_REPLICATE_TO_CLUSTERS = 'InvalidReplicateToClusters';
/** Secrets of this type are never copied (they are minted per namespace by Kubernetes). */
export const SERVICE_ACCOUNT_TOKEN_TYPE = 'kubernetes.io/service-account-token';
/** Event / TerminalError reason for an unparseable {@link REPLICATE_TO_ANNOTATION}. */
export const REASON_INVALID_REPLICATE_TO = 'InvalidReplicateTo';

/**
 * The {@link COPY_LABEL} value for a source: its name when it fits a label value (≤ 63 characters;
 * a Secret name is a DNS subdomain, hence a valid label value when that short), else the first 46
 * characters of the name, `-`, and 16 hex characters of sha256(`<namespace>/<name>`) — always a
 * valid label value (Kubernetes API conventions: label values ≤ 63, alphanumeric at both ends).
 * The label only narrows a LIST; ownership is decided with {@link SOURCE_ANNOTATION} too.
 */
export function copyLabelValue(source: Key): string {
  if (source.name.length <= 63) return source.name;
  const hash = createHash('sha256').update(`${source.namespace}/${source.name}`).digest('hex').slice(0, 16);
  return `${source.name.slice(0, 46)}-${hash}`;
}

/**
 * How the kit tracks the copies of a source, children in other namespaces: listed by
 * {@link COPY_LABEL}, owned with {@link SOURCE_ANNOTATION} too; a copy whose `type` must change
 * is deleted and created again (a Secret's `type` is immutable). The copies are listed as metadata
 * only, {@link CONTENT_HASH_ANNOTATION} standing for their content: a reconcile never holds the
 * data of its copies, only the source's (a copy someone else wrote is read whole, alone).
 */
export const COPIES: CrossNamespaceTracking & { clusterAnnotation: string } = {
  labels: (source) => ({ [COPY_LABEL]: copyLabelValue(source) }),
  ownerAnnotation: SOURCE_ANNOTATION,
  clusterAnnotation: SOURCE_CLUSTER_ANNOTATION,
  immutableFields: ['type'],
  contentHashAnnotation: CONTENT_HASH_ANNOTATION,
};

/**
 * The source key a copy names in {@link SOURCE_ANNOTATION}, or `undefined` when it is missing or
 * not `<namespace>/<name>` with a valid namespace and Secret name. Reads metadata only.
 */
export function sourceKeyOf(metadata: V1ObjectMeta | undefined): Key | undefined {
  const value = metadata?.annotations?.[SOURCE_ANNOTATION];
  if (!value) return undefined;
  const slash = value.indexOf('/');
  if (slash < 0) return undefined;
  const namespace = value.slice(0, slash);
  const name = value.slice(slash + 1);
  if (!isDNS1123Label(namespace) || !isDNS1123Subdomain(name)) return undefined;
  return { namespace, name };
}

/**
 * The source cluster a copy in another cluster names in {@link SOURCE_CLUSTER_ANNOTATION}, or
 * `undefined` for a copy in its source's cluster (or an annotation that is not a cluster id).
 */
export function sourceClusterOf(metadata: V1ObjectMeta | undefined): string | undefined {
  return ownerClusterOf({ metadata }, COPIES);
}

/**
 * The cluster ids of `others` (the deployment's clusters but the source's) that `source`'s
 * {@link REPLICATE_TO_CLUSTERS_ANNOTATION} matches, in the order of `others`; `[]` without it.
 * @throws {TerminalError} reason `InvalidReplicateToClusters`, with `object` = the source (for the
 *   runtime's Warning Event), when an item is neither a cluster id nor a glob of one (characters
 *   `a-z`, `0-9`, `-`, `*`, `?`; at most 63).
 */
export function selectClusters(source: V1Secret, others: readonly string[]): string[] {
  const value = source.metadata?.annotations?.[REPLICATE_TO_CLUSTERS_ANNOTATION];
  if (value === undefined) return [];
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  const patterns = items.map((item) => {
    if (!/^[a-z0-9*?-]{1,63}$/.test(item))
      throw new TerminalError(
        REASON_INVALID_REPLICATE_TO_CLUSTERS,
        `annotation ${REPLICATE_TO_CLUSTERS_ANNOTATION}: ${JSON.stringify(item)} is not a cluster id or a glob of one (a-z, 0-9, -, *, ?)`,
        { object: regardingSecret(source) },
      );
    return new RegExp(`^${item.replaceAll('*', '.*').replaceAll('?', '.')}$`);
  });
  return others.filter((id) => patterns.some((p) => p.test(id)));
}

/** True when a Namespace is being deleted (`status.phase: Terminating` or a deletionTimestamp). */
export function isTerminating(ns: V1Namespace): boolean {
  return ns.status?.phase === 'Terminating' || ns.metadata?.deletionTimestamp != null;
}

/**
 * Parses {@link REPLICATE_TO_ANNOTATION} into a namespace predicate. Each comma-separated item
 * (trimmed; empty items skipped) matches a namespace equal to it or, as an RE2 regular expression
 * (re2js: linear time in the name's length whatever the pattern; no backreferences or lookaround),
 * matching the whole name.
 * @param value the annotation value; `undefined`: every namespace matches.
 * @throws {TerminalError} reason `InvalidReplicateTo` when an item is not a valid RE2 regular expression.
 */
export function parseReplicateTo(value: string | undefined): (namespace: string) => boolean {
  if (value === undefined) return () => true;
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  const patterns = items.map((item) => {
    try {
      return RE2JS.compile(`(?:${item})`);
    } catch (err) {
      throw new TerminalError(
        REASON_INVALID_REPLICATE_TO,
        `annotation ${REPLICATE_TO_ANNOTATION}: ${JSON.stringify(item)} is not a valid RE2 regular expression`,
        { cause: err },
      );
    }
  });
  return (namespace) => items.includes(namespace) || patterns.some((p) => p.matches(namespace));
}

/** A Secret as the object an Event is about: kind, apiVersion and metadata, never `data`. */
export function regardingSecret(secret: V1Secret): KubernetesObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: secret.metadata };
}

/**
 * The namespaces that should hold a copy of `source`, sorted: every listed namespace that is not
 * the source namespace, not in `config.excludeNamespaces`, not Terminating, and matched by the
 * source's {@link REPLICATE_TO_ANNOTATION}.
 * @throws {TerminalError} reason `InvalidReplicateTo`, from {@link parseReplicateTo}, with
 *   `object` = the source (for the runtime's Warning Event).
 */
export function selectTargets(
  source: V1Secret,
  namespaces: readonly V1Namespace[],
  config: SecretReplicatorConfig,
): string[] {
  let allowed: (namespace: string) => boolean;
  try {
    allowed = parseReplicateTo(source.metadata?.annotations?.[REPLICATE_TO_ANNOTATION]);
  } catch (err) {
    if (!(err instanceof TerminalError)) throw err;
    // The Warning Event goes on the source Secret (metadata only: never its data).
    throw new TerminalError(err.reason, err.message, { cause: err.cause, object: regardingSecret(source) });
  }
  const excluded = new Set([...config.excludeNamespaces, config.sourceNamespace]);
  const targets: string[] = [];
  for (const ns of namespaces) {
    const name = ns.metadata?.name;
    if (!name || excluded.has(name) || isTerminating(ns) || !allowed(name)) continue;
    targets.push(name);
  }
  return targets.sort();
}

/** True when `source` must have no copies: gone, being deleted, or a service-account token. */
export function isReplicable(source: V1Secret | undefined): source is V1Secret {
  return (
    source !== undefined &&
    source.metadata?.deletionTimestamp == null &&
    source.type !== SERVICE_ACCOUNT_TOKEN_TYPE
  );
}

function sortedEntries(record: Record<string, string> | undefined): [string, string][] {
  return Object.entries(record ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The source's labels a copy mirrors: all of them except {@link COPY_LABEL}. */
function mirroredLabels(labels: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of sortedEntries(labels)) if (k !== COPY_LABEL) out[k] = v;
  return out;
}

/**
 * sha256 (hex) of a Secret's replicated content: `type` (default `Opaque`), `data` and labels other
 * than {@link COPY_LABEL}, in a canonical (key-sorted) JSON encoding. Equal content, equal hash.
 */
export function contentHash(secret: Pick<V1Secret, 'type' | 'data'> & { metadata?: V1ObjectMeta }): string {
  const canonical = JSON.stringify([
    secret.type ?? 'Opaque',
    sortedEntries(secret.data),
    sortedEntries(mirroredLabels(secret.metadata?.labels)),
  ]);
  return createHash('sha256').update(canonical).digest('hex');
}

/**
 * The copy of `source` (key `sourceKey`) that `namespace` should hold: same name, `type` and
 * `data`; the source's labels plus {@link COPY_LABEL}; annotations {@link SOURCE_ANNOTATION},
 * {@link SOURCE_VERSION_ANNOTATION} and {@link CONTENT_HASH_ANNOTATION}. Never carries
 * `stringData`, `immutable` or the source's annotations.
 */
export function desiredCopy(source: V1Secret, sourceKey: Key, namespace: string): V1Secret {
  const type = source.type ?? 'Opaque';
  const data = Object.fromEntries(sortedEntries(source.data));
  const labels = { ...mirroredLabels(source.metadata?.labels), [COPY_LABEL]: copyLabelValue(sourceKey) };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: sourceKey.name,
      namespace,
      labels,
      annotations: {
        [SOURCE_ANNOTATION]: `${sourceKey.namespace}/${sourceKey.name}`,
        [SOURCE_VERSION_ANNOTATION]: source.metadata?.resourceVersion ?? '',
        [CONTENT_HASH_ANNOTATION]: contentHash({ type, data, metadata: { labels } }),
      },
    },
    type,
    data,
  };
}

/** What a source asks of the kit: its copies, and the namespaces being deleted (left alone). */
export interface DesiredCopies {
  children: V1Secret[];
  retainNamespaces: string[];
}

/**
 * The copies `source` (key `key`) should have, one per {@link selectTargets} namespace, and the
 * Terminating namespaces, whose copies go with their namespace (never pruned one by one). A
 * source that is not replicable ({@link isReplicable}) has none.
 * @throws {TerminalError} reason `InvalidReplicateTo`, as {@link selectTargets}
 */
export function desiredCopies(
  key: Key,
  source: V1Secret | undefined,
  namespaces: readonly V1Namespace[],
  config: SecretReplicatorConfig,
): DesiredCopies {
  const targets = isReplicable(source) ? selectTargets(source, namespaces, config) : [];
  return {
    children: isReplicable(source) ? targets.map((ns) => desiredCopy(source, key, ns)) : [],
    retainNamespaces: namespaces.filter(isTerminating).map((ns) => ns.metadata?.name ?? ''),
  };
}
