/**
 * The key: which object to reconcile, in which cluster, the one shape it has from the relay's map to
 * the reconcile (docs/architecture.md "Contracts"), and its string forms: client-go's
 * `namespace/name` and the Pub/Sub ordering key `cluster/controller/namespace/name`.
 */
import { isDNS1123Label } from './names.ts';

/**
 * The cluster a key without a cluster means: every single-cluster deployment's, and every v1 key
 * message's (core/message.ts). A cluster id is a DNS-1123 label (`clusterId`, names.ts).
 */
export const DEFAULT_CLUSTER = 'default';

/** A key, as client-go's `MetaNamespaceKeyFunc` splits it: `namespace` is `""` for cluster-scoped objects. */
export interface Key {
  namespace: string;
  name: string;
}

/**
 * A key a watch's map or a resync's `listKeys` returns: by default in the cluster of the relay or
 * resync that produced it; with `cluster`, in that cluster of the registry instead (a child in
 * another cluster maps back to its owner: docs/architecture.md "Clusters"). `cluster` is a cluster
 * id (a DNS-1123 label); the relay drops, logged, a key whose `cluster` is not one.
 */
export interface MappedKey extends Key {
  cluster?: string;
}

/**
 * The keys a watch's map returned (`mapped`), as the relay enqueues them: each once, its `cluster`
 * kept only when it names another cluster than `cluster` (the map's own). One that is not a key (a
 * non-empty `name`, a string `namespace`, and a `cluster` that is a DNS-1123 label when present) is
 * left out after `onInvalid` is called with it (the relay logs it; the kit's `keysFor` throws).
 */
export function mappedKeys(
  mapped: readonly unknown[],
  cluster: string,
  onInvalid: (k: unknown) => void,
): MappedKey[] {
  const keys = new Map<string, MappedKey>();
  for (const k of mapped as Partial<MappedKey>[]) {
    if (!(typeof k?.name === 'string' && k.name && typeof k.namespace === 'string')) onInvalid(k);
    else if (k.cluster !== undefined && !(typeof k.cluster === 'string' && isDNS1123Label(k.cluster)))
      onInvalid(k);
    else {
      const key: MappedKey = { namespace: k.namespace, name: k.name };
      if (k.cluster !== undefined && k.cluster !== cluster) key.cluster = k.cluster;
      keys.set(`${key.cluster ?? ''}|${keyString(key)}`, key);
    }
  }
  return [...keys.values()];
}

/**
 * A key of one controller in one cluster: what the relay collapses and publishes, a requeue
 * schedules, a workqueue holds and the reconcile runs.
 */
export interface ControllerKey extends Key {
  /** The cluster's id (a DNS-1123 label), {@link DEFAULT_CLUSTER} for a single-cluster deployment. */
  cluster: string;
  /** The controller's registered name (kebab-case), as in the key message. */
  controller: string;
}

/** A key as client-go's `MetaNamespaceKeyFunc` writes it: `namespace/name`, or `name` when cluster-scoped. */
export function keyString(k: Key): string {
  return k.namespace ? `${k.namespace}/${k.name}` : k.name;
}

/**
 * A key string back to its key, as client-go's `SplitMetaNamespaceKey`: `namespace/name`, or `name`
 * (cluster-scoped); the inverse of {@link keyString}. Names are not validated here.
 * @throws {Error} when `s` has more than one `/` (client-go: "unexpected key format").
 */
export function parseKeyString(s: string): Key {
  const parts = s.split('/');
  if (parts.length === 1) return { namespace: '', name: s };
  if (parts.length === 2) return { namespace: parts[0] ?? '', name: parts[1] ?? '' };
  throw new Error(`unexpected key format: "${s}"`);
}

/**
 * The Pub/Sub ordering key of a controller's key: `cluster/controller/namespace/name`, so that
 * deliveries of one key of one cluster are serialised while different keys (and the same key in
 * two clusters) run in parallel. Also the identity of a key in the relay's collapser and retry
 * buffer and in the reconcile's per-key serialisation.
 */
export function orderingKeyOf(k: ControllerKey): string {
  return `${k.cluster}/${k.controller}/${k.namespace}/${k.name}`;
}
