/**
 * The key: which object to reconcile, the one shape it has from the relay's map to the reconcile
 * (docs/architecture.md "Contracts"), and its two string forms: client-go's `namespace/name` and
 * the Pub/Sub ordering key `controller/namespace/name`.
 */

/** A key, as client-go's `MetaNamespaceKeyFunc` splits it: `namespace` is `""` for cluster-scoped objects. */
export interface Key {
  namespace: string;
  name: string;
}

/** A key of one controller: what the relay collapses and publishes, a requeue schedules and a workqueue holds. */
export interface ControllerKey extends Key {
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
 * The Pub/Sub ordering key of a controller's key: `controller/namespace/name`, so that deliveries of
 * one key are serialised while different keys run in parallel.
 */
export function orderingKeyOf(k: ControllerKey): string {
  return `${k.controller}/${k.namespace}/${k.name}`;
}
