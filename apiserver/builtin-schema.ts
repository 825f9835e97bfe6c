/**
 * The fields a built-in kind declares, from its `@kubernetes/client-node` model (OpenAPI-derived:
 * each model's `attributeTypeMap`), so that a write of a built-in object drops the fields its kind
 * does not declare and names them, as kube-apiserver's JSON decoding does (Go's `encoding/json`
 * ignores them; with `fieldValidation=Strict` the decoder's strict mode reports each as
 * `unknown field "<path>"`, `Warn` returns them as warnings: apimachinery's serializer
 * `strictErrs`). A member whose type is free-form (`any`, `object`, an int-or-string, a map of
 * scalars) is not looked into.
 */
import * as k8s from '@kubernetes/client-node';

interface Attribute {
  baseName: string;
  type: string;
}
type Model = { getAttributeTypeMap?(): Attribute[] };
const models = k8s as unknown as Record<string, Model | undefined>;
const cache = new Map<string, Map<string, string> | undefined>();

/** A model's members, JSON name → type string (`V1PodSpec`, `Array<V1Container>`, `string`); `undefined` for no model. */
function membersOf(model: string): Map<string, string> | undefined {
  if (!cache.has(model)) {
    const attributes = models[model]?.getAttributeTypeMap?.();
    cache.set(model, attributes && new Map(attributes.map((a) => [a.baseName, a.type])));
  }
  return cache.get(model);
}

/**
 * Removes from `value` (of client-node type `type`) every member its model does not declare, at any
 * depth, and returns their paths as kube-apiserver names them (`spec.containers[0].imagee`).
 */
export function dropUnknownFields(type: string, value: unknown, path = ''): string[] {
  if (value === null || typeof value !== 'object') return [];
  const array = /^Array<(.+)>$/.exec(type);
  if (array?.[1] && Array.isArray(value))
    return value.flatMap((item, i) => dropUnknownFields(array[1] ?? '', item, `${path}[${i}]`));
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map?.[1] && !Array.isArray(value))
    return Object.entries(value).flatMap(([k, v]) =>
      dropUnknownFields(map[1] ?? '', v, path ? `${path}.${k}` : k),
    );
  const members = membersOf(type);
  if (!members || Array.isArray(value)) return [];
  const unknown: string[] = [];
  const object = value as Record<string, unknown>;
  for (const [k, v] of Object.entries(object)) {
    const child = path ? `${path}.${k}` : k;
    const memberType = members.get(k);
    if (memberType === undefined) {
      unknown.push(child);
      delete object[k];
    } else unknown.push(...dropUnknownFields(memberType, v, child));
  }
  return unknown;
}
