/**
 * Content negotiation for responses as kube-apiserver does it for JSON: plain objects, metadata-only
 * `PartialObjectMetadata`/`PartialObjectMetadataList` (client-go's metadata client and informers), and
 * `Table` (kubectl get); YAML when asked for.
 */
import type { KubeObject, ResourceType } from './resources.ts';
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

function humanDuration(fromIso: string | undefined): string {
  if (!fromIso) return '<unknown>';
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(fromIso)) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

/** Evaluates the simple JSONPath forms printer columns use (`.spec.replicas`, `.status.conditions[0].type`). */
function evalJsonPath(obj: unknown, path: string): unknown {
  const parts = path
    .replace(/^\{?\.?/, '')
    .replace(/\}$/, '')
    .split('.')
    .filter(Boolean);
  let v: unknown = obj;
  for (const part of parts) {
    const m = /^([^[]*)(?:\[(\d+)\])?$/.exec(part);
    if (!m) return undefined;
    if (m[1]) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[m[1]] : undefined;
    if (m[2] !== undefined) v = Array.isArray(v) ? v[Number(m[2])] : undefined;
  }
  return v;
}

/** metav1.Table for a list of objects (Name, the CRD's printer columns, Age). */
export function table(
  t: ResourceType,
  objects: KubeObject[],
  listMeta: Record<string, unknown>,
  version: string,
  includeObject: string | null,
): unknown {
  const printer = t.custom?.printerColumns ?? [];
  const columnDefinitions = [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description: 'Name must be unique within a namespace.',
      priority: 0,
    },
    ...printer.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? '',
      description: c.description ?? '',
      priority: c.priority ?? 0,
    })),
  ];
  const hasAge = printer.some((c) => c.name.toLowerCase() === 'age');
  if (!hasAge)
    columnDefinitions.push({
      name: 'Age',
      type: 'string',
      format: '',
      description:
        'CreationTimestamp is a timestamp representing the server time when this object was created.',
      priority: 0,
    });
  const rows = objects.map((o) => {
    const cells: unknown[] = [o.metadata.name ?? ''];
    for (const c of printer) {
      const v = evalJsonPath(o, c.jsonPath);
      cells.push(c.type === 'date' && typeof v === 'string' ? humanDuration(v) : v === undefined ? null : v);
    }
    if (!hasAge) cells.push(humanDuration(o.metadata.creationTimestamp));
    const row: Record<string, unknown> = { cells };
    if (includeObject !== 'None')
      row.object = includeObject === 'Object' ? o : partialObjectMetadata(o, version);
    return row;
  });
  return { kind: 'Table', apiVersion: `meta.k8s.io/${version}`, metadata: listMeta, columnDefinitions, rows };
}
