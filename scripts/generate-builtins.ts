/**
 * The built-in resources of kube-apiserver, generated once into two tables from one source: the
 * local API server's (apiserver/builtins.gen.ts: what it serves, with scope, subresources, verbs,
 * short names and categories) and the kit's (functions/kit/builtins.gen.ts: a `ResourceType` of each,
 * typed with its `@kubernetes/client-node` model).
 *
 *   node scripts/generate-builtins.ts           # writes both tables
 *   node scripts/generate-builtins.ts --check   # fails (exit 1) when either differs from what it would write
 *
 * The source is `@kubernetes/client-node`'s generated API classes (OpenAPI-derived, one class per
 * group/version; why this package: it is the Kubernetes client Levelset already depends on, released
 * per Kubernetes minor, and its models are the types a controller reads): every REST path of each
 * GA group/version (`/api/v1`, `/apis/<group>/v<n>`) gives a resource's plural, scope and
 * subresources, its methods the verbs, and the model its `read` method returns the kind. The
 * package follows a later Kubernetes minor than the one Levelset serves (kube-apiserver v1.32), so
 * the resources that became GA after it are left out ({@link NOT_IN_1_32}). What OpenAPI does not
 * carry, short names and categories, comes from kube-apiserver's storage (`ShortNames()`,
 * `Categories()` of each resource's REST storage, v1.32): {@link SHORT_NAMES}, {@link CATEGORIES}.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';

const root = join(import.meta.dirname, '..');
const apis = join(dirname(createRequire(import.meta.url).resolve('@kubernetes/client-node')), 'gen', 'apis');

/** GA in a later minor than v1.32 (the Kubernetes release notes of v1.33 and v1.34): not served. */
const NOT_IN_1_32 = new Set([
  'admissionregistration.k8s.io/mutatingadmissionpolicies',
  'admissionregistration.k8s.io/mutatingadmissionpolicybindings',
  'networking.k8s.io/ipaddresses',
  'networking.k8s.io/servicecidrs',
  'resource.k8s.io/deviceclasses',
  'resource.k8s.io/resourceclaims',
  'resource.k8s.io/resourceclaimtemplates',
  'resource.k8s.io/resourceslices',
  'storage.k8s.io/volumeattributesclasses',
]);

/** Served only through another resource or by components Levelset does not run: left out (apiserver/README.md). */
const LEFT_OUT = new Set(['/bindings', '/componentstatuses']);

/** kube-apiserver v1.32's short names (the REST storages' `ShortNames()`), by `group/plural`. */
const SHORT_NAMES: Record<string, string[]> = {
  '/configmaps': ['cm'],
  '/endpoints': ['ep'],
  '/events': ['ev'],
  '/limitranges': ['limits'],
  '/namespaces': ['ns'],
  '/nodes': ['no'],
  '/persistentvolumeclaims': ['pvc'],
  '/persistentvolumes': ['pv'],
  '/pods': ['po'],
  '/replicationcontrollers': ['rc'],
  '/resourcequotas': ['quota'],
  '/serviceaccounts': ['sa'],
  '/services': ['svc'],
  'apiextensions.k8s.io/customresourcedefinitions': ['crd', 'crds'],
  'apps/daemonsets': ['ds'],
  'apps/deployments': ['deploy'],
  'apps/replicasets': ['rs'],
  'apps/statefulsets': ['sts'],
  'autoscaling/horizontalpodautoscalers': ['hpa'],
  'batch/cronjobs': ['cj'],
  'certificates.k8s.io/certificatesigningrequests': ['csr'],
  'events.k8s.io/events': ['ev'],
  'networking.k8s.io/ingresses': ['ing'],
  'networking.k8s.io/networkpolicies': ['netpol'],
  'policy/poddisruptionbudgets': ['pdb'],
  'scheduling.k8s.io/priorityclasses': ['pc'],
  'storage.k8s.io/storageclasses': ['sc'],
};

