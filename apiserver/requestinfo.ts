/**
 * What a request is about (k8s.io/apiserver's RequestInfo): verb, API group/version, resource,
 * subresource, namespace, name — shared by authorization, fault injection and the request log.
 */
export interface RequestInfo {
  /** False for non-resource paths (`/version`, `/healthz`, discovery documents). */
  isResource: boolean;
  /** RBAC verb: get, list, watch, create, update, patch, delete, deletecollection (lowercased HTTP method for non-resource paths). */
  verb: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  path: string;
}

/** Selects requests (for faults and the request log); every given field must match. */
export interface RequestMatch {
  verb?: string | string[];
  group?: string;
  resource?: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

export function matchesRequest(m: RequestMatch, info: RequestInfo): boolean {
  if (m.verb !== undefined && !(Array.isArray(m.verb) ? m.verb : [m.verb]).includes(info.verb)) return false;
  if (m.group !== undefined && m.group !== info.apiGroup) return false;
  if (m.resource !== undefined && m.resource !== info.resource) return false;
  if (m.subresource !== undefined && m.subresource !== info.subresource) return false;
  if (m.namespace !== undefined && m.namespace !== info.namespace) return false;
  if (m.name !== undefined && m.name !== info.name) return false;
  return true;
}
