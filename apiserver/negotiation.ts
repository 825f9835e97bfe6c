/**
 * Content negotiation for responses as kube-apiserver does it for JSON: plain objects, metadata-only
 * `PartialObjectMetadata`/`PartialObjectMetadataList` (client-go's metadata client and informers), and
 * `Table` (kubectl get; built by `./tables.ts`); YAML when asked for.
 */
import type { KubeObject } from './resources.ts';
import { ApiError } from './status.ts';

export type Representation =
  | { as: 'object'; yaml: boolean }
  | { as: 'metadata'; version: string; yaml: boolean }
  | { as: 'table'; version: string; yaml: boolean };

/**
 * Picks the representation from an `Accept` header (first acceptable media range wins).
 * @throws ApiError 406 when nothing acceptable is offered
 */
export function negotiate(accept: string | undefined): Representation {
  if (!accept) return { as: 'object', yaml: false };
  for (const range of accept.split(',')) {
    const [typePart, ...paramParts] = range.split(';').map((s) => s.trim());
    const type = (typePart ?? '').toLowerCase();
    const params: Record<string, string> = {};
    for (const p of paramParts) {
      const [k, v] = p.split('=');
      if (k && v !== undefined) params[k.trim()] = v.trim();
    }
    const yaml = type === 'application/yaml';
    if (!['application/json', 'application/yaml', '*/*', 'application/*'].includes(type)) continue;
    if (!params.as) return { as: 'object', yaml };
    if (params.g !== 'meta.k8s.io' || !['v1', 'v1beta1'].includes(params.v ?? '')) continue;
    if (params.as === 'PartialObjectMetadata' || params.as === 'PartialObjectMetadataList') {
      return { as: 'metadata', version: params.v ?? 'v1', yaml };
    }
    if (params.as === 'Table') return { as: 'table', version: params.v ?? 'v1', yaml };
  }
  throw new ApiError({
    message: 'only the following media types are accepted: application/json, application/yaml',
    reason: 'NotAcceptable',
    code: 406,
  });
}

/** An object reduced to metav1.PartialObjectMetadata. */
export function partialObjectMetadata(obj: KubeObject, version = 'v1'): KubeObject {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: obj.metadata };
}
