/**
 * A minimal `/openapi/v3` as kubectl needs it: the index of group/versions and, per group/version,
 * the PATCH operations with their `x-kubernetes-group-version-kind` and the `fieldValidation` query
 * parameter, so that kubectl (`--validate=strict`, the default) hands validation to the server
 * instead of downloading schemas for client-side validation. No schemas are published, so kubectl's
 * apply computes patches from its compiled-in types (strategic merge) or as JSON merge patches
 * (custom resources), as it does against servers without OpenAPI.
 */
import { createHash } from 'node:crypto';
import type { ResourceRegistry } from './resources.ts';

function gvPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

function gvDocument(resources: ResourceRegistry, group: string, version: string): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  const params = ['dryRun', 'fieldManager', 'fieldValidation', 'force', 'pretty'].map((name) => ({
    name,
    in: 'query',
    schema: { type: name === 'force' ? 'boolean' : 'string' },
  }));
  for (const t of resources.inGroupVersion(group, version)) {
    if (t.virtual) continue;
    const base = `/${gvPath(group, version)}/${t.namespaced ? 'namespaces/{namespace}/' : ''}${t.plural}/{name}`;
    const gvk = { group, version, kind: t.kind };
    paths[base] = {
      patch: {
        operationId: `patch${t.kind}`,
        parameters: params,
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': gvk,
      },
    };
    if (t.statusSubresource) {
      paths[`${base}/status`] = {
        patch: {
          operationId: `patch${t.kind}Status`,
          parameters: params,
          'x-kubernetes-action': 'patch',
          'x-kubernetes-group-version-kind': gvk,
        },
      };
    }
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'v1.32.0' },
    paths,
    components: { schemas: {} },
  };
}

/** Serves `/openapi/v3` and `/openapi/v3/{api|apis}/...`; `undefined` for any other path. */
export function openapiV3(resources: ResourceRegistry, path: string): unknown {
  const gvs: { group: string; version: string }[] = [];
  for (const t of resources.all())
    if (!gvs.some((g) => g.group === t.group && g.version === t.version))
      gvs.push({ group: t.group, version: t.version });
  if (path === '/openapi/v3') {
    const out: Record<string, unknown> = {};
    for (const gv of gvs) {
      const doc = JSON.stringify(gvDocument(resources, gv.group, gv.version));
      const hash = createHash('sha512').update(doc).digest('hex').slice(0, 128).toUpperCase();
      out[gvPath(gv.group, gv.version)] = {
        serverRelativeURL: `/openapi/v3/${gvPath(gv.group, gv.version)}?hash=${hash}`,
      };
    }
    return { paths: out };
  }
  const rel = path.replace(/^\/openapi\/v3\//, '');
  const gv = gvs.find((g) => gvPath(g.group, g.version) === rel);
  if (!gv) return undefined;
  return gvDocument(resources, gv.group, gv.version);
}
