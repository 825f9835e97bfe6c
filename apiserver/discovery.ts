/**
 * Discovery documents as kube-apiserver serves them (legacy, unaggregated): `/version`, `/api`,
 * `/api/v1`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}`.
 */
import { ALL_VERBS, groupVersion, type ResourceRegistry, type ResourceType } from './resources.ts';

/** The Kubernetes version reported by `/version` (matches the installed kubectl's minor). */
export const VERSION_INFO = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-levelset-local',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2026-01-01T00:00:00Z',
  goVersion: 'go1.23.0',
  compiler: 'gc',
  platform: 'linux/amd64',
};

/** Preferred version for a group: kube-apiserver's priority (GA over beta over alpha, then higher number). */
function preferred(versions: string[]): string {
  const rank = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return [-1, 0, 0];
    return [m[2] === undefined ? 2 : m[2] === 'beta' ? 1 : 0, Number(m[1]), Number(m[3] ?? 0)];
  };
  return [...versions].sort((a, b) => {
    const [ra, rb] = [rank(a), rank(b)];
    for (let i = 0; i < 3; i++)
      if ((ra[i] as number) !== (rb[i] as number)) return (rb[i] as number) - (ra[i] as number);
    return 0;
  })[0] as string;
}

export function apiVersions(serverAddress: string) {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

export function apiGroup(resources: ResourceRegistry, group: string) {
  const versions = resources.versions(group);
  const pref = preferred(versions);
  return {
    name: group,
    versions: versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v })),
    preferredVersion: { groupVersion: `${group}/${pref}`, version: pref },
  };
}

export function apiGroupList(resources: ResourceRegistry) {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: resources.groups().map((g) => apiGroup(resources, g)),
  };
}

function verbsOf(t: ResourceType): string[] {
  if (t.virtual) return ['create'];
  return [...(t.verbs ?? ALL_VERBS)];
}

/** APIResourceList for one group/version, with subresources (`pods/status`, `serviceaccounts/token`). */
export function apiResourceList(resources: ResourceRegistry, group: string, version: string) {
  const list: Record<string, unknown>[] = [];
  for (const t of resources.inGroupVersion(group, version)) {
    const r: Record<string, unknown> = {
      name: t.plural,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: verbsOf(t),
    };
    if (t.shortNames.length) r.shortNames = t.shortNames;
    if (t.categories.length) r.categories = t.categories;
    list.push(r);
    if (t.statusSubresource)
      list.push({
        name: `${t.plural}/status`,
        singularName: '',
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: ['get', 'patch', 'update'],
      });
    for (const sub of t.subresources) {
      if (sub === 'token') {
        list.push({
          name: `${t.plural}/token`,
          singularName: '',
          namespaced: t.namespaced,
          group: 'authentication.k8s.io',
          version: 'v1',
          kind: 'TokenRequest',
          verbs: ['create'],
        });
      } else if (sub === 'finalize') {
        list.push({
          name: `${t.plural}/finalize`,
          singularName: '',
          namespaced: t.namespaced,
          kind: t.kind,
          verbs: ['update'],
        });
      }
    }
  }
  const out: Record<string, unknown> = { kind: 'APIResourceList' };
  if (group) out.apiVersion = 'v1';
  out.groupVersion = groupVersion({ group, version });
  out.resources = list;
  return out;
}