/** kube-apiserver v1.32's categories (the REST storages' `Categories()`), by `group/plural`. */
const CATEGORIES: Record<string, string[]> = {
  '/pods': ['all'],
  '/replicationcontrollers': ['all'],
  '/services': ['all'],
  'apiextensions.k8s.io/customresourcedefinitions': ['api-extensions'],
  'admissionregistration.k8s.io/mutatingwebhookconfigurations': ['api-extensions'],
  'admissionregistration.k8s.io/validatingwebhookconfigurations': ['api-extensions'],
  'admissionregistration.k8s.io/validatingadmissionpolicies': ['api-extensions'],
  'admissionregistration.k8s.io/validatingadmissionpolicybindings': ['api-extensions'],
  'apiregistration.k8s.io/apiservices': ['api-extensions'],
  'apps/daemonsets': ['all'],
  'apps/deployments': ['all'],
  'apps/replicasets': ['all'],
  'apps/statefulsets': ['all'],
  'autoscaling/horizontalpodautoscalers': ['all'],
  'batch/cronjobs': ['all'],
  'batch/jobs': ['all'],
};

/** One served resource (one group/version/plural), as the tables hold it. */
export interface BuiltinResource {
  group: string;
  version: string;
  plural: string;
  kind: string;
  /** The `@kubernetes/client-node` model of its objects (`V1ResourceQuota`). */
  model: string;
  namespaced: boolean;
  /** Its objects have a `spec`: kube-apiserver's strategy sets `metadata.generation`, 1 on create, +1 per spec change. */
  generation: boolean;
  subresources: string[];
  verbs: string[];
  shortNames: string[];
  categories: string[];
}

/** Whether client-node's model `model` has a `spec` member. */
function hasSpec(model: string): boolean {
  const type = (k8s as unknown as Record<string, { getAttributeTypeMap?(): { name: string }[] }>)[model];
  return type?.getAttributeTypeMap?.().some((a) => a.name === 'spec') ?? false;
}

/** Every built-in resource the package's GA API classes describe and v1.32 serves, core first. */
export function builtinResources(): BuiltinResource[] {
  const out = new Map<string, BuiltinResource & { order: number }>();
  const files = readdirSync(apis).filter((f) => /^[A-Za-z]+V\d+Api\.js$/.test(f));
  for (const file of files.sort((a, b) =>
    a === 'CoreV1Api.js' ? -1 : b === 'CoreV1Api.js' ? 1 : a < b ? -1 : 1,
  )) {
    const js = readFileSync(join(apis, file), 'utf8');
    const returns = new Map<string, string>();
    for (const m of js.matchAll(
      /async (\w+)WithHttpInfo\(response\)[\s\S]*?ObjectSerializer\.parse\(await response\.body\.text\(\), contentType\), "(\w+)"/g,
    ))
      if (m[1] && m[2]) returns.set(m[1], m[2]);
    for (const m of js.matchAll(/async (\w+)\(([^)]*)\) \{[\s\S]*?const localVarPath = '([^']+)'/g)) {
      const [, method = '', , path = ''] = m;
      const at = /^\/(?:api\/(v1)|apis\/([^/]+)\/(v\d+))\/(.+)$/.exec(path);
      if (!at) continue;
      const group = at[2] ?? '';
      const version = at[1] ?? at[3] ?? '';
      let segments = (at[4] ?? '').split('/');
      let namespaced = false;
      if (segments[0] === 'namespaces' && segments[1] === '{namespace}' && segments.length >= 3) {
        namespaced = true;
        segments = segments.slice(2);
      }
      const [plural = '', name, sub] = segments;
      const id = `${group}/${plural}`;
      if (!plural || plural.startsWith('{') || NOT_IN_1_32.has(id) || LEFT_OUT.has(id)) continue;
      const r =
        out.get(id) ??
        ({
          group,
          version,
          plural,
          kind: '',
          model: '',
          namespaced: false,
          generation: false,
          subresources: [],
          verbs: [],
          shortNames: SHORT_NAMES[id] ?? [],
          categories: CATEGORIES[id] ?? [],
          order: out.size,
        } satisfies BuiltinResource & { order: number });
      // autoscaling/v1 and v2 both serve HPAs: the preferred (highest) version is kept.
      if (r.version !== version && r.version > version) continue;
      if (r.version !== version) Object.assign(r, { version, subresources: [], verbs: [] });
      r.namespaced ||= namespaced;
      const verb = /^(create|deleteCollection|delete|list|patch|read|replace)/.exec(method)?.[1];
      if (sub && name === '{name}') {
        if (!r.subresources.includes(sub)) r.subresources.push(sub);
      } else if (verb) {
        const v = { read: 'get', replace: 'update', deleteCollection: 'deletecollection' }[verb] ?? verb;
        if (!r.verbs.includes(v)) r.verbs.push(v);
        if (v === 'list' && !r.verbs.includes('watch')) r.verbs.push('watch');
        if (verb === 'read' && name === '{name}') {
          r.model = returns.get(method) ?? '';
          // V1Pod → Pod; CoreV1Event, EventsV1Event → Event (the models of a kind two groups share).
          r.kind = r.model.replace(/^(?:[A-Z][a-z]+)?V\d+(?:(?:alpha|beta)\d+)?/, '');
        }
      }
      out.set(id, r);
    }
  }
  return [...out.values()]
    .filter((r) => r.kind)
    .sort((a, b) => a.order - b.order)
    .map(({ order: _, ...r }) => ({
      ...r,
      generation: hasSpec(r.model),
      subresources: r.subresources.sort(),
      verbs: r.verbs.sort(),
    }));
}

