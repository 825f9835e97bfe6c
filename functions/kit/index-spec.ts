/**
 * Spec indexes for mapping (controller-runtime's field indexer, `IndexField` + a map that asks it,
 * on a projection instead of a full cache): a controller declares an index over its primary — a
 * function of the object, e.g. the `namespace/name` of every ConfigMap its spec lists — and a watch
 * maps an event of another resource to the primaries that have the event object's value. The relay
 * keeps only the values per primary (relay/spec-index.ts), so it still caches metadata only.
 *
 *   indexes: { sources: ({ spec }) => spec.sources.map((s) => `${s.namespace}/${s.name}`) },
 *   watches: [{ resource: configmaps, map: mapByIndex('sources') }],
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { z } from 'zod';
import type { Controller } from '../../core/contract/controller.ts';
import type { MapFunction } from './map.ts';

/** What an index function receives: the whole primary object and its spec, parsed by the controller's schema. */
export interface IndexInput<Spec> {
  object: KubernetesObject;
  spec: Spec;
}

/** An index over the primary: its values for one object (`[]`: none). Pure and cheap. */
export type IndexFunction<Spec> = (input: IndexInput<Spec>) => readonly string[];

/** `namespace/name` of an object (`name` when cluster-scoped): the usual value of a reference. */
export function namespacedName(object: KubernetesObject): string {
  const ns = object.metadata?.namespace;
  return ns ? `${ns}/${object.metadata?.name ?? ''}` : (object.metadata?.name ?? '');
}

/**
 * The contract's `Controller.indexes` from a definition's: each function gets the spec parsed by
 * `schema`; an object whose spec fails it, or a function that throws, has no values (the reconcile
 * reports the invalid spec; an index cannot).
 */
export function compileIndexes<Schema extends z.ZodType>(
  schema: Schema,
  indexes: Record<string, IndexFunction<z.infer<Schema>>>,
): NonNullable<Controller['indexes']> {
  return Object.fromEntries(
    Object.entries(indexes).map(([name, fn]) => [
      name,
      (object: KubernetesObject) => {
        const spec = schema.safeParse((object as { spec?: unknown }).spec ?? {});
        if (!spec.success) return [];
        try {
          return [...fn({ object, spec: spec.data })];
        } catch {
          return [];
        }
      },
    ]),
  );
}

/**
 * Maps an event to the primaries whose index `index` has the event object's value
 * (`valueOfObject`, default {@link namespacedName}), for the object before and after a change.
 * Needs `index` declared in the same controller's `indexes`.
 */
export function mapByIndex(
  index: string,
  valueOfObject: (object: KubernetesObject) => string = namespacedName,
): MapFunction {
  return ({ object, oldObject }, ctx) => {
    const values = new Set([valueOfObject(object), ...(oldObject ? [valueOfObject(oldObject)] : [])]);
    return [...values].flatMap((v) => ctx.byIndex?.(index, v) ?? []);
  };
}
