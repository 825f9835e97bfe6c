/**
 * The relay's spec indexes: for each controller that declares `indexes` over its primary
 * (`Controller.indexes`), the values each primary object has (e.g. the `namespace/name` of every
 * ConfigMap a bundle lists), and the reverse map a watch's map function asks through
 * `MapContext.byIndex` ("which primaries have this value"): controller-runtime's field indexer, on
 * a projection instead of a full cache. The primary's informer lists and watches whole objects for
 * such a controller only to run the index functions; the bodies are dropped at once, so memory is
 * the informer's metadata plus these strings, bounded by {@link MAX_INDEX_VALUES} per object and index.
 *
 * A primary's previous values are remembered until its next values replace them: the change itself
 * enqueues the primary (even when the primary predicate would drop the event), so a reference that
 * changes or disappears reaches the one primary that lost or gained it, and the old value stops
 * mapping to it from then on.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Controller } from '../core/contract/controller.ts';
import { type Key, keyString } from '../core/contract/key.ts';
import type { Logger } from '../core/log.ts';

/** Values kept per object and index at most; more are dropped, with a warning. */
export const MAX_INDEX_VALUES = 256;

interface Index {
  /** `namespace/name` of a primary → its values. */
  byKey: Map<string, string[]>;
  /** value → the `namespace/name`s of the primaries that have it. */
  byValue: Map<string, Set<string>>;
}

const keyOf = (o: KubernetesObject): Key => ({
  namespace: o.metadata?.namespace ?? '',
  name: o.metadata?.name ?? '',
});

function parseKey(s: string): Key {
  const slash = s.indexOf('/');
  return slash < 0 ? { namespace: '', name: s } : { namespace: s.slice(0, slash), name: s.slice(slash + 1) };
}

/** The indexes of every controller that declares some. */
export class SpecIndexes {
  readonly #indexes = new Map<string, Map<string, Index>>();
  readonly #controllers: readonly Controller[];
  readonly #logger: Logger;

  constructor(controllers: readonly Controller[], logger: Logger) {
    this.#controllers = controllers.filter((c) => c.indexes && Object.keys(c.indexes).length > 0);
    this.#logger = logger;
    for (const c of this.#controllers)
      this.#indexes.set(
        c.name,
        new Map(Object.keys(c.indexes ?? {}).map((name) => [name, { byKey: new Map(), byValue: new Map() }])),
      );
  }

  /** Whether `controller` declares indexes (its primary informer then reads whole objects). */
  has(controller: string): boolean {
    return this.#indexes.has(controller);
  }

  /**
   * Runs `controller`'s index functions on a whole primary object and keeps the values.
   * @returns whether any index's values changed (the caller then enqueues the primary)
   */
  update(controller: string, object: KubernetesObject): boolean {
    const c = this.#controllers.find((x) => x.name === controller);
    const indexes = this.#indexes.get(controller);
    if (!c?.indexes || !indexes) return false;
    const key = keyString(keyOf(object));
    let changed = false;
    for (const [name, fn] of Object.entries(c.indexes)) {
      let values: string[];
      try {
        values = [...new Set(fn(object).filter((v) => typeof v === 'string'))];
      } catch (err) {
        this.#logger.error({ err, controller, index: name, key }, 'index function threw: no values');
        values = [];
      }
      if (values.length > MAX_INDEX_VALUES) {
        this.#logger.warn(
          { controller, index: name, key, values: values.length, kept: MAX_INDEX_VALUES },
          'too many index values: the rest are not indexed',
        );
        values = values.slice(0, MAX_INDEX_VALUES);
      }
      changed = this.#set(indexes.get(name) as Index, key, values) || changed;
    }
    return changed;
  }

  /** Forgets a deleted primary's values. */
  remove(controller: string, key: Key): void {
    for (const index of this.#indexes.get(controller)?.values() ?? []) this.#set(index, keyString(key), []);
  }

  /** The primaries of `controller` whose index `name` has `value` (`[]` for an unknown index). */
  keys(controller: string, name: string, value: string): Key[] {
    const index = this.#indexes.get(controller)?.get(name);
    return [...(index?.byValue.get(value) ?? [])].map(parseKey);
  }

  /** Values held, over every controller and index (for a gauge and tests). */
  get size(): number {
    let n = 0;
    for (const indexes of this.#indexes.values())
      for (const index of indexes.values()) for (const v of index.byKey.values()) n += v.length;
    return n;
  }

  #set(index: Index, key: string, values: string[]): boolean {
    const previous = index.byKey.get(key) ?? [];
    if (previous.length === values.length && previous.every((v, i) => v === values[i])) return false;
    for (const v of previous) {
      const keys = index.byValue.get(v);
      keys?.delete(key);
      if (keys?.size === 0) index.byValue.delete(v);
    }
    if (values.length === 0) index.byKey.delete(key);
    else index.byKey.set(key, values);
    for (const v of values) {
      const keys = index.byValue.get(v) ?? new Set<string>();
      keys.add(key);
      index.byValue.set(v, keys);
    }
    return true;
  }
}