const HEADER = `// Generated by scripts/generate-builtins.ts from @kubernetes/client-node's API classes: do not edit.\n`;

/** The local API server's table (apiserver/builtins.gen.ts). */
export function apiserverTable(resources: readonly BuiltinResource[]): string {
  const rows = resources.map((r) => JSON.stringify(r));
  return `${HEADER}/** kube-apiserver v1.32's built-in resources: scope, subresources, verbs, short names, categories. */
export const BUILTIN_RESOURCES: readonly {
  group: string;
  version: string;
  plural: string;
  kind: string;
  /** Its objects' \`@kubernetes/client-node\` model (\`V1ResourceQuota\`): the fields its kind declares. */
  model: string;
  namespaced: boolean;
  /** Sets \`metadata.generation\` (its objects have a \`spec\`). */
  generation: boolean;
  subresources: string[];
  verbs: string[];
  shortNames: string[];
  categories: string[];
}[] = [
${rows.map((r) => `  ${r},`).join('\n')}
];
`;
}

/** The kit's table (functions/kit/builtins.gen.ts), keyed by plural (`events.events.k8s.io` for the second `events`). */
export function kitTable(resources: readonly BuiltinResource[]): string {
  const seen = new Set<string>();
  const entries = resources.map((r) => {
    const key = seen.has(r.plural) ? `${r.plural}.${r.group}` : r.plural;
    seen.add(r.plural);
    const status = r.subresources.includes('status') ? '' : ', statusSubresource: false';
    return `  ${JSON.stringify(key)}: { group: ${JSON.stringify(r.group)}, version: '${r.version}', plural: '${r.plural}', kind: '${r.kind}', namespaced: ${r.namespaced}${status} } as ResourceType<k8s.${r.model}>,`;
  });
  return `${HEADER}import type * as k8s from '@kubernetes/client-node';
import type { ResourceType } from '../../core/contract/controller.ts';

/**
 * Every built-in resource kube-apiserver v1.32 serves, by plural (kubectl's resource name), each a
 * \`ResourceType\` typed with its client-node model: \`owned(resources.resourcequotas)\` is a
 * \`V1ResourceQuota[]\`. The second \`events\` is \`resources['events.events.k8s.io']\`.
 */
export const resources = {
${entries.join('\n')}
} as const;
`;
}

const { values } = parseArgs({ options: { check: { type: 'boolean', default: false } } });
const resources = builtinResources();
const files: [string, string][] = [
  [join(root, 'apiserver', 'builtins.gen.ts'), apiserverTable(resources)],
  [join(root, 'functions', 'kit', 'builtins.gen.ts'), kitTable(resources)],
];
const drifted = files.filter(([path, text]) => {
  try {
    return readFileSync(path, 'utf8') !== text;
  } catch {
    return true;
  }
});
if (values.check) {
  for (const [path] of drifted)
    process.stderr.write(`${path} differs: run node scripts/generate-builtins.ts\n`);
  process.exitCode = drifted.length > 0 ? 1 : 0;
} else for (const [path, text] of files) writeFileSync(path, text);
