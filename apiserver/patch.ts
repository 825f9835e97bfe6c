/**
 * The PATCH content types kube-apiserver accepts: JSON merge patch (RFC 7386), JSON patch (RFC 6902,
 * via fast-json-patch), strategic merge patch (the subset of k8s.io/apimachinery strategicpatch that
 * kubectl sends for the built-ins served here), and apply patch (server-side apply, approximated).
 */
import fjp from 'fast-json-patch';
import { ApiError, badRequest } from './status.ts';

type Json = unknown;
type JsonObject = Record<string, Json>;

function isObject(v: Json): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * RFC 6902 JSON patch.
 * @throws ApiError 400 for a malformed patch, 422 when an operation fails (as kube-apiserver's patcher).
 */
export function jsonPatch(target: Json, patch: Json): Json {
  if (!Array.isArray(patch))
    throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  try {
    return fjp.applyPatch(structuredClone(target), patch as fjp.Operation[], true, true).newDocument;
  } catch (err) {
    const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new ApiError({
      message: `the server rejected our request due to an error in our request`,
      reason: 'Invalid',
      details: { causes: [{ message: why }] },
      code: 422,
    });
  }
}

/** patchMergeKey of list fields, by field name (k8s.io/api struct tags for the types served here). */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  ports: 'containerPort',
  volumes: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  imagePullSecrets: 'name',
  ownerReferences: 'uid',
  conditions: 'type',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
  resourceClaims: 'name',
};

/** Primitive lists with patchStrategy merge (set union). */
const MERGE_PRIMITIVE_LISTS = new Set(['finalizers']);

/** Strategic merge patch for built-in types (strategicpatch.StrategicMergePatch, directives included). */
export function strategicMergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  if (patch.$patch === 'replace') {
    const { $patch: _, ...rest } = patch;
    return structuredClone(rest);
  }
  const out: JsonObject = isObject(target) ? { ...target } : {};
  const orders: Record<string, Json[]> = {};
  let retainKeys: string[] | undefined;
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch') continue;
    if (k === '$retainKeys') {
      retainKeys = Array.isArray(v) ? (v as string[]) : undefined;
      continue;
    }
    if (k.startsWith('$setElementOrder/')) {
      if (Array.isArray(v)) orders[k.slice('$setElementOrder/'.length)] = v;
      continue;
    }
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) out[field] = cur.filter((x) => !v.includes(x));
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    const cur = out[k];
    const mergeKey = MERGE_KEYS[k];
    if (Array.isArray(v) && mergeKey && v.every((x) => isObject(x))) {
      out[k] = mergeList(Array.isArray(cur) ? cur : [], v as JsonObject[], mergeKey);
    } else if (Array.isArray(v) && MERGE_PRIMITIVE_LISTS.has(k)) {
      const base = Array.isArray(cur) ? [...cur] : [];
      for (const x of v) if (!base.includes(x)) base.push(x);
      out[k] = base;
    } else if (isObject(v)) {
      if (v.$patch === 'delete') delete out[k];
      else out[k] = strategicMergePatch(cur, v);
    } else {
      out[k] = structuredClone(v);
    }
  }
  for (const [field, order] of Object.entries(orders)) {
    const list = out[field];
    if (!Array.isArray(list)) continue;
    const key = MERGE_KEYS[field];
    const pos = (item: Json) => {
      const id = key && isObject(item) ? item[key] : item;
      const i = order.findIndex((o) => (key && isObject(o) ? o[key] === id : o === id));
      return i < 0 ? order.length : i;
    };
    out[field] = [...list].sort((a, b) => pos(a) - pos(b));
  }
  if (retainKeys) {
    for (const k of Object.keys(out)) if (!retainKeys.includes(k) && !(k in patch)) delete out[k];
  }
  return out;
}

function mergeList(base: Json[], patch: JsonObject[], key: string): Json[] {
  const out = [...base];
  for (const item of patch) {
    const i = out.findIndex((o) => isObject(o) && o[key] === item[key]);
    if (item.$patch === 'delete') {
      if (i >= 0) out.splice(i, 1);
      continue;
    }
    if (i >= 0) out[i] = strategicMergePatch(out[i], item);
    else {
      const { $patch: _, ...rest } = item;
      out.push(strategicMergePatch({}, rest));
    }
  }
  return out;
}

export const PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
  'application/apply-patch+cbor',
] as const;

/**
 * Checks a PATCH content type before anything else, as kube-apiserver's patch handler does.
 * @throws ApiError 415 UnsupportedMediaType (strategic merge patch is not supported for custom resources)
 */
export function checkPatchType(contentType: string, custom: boolean): void {
  const allowed = custom
    ? PATCH_TYPES.filter((p) => p !== 'application/strategic-merge-patch+json')
    : PATCH_TYPES;
  if (!(allowed as readonly string[]).includes(contentType)) {
    throw new ApiError({
      message: `the body of the request was in an unknown format - accepted media types include: ${allowed.join(', ')}`,
      reason: 'UnsupportedMediaType',
      code: 415,
    });
  }
}

/**
 * Applies a patch of the given content type to an object.
 * @throws ApiError 415 for an unsupported content type, 400/422 for a bad patch.
 */
export function applyPatch(contentType: string, target: Json, patch: Json, custom: boolean): Json {
  switch (contentType) {
    case 'application/json-patch+json':
      return jsonPatch(target, patch);
    case 'application/merge-patch+json':
      return mergePatch(target, patch);
    case 'application/strategic-merge-patch+json':
      if (custom) {
        throw new ApiError({
          message:
            'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml',
          reason: 'UnsupportedMediaType',
          code: 415,
        });
      }
      return strategicMergePatch(target, patch);
    case 'application/apply-patch+yaml':
      return custom ? mergePatch(target, patch) : strategicMergePatch(target, patch);
    default:
      throw new ApiError({
        message: `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.slice(0, 4).join(', ')}`,
        reason: 'UnsupportedMediaType',
        code: 415,
      });
  }
}
