/**
 * `configmap-bundle`: the ConfigMapBundle controller (`examples.levelset.dev/v1alpha1`), on the
 * Levelset controller kit (docs/writing-a-controller.md, "Mapping through a spec index").
 *
 * A bundle lists ConfigMaps (`spec.sources`, each `{namespace, name}`, in any namespace) that it
 * does not own, and owns one ConfigMap of its own name that merges their `data` (a later source
 * wins a key). A spec index over the bundle's sources lets the relay map an event of any ConfigMap
 * to the bundles that list it, so a bundle re-merges within one collapse window when a source
 * changes, appears (even after its bundle) or disappears; a key no source has any more leaves the
 * merged ConfigMap (the kit applies away what the reconcile stops setting). A converged bundle costs
 * a GET of itself, a LIST of its ConfigMaps, a GET per source, and no write.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import { configmaps, defineController, mapByIndex } from 'levelset/kit';
import { configmapBundleResource, configmapBundleSpecSchema, configmapBundleStatusSchema } from './api.ts';

/** The `configmap-bundle` controller module (registered in `controllers/index.ts`). */
export const configmapBundleController = defineController({
  name: 'configmap-bundle',
  primary: configmapBundleResource,
  spec: configmapBundleSpecSchema,
  status: configmapBundleStatusSchema,
  owns: [configmaps],
  // Which ConfigMaps a bundle lists, kept by the relay as `namespace/name` strings.
  indexes: { sources: ({ spec }) => spec.sources.map((s) => `${s.namespace}/${s.name}`) },
  // Any ConfigMap's event goes to the bundles whose `sources` index has its `namespace/name`.
  watches: [{ resource: configmaps, map: mapByIndex('sources') }],
  async reconcile({ object, spec, get }) {
    const data: Record<string, string> = {};
    const missing: string[] = [];
    for (const source of spec.sources) {
      const found = (await get(configmaps, source.name, { namespace: source.namespace })) as
        | V1ConfigMap
        | undefined;
      if (found) Object.assign(data, found.data);
      else missing.push(`${source.namespace}/${source.name}`);
    }
    return {
      children: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: object.metadata.name }, data }],
      status: { sourcesFound: spec.sources.length - missing.length, missing },
      ready: missing.length
        ? { status: false, reason: 'SourcesMissing', message: `not found: ${missing.join(', ')}` }
        : { status: true, reason: 'Merged', message: `${spec.sources.length} ConfigMaps merged` },
    };
  },
});
