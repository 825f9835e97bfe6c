/**
 * Generates the Kubernetes RBAC and the CRD list from a project's controller registry (found by
 * core/project.ts; this repository's is `examples/registry.ts`),
 * so that the registry stays the one list of what is watched and what is reconciled
 * (docs/architecture.md "Contracts"). `levelset build` and `npm run generate:manifests` write, in the
 * project (paths relative to its root; `<registry>` is the registry module's folder):
 *
 * - `deploy/registry.gen.json` — what Levelset's Terraform module takes as its `registry` input
 *   ({@link RegistryJson}): the controllers' names, the relay's and the functions' ClusterRole
 *   rules, the Cloud Audit Logs sink's filter (`""` when no controller declares `auditLog`), and
 *   the CRDs as objects, and the registry's admission policies (`policies`: each
 *   ValidatingAdmissionPolicy and its binding). The calling root reads it with
 *   `jsondecode(file(...))`, so nothing in it is a Terraform template.
 * - `deploy/admission-policies.yaml` — the same policies and bindings, when the registry has any.
 * - `deploy/rbac.yaml` — the same ClusterRoles and their bindings, for `kubectl apply -k deploy`.
 * - Levelset's own repository only (its package name is `levelset`): `deploy/in-process/rbac.yaml` — the in-process mode's
 *   ClusterRole (the union of the relay's and the functions' rules) and its binding;
 *   `deploy/in-process/namespace.yaml`, a copy of `deploy/namespace.yaml` (kustomize cannot load
 *   files outside its root).
 * - `crd.yaml`'s `openAPIV3Schema` ({@link projectCrdSources}), for the CRD of a controller's
 *   primary: generated from the controller's zod schemas (`defineController`'s `spec` and `status`)
 *   by {@link generateCrd}, as controller-gen generates a CRD from Go types. The rest of the file
 *   (names, scope, printer columns, the schema's root `description`) is written by hand and kept.
 *   What the zod schema checks that a CRD cannot express (a refinement) is listed in a comment.
 * - `deploy/webhooks.yaml` (and `webhook_configurations` in registry.gen.json) — the registry's
 *   admission webhooks' configurations, when it exports `webhooks` (functions/kit/webhook-configurations.ts).
 * - `deploy/crds/*.yaml` + `deploy/crds/kustomization.yaml` — copies of each registered
 *   controller's `crd.yaml` (kustomize cannot load files outside its root).
 *
 *   npx node cli/build/generate-manifests.ts          # write the files of the current directory's project
 *   npx node cli/build/generate-manifests.ts --check  # exit 1 when a checked-in file differs (CI)
 *
 * The rules, as the relay and the functions use the API:
 * - relay: `get`/`list`/`watch` on every resource a controller watches (metadata-only list+watch),
 *   plus `get`/`list`/`watch` on `customresourcedefinitions` when a primary is a custom resource
 *   (the relay waits for its CRD to exist).
 * - functions: the union of every controller's `rbac`, `create`/`patch` on core `events`
 *   (EventRecorder), and `list` on every primary and watched resource (resync's paginated LIST).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { isMap, isScalar, parseAllDocuments, parseDocument, stringify } from 'yaml';
import type { AdmissionPolicy, AdmissionWebhook } from '../../core/contract/admission.ts';
import type { Controller, ResourceType, Verb } from '../../core/contract/controller.ts';
import { EVENT_RECORDER_RULE } from '../../core/k8s/events.ts';
import { findProject, isLevelsetRepository, loadRegistry, type Project } from '../../core/project.ts';
import { resourceNameRegex } from '../../functions/kit/audit-log.ts';
import { customResourceSchema } from '../../functions/kit/crd-schema.ts';
import { parsePolicyRules } from '../../functions/kit/rbac.ts';
import {
  ADMISSION_URL_PLACEHOLDER,
  webhookConfigurations,
} from '../../functions/kit/webhook-configurations.ts';
import { packageRoot } from '../../local/module-path.ts';

/** The second line of deploy/webhooks.yaml. */
const WEBHOOKS_NOTE = `The admission webhooks' configurations. Terraform applies them with the admission service's URL in place of ${ADMISSION_URL_PLACEHOLDER}; applied as they are, each webhook fails per its failurePolicy.`;

/** The repository root (this file lives in `scripts/`; installed, in `dist/scripts/`). */
export const REPO_ROOT = resolve(import.meta.dirname, '../..');

/** Kubernetes RBAC PolicyRule (rbac.authorization.k8s.io/v1), one API group per rule. */
export interface ClusterRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** A controller's CRD file, a `crd.yaml` found by {@link findCrdSources}. */
export interface CrdSource {
  /** Path relative to the repository root, POSIX separators. */
  path: string;
  text: string;
  /**
   * A CRD of Levelset's own controllers (`levelset/controllers`) read from the installed package: copied
   * into `deploy/` and the Terraform input, never written back (the package generated it).
   */
  shipped?: boolean;
}

/** A parsed, validated CRD. */
export interface Crd {
  source: CrdSource;
  name: string;
  group: string;
  plural: string;
}

/** Names of the objects the manifests create (Terraform uses the same names). */
export const NAMES = {
  namespace: 'levelset-system',
  relayServiceAccount: 'levelset-relay',
  relayClusterRole: 'levelset-relay',
  functionsClusterRole: 'levelset-functions',
  inProcessServiceAccount: 'levelset-in-process',
  inProcessClusterRole: 'levelset-in-process',
  /** Placeholder subject of the functions' binding in `deploy/`: the runtime service account's email. */
  functionsUserPlaceholder: 'levelset-functions@PROJECT_ID.iam.gserviceaccount.com',
} as const;

/**
 * API groups served by kube-apiserver itself (not by CRDs). A primary in any other group is a custom
 * resource, whose CRD the relay waits for. `samplecontroller.k8s.io` ends in `.k8s.io` yet is a
 * CRD, so a suffix test would be wrong.
 */
export const BUILTIN_GROUPS: ReadonlySet<string> = new Set([
  '',
  'admissionregistration.k8s.io',
  'apiextensions.k8s.io',
  'apiregistration.k8s.io',
  'apps',
  'authentication.k8s.io',
  'authorization.k8s.io',
  'autoscaling',
  'batch',
  'certificates.k8s.io',
  'coordination.k8s.io',
  'discovery.k8s.io',
  'events.k8s.io',
  'flowcontrol.apiserver.k8s.io',
  'internal.apiserver.k8s.io',
  'networking.k8s.io',
  'node.k8s.io',
  'policy',
  'rbac.authorization.k8s.io',
  'resource.k8s.io',
  'scheduling.k8s.io',
  'storage.k8s.io',
  'storagemigration.k8s.io',
]);

/** RBAC verbs in the order Kubernetes documents them; rules list verbs in this order. */
const VERB_ORDER: readonly string[] = [
  'get',
  'list',
  'watch',
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
];
const READ_VERBS: readonly Verb[] = ['get', 'list', 'watch'];

/** Whether `r` is served by a CustomResourceDefinition (its group is not built in). */
export function isCustomResource(r: Pick<ResourceType, 'group'>): boolean {
  return !BUILTIN_GROUPS.has(r.group);
}

interface Grant {
  group: string;
  resource: string;
  verbs: Iterable<string>;
}

function verbRank(v: string): number {
  const i = VERB_ORDER.indexOf(v);
  return i < 0 ? VERB_ORDER.length : i;
}

/**
 * Merges grants into minimal, deterministic rules: verbs are unioned per (group, resource), then
 * resources with the same group and verb set share one rule. Sorted by group, then resources.
 */
export function mergeGrants(grants: Iterable<Grant>): ClusterRule[] {
  const byResource = new Map<string, { group: string; resource: string; verbs: Set<string> }>();
  for (const g of grants) {
    const id = `${g.group}\u0000${g.resource}`;
    let entry = byResource.get(id);
    if (!entry) {
      entry = { group: g.group, resource: g.resource, verbs: new Set() };
      byResource.set(id, entry);
    }
    for (const v of g.verbs) entry.verbs.add(v);
  }
  const byRule = new Map<string, ClusterRule>();
  for (const { group, resource, verbs } of byResource.values()) {
    const sortedVerbs = [...verbs].sort((a, b) => verbRank(a) - verbRank(b) || a.localeCompare(b));
    const id = `${group}\u0000${sortedVerbs.join(',')}`;
    let rule = byRule.get(id);
    if (!rule) {
      rule = { apiGroups: [group], resources: [], verbs: sortedVerbs };
      byRule.set(id, rule);
    }
    rule.resources.push(resource);
  }
  const rules = [...byRule.values()];
  for (const r of rules) r.resources.sort();
  return rules.sort(
    (a, b) =>
      (a.apiGroups[0] ?? '').localeCompare(b.apiGroups[0] ?? '') ||
      (a.resources[0] ?? '').localeCompare(b.resources[0] ?? '') ||
      a.verbs.join(',').localeCompare(b.verbs.join(',')),
  );
}

/**
 * The relay's ClusterRole rules: `get`/`list`/`watch` on every watched resource, and on
 * `customresourcedefinitions` when any primary is a custom resource. Nothing else.
 */
export function relayRules(controllers: readonly Controller[]): ClusterRule[] {
  const grants: Grant[] = [];
  for (const c of controllers) {
    for (const w of c.watches)
      grants.push({ group: w.resource.group, resource: w.resource.plural, verbs: READ_VERBS });
  }
  if (controllers.some((c) => isCustomResource(c.primary))) {
    grants.push({ group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', verbs: READ_VERBS });
  }
  return mergeGrants(grants);
}

/**
 * The functions' ClusterRole rules: every controller's `rbac`, the Event recorder's
 * `EVENT_RECORDER_RULE` (core/k8s/events.ts: create/get/patch of core/v1 Events), and `list` on every primary and watched
 * resource (resync enumerates keys with paginated LIST).
 */
export function functionsRules(controllers: readonly Controller[]): ClusterRule[] {
  const grants: Grant[] = [];
  for (const c of controllers) {
    for (const rule of parsePolicyRules(c.name, c.rbac)) {
      for (const group of rule.apiGroups)
        for (const resource of rule.resources) grants.push({ group, resource, verbs: rule.verbs });
    }
    grants.push({ group: c.primary.group, resource: c.primary.plural, verbs: ['list'] });
    for (const w of c.watches)
      grants.push({ group: w.resource.group, resource: w.resource.plural, verbs: ['list'] });
  }
  if (controllers.length > 0) {
    for (const resource of EVENT_RECORDER_RULE.resources)
      for (const group of EVENT_RECORDER_RULE.apiGroups)
        grants.push({ group, resource, verbs: EVENT_RECORDER_RULE.verbs });
  }
  return mergeGrants(grants);
}

/**
 * The in-process mode's ClusterRole rules: it list+watches as the relay and reconciles as the
 * functions, so the union of {@link relayRules} and {@link functionsRules}.
 */
export function inProcessRules(controllers: readonly Controller[]): ClusterRule[] {
  const grants: Grant[] = [];
  for (const rule of [...relayRules(controllers), ...functionsRules(controllers)]) {
    for (const group of rule.apiGroups)
      for (const resource of rule.resources) grants.push({ group, resource, verbs: rule.verbs });
  }
  return mergeGrants(grants);
}

/**
 * The Cloud Logging filter (Logging query language) of the audit log sink: Admin Activity entries
 * (`log_id("cloudaudit.googleapis.com/activity")`) of each service some controller's `auditLog`
 * names, whose `protoPayload.resourceName` one of its patterns matches (`=~`, the pattern's RE2
 * expression: functions/kit/audit-log.ts `resourceNameRegex`); the same names the `auditLog`
 * function maps. Services and patterns sorted, repeats merged. `""` when no controller declares one.
 * Terraform adds the exclusion of the functions' own service account (terraform/audit-log.tf).
 */
export function auditLogFilter(controllers: readonly Controller[]): string {
  const byService = new Map<string, Set<string>>();
  for (const c of controllers) {
    if (!c.auditLog) continue;
    const patterns = byService.get(c.auditLog.serviceName) ?? new Set<string>();
    for (const pattern of c.auditLog.resourceNames) patterns.add(resourceNameRegex(pattern));
    byService.set(c.auditLog.serviceName, patterns);
  }
  if (byService.size === 0) return '';
  const terms = [...byService.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([service, patterns]) => {
      const names = [...patterns].sort().map((re) => `protoPayload.resourceName=~${JSON.stringify(re)}`);
      return `(protoPayload.serviceName=${JSON.stringify(service)} AND (${names.join(' OR ')}))`;
    });
  return `log_id("cloudaudit.googleapis.com/activity") AND (${terms.join(' OR ')})`;
}

/** The folders {@link findCrdSources} does not enter: dependencies, build output, generated manifests. */
const NOT_SOURCES: ReadonlySet<string> = new Set(['node_modules', 'build', 'deploy', 'dist']);

/**
 * Every `crd.yaml` under `dir`, at any depth (skipping {@link NOT_SOURCES} and dot-folders), its
 * path relative to `root`, sorted by path.
 */
export function findCrdSources(root: string, dir: string): CrdSource[] {
  if (!existsSync(dir)) return [];
  const sources: CrdSource[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && !entry.name.startsWith('.') && !NOT_SOURCES.has(entry.name))
      sources.push(...findCrdSources(root, path));
    else if (entry.isFile() && entry.name === 'crd.yaml')
      sources.push({ path: relative(root, path).split('\\').join('/'), text: readFileSync(path, 'utf8') });
  }
  return sources.sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * The CRDs of a project's registered controllers (the custom resources they reconcile or watch):
 * its own, found under the registry module's folder ({@link findCrdSources}; in this repository
 * `examples/`, the example projects), then those of Levelset's own controllers
 * (`levelset/controllers`: Topic, Subscription) that it registers and does not define itself, read
 * from the package (`functions/controllers/<folder>/crd.yaml`, in its `files`) and never written
 * back — except in Levelset's repository, where they are its own sources, generated like the rest.
 * A `crd.yaml` of no registered controller is left out.
 */
export function projectCrdSources(
  project: Pick<Project, 'root' | 'registry' | 'packageJson'>,
  controllers: readonly Controller[],
): CrdSource[] {
  const registered = new Set(
    controllers
      .flatMap((c) => [c.primary, ...c.watches.map((w) => w.resource)])
      .filter(isCustomResource)
      .map((r) => `${r.plural}.${r.group}`),
  );
  const ofRegistered = (sources: CrdSource[]) => sources.filter((s) => registered.has(parseCrd(s).name));
  const own = ofRegistered(findCrdSources(project.root, dirname(project.registry)));
  const levelset = isLevelsetRepository(project);
  const shipped = ofRegistered(findCrdSources(project.root, join(packageRoot, 'functions', 'controllers')))
    .filter((s) => !own.some((o) => parseCrd(o).name === parseCrd(s).name))
    .map((s) => (levelset ? s : { ...s, shipped: true }));
  return [...own, ...shipped];
}

/**
 * Parses and validates one CRD file: exactly one YAML document (Terraform's `yamldecode` reads
 * one), `apiextensions.k8s.io/v1` `CustomResourceDefinition`, `metadata.name` = `<plural>.<group>`
 * (kube-apiserver's rule), no `status`.
 * @throws {Error} naming the file and the broken rule.
 */
export function parseCrd(source: CrdSource): Crd {
  const docs = parseAllDocuments(source.text);
  if (!Array.isArray(docs) || docs.length !== 1) {
    throw new Error(`${source.path}: expected exactly one YAML document (Terraform's yamldecode reads one)`);
  }
  const [doc] = docs;
  if (!doc || doc.errors.length > 0) throw new Error(`${source.path}: ${doc?.errors[0]?.message ?? 'empty'}`);
  const crd = doc.toJS() as {
    apiVersion?: unknown;
    kind?: unknown;
    metadata?: { name?: unknown };
    spec?: { group?: unknown; names?: { plural?: unknown } };
    status?: unknown;
  } | null;
  if (crd?.apiVersion !== 'apiextensions.k8s.io/v1' || crd.kind !== 'CustomResourceDefinition') {
    throw new Error(`${source.path}: expected apiextensions.k8s.io/v1 CustomResourceDefinition`);
  }
  const group = crd.spec?.group;
  const plural = crd.spec?.names?.plural;
  const name = crd.metadata?.name;
  if (typeof group !== 'string' || typeof plural !== 'string' || name !== `${plural}.${group}`) {
    throw new Error(`${source.path}: metadata.name must be <spec.names.plural>.<spec.group>`);
  }
  if (crd.status !== undefined)
    throw new Error(`${source.path}: remove status (Terraform manages spec only)`);
  return { source, name, group, plural };
}

/** Custom-resource primaries with no CRD among `crds`, as `controller: plural.group`. */
export function missingCrds(controllers: readonly Controller[], crds: readonly Crd[]): string[] {
  const have = new Set(crds.map((c) => c.name));
  return controllers
    .filter((c) => isCustomResource(c.primary) && !have.has(`${c.primary.plural}.${c.primary.group}`))
    .map((c) => `${c.name}: ${c.primary.plural}.${c.primary.group}`);
}

/**
 * A CRD file with the `openAPIV3Schema` of `controller`'s primary version generated from its zod
 * schemas ({@link customResourceSchema}); the schema's root `description` and everything else is kept.
 * Above the `schema` key, a comment says so and lists what the schemas check that the CRD cannot.
 * @returns the source unchanged when the CRD is not `controller`'s primary or it declares no schemas.
 * @throws {Error} naming the file, for a schema with no CRD form (crd-schema.ts).
 */
export function generateCrd(
  source: CrdSource,
  controller: (Pick<Controller, 'name' | 'schemas'> & { primary: Pick<ResourceType, 'version'> }) | undefined,
): CrdSource {
  if (!controller?.schemas) return source;
  const doc = parseDocument(source.text);
  const versions = doc.getIn(['spec', 'versions'], true);
  const items = (versions as { items?: unknown[] } | undefined)?.items ?? [];
  const index = items.findIndex((v) => isMap(v) && v.get('name') === controller.primary.version);
  const version = items[index];
  if (!isMap(version)) throw new Error(`${source.path}: no version ${controller.primary.version}`);
  const path = ['spec', 'versions', index, 'schema', 'openAPIV3Schema'];
  const description = doc.getIn([...path, 'description']);
  let generated: ReturnType<typeof customResourceSchema>;
  try {
    generated = customResourceSchema({
      ...(typeof description === 'string' ? { description } : {}),
      ...controller.schemas,
    });
  } catch (err) {
    throw new Error(`${source.path}: ${(err as Error).message}`);
  }
  doc.setIn(path, doc.createNode(generated.schema));
  const key = version.items.find((p) => isScalar(p.key) && p.key.value === 'schema')?.key;
  if (isScalar(key)) {
    key.commentBefore = [
      ` openAPIV3Schema: generated by \`levelset build\` (in Levelset's repository \`npm run generate:manifests\`)`,
      ` from the ${controller.name} controller's zod schemas (defineController \`spec\` and \`status\`,`,
      ' functions/kit/crd-schema.ts): edit them, not this.',
      ...(generated.notExpressed.length
        ? [
            ' Checked by the zod schemas only (a reconcile sets Ready=False/InvalidSpec), no CRD form:',
            ...generated.notExpressed.map((n) => `   ${n}`),
          ]
        : []),
    ].join('\n');
  }
  return { path: source.path, text: doc.toString({ lineWidth: 0 }) };
}

/** The first line of every generated file: where it comes from and how to regenerate it. */
function headerOf(options: GenerateOptions): string {
  return options.levelsetRepository === false
    ? `Generated by \`levelset build\` from the controller registry (${options.registry ?? 'package.json "levelset.registry"'}). Do not edit: run \`levelset build\`.`
    : 'Generated by cli/build/generate-manifests.ts from the controller registry (examples/registry.ts). Do not edit: run `npm run generate:manifests`.';
}

/**
 * `deploy/registry.gen.json`: the registry as Levelset's Terraform module reads it (its `registry`
 * variable, `jsondecode(file(...))`). Rules in Terraform's snake_case shape.
 */
export interface RegistryJson {
  /** The controllers' names, in registry order. */
  controllers: string[];
  relay_cluster_rules: { api_groups: string[]; resources: string[]; verbs: string[] }[];
  functions_cluster_rules: { api_groups: string[]; resources: string[]; verbs: string[] }[];
  /** The Cloud Audit Logs sink's filter; `""`: no controller declares `auditLog`. */
  audit_log_filter: string;
  /** Every CRD of the project (`apiextensions.k8s.io/v1` objects), sorted by name. */
  crds: Record<string, unknown>[];
  /**
   * The registry's admission policies (`policies`, the kit's `definePolicy`): each
   * ValidatingAdmissionPolicy followed by its ValidatingAdmissionPolicyBinding, in registry order.
   */
  admission_policies: Record<string, unknown>[];
  /** The webhooks' configurations, their URL a placeholder Terraform replaces (functions/kit/webhook-configurations.ts). */
  webhook_configurations: Record<string, unknown>[];
}

/** What {@link generateFiles} writes besides what every project gets. */
export interface GenerateOptions {
  /**
   * Levelset's own repository: also `deploy/in-process/`
   * (the file's docstring). Default `true` (this repository's tests call it without options).
   */
  levelsetRepository?: boolean;
  /** The registry module's path relative to the project's root, named in a project's headers. */
  registry?: string;
  /** The registry's admission policies; default none. */
  policies?: readonly AdmissionPolicy[];
  /** The registry's admission webhooks: `deploy/webhooks.yaml` and `webhook_configurations` (functions/kit/webhook-configurations.ts). */
  webhooks?: readonly AdmissionWebhook[];
}

/** Rules in Terraform's attribute names (kubernetes_cluster_role_v1 `rule`). */
function tfRules(rules: readonly ClusterRule[]): RegistryJson['relay_cluster_rules'] {
  return rules.map((r) => ({
    api_groups: [...r.apiGroups],
    resources: [...r.resources],
    verbs: [...r.verbs],
  }));
}

/**
 * Formats `text` as the project's formatter does (Biome, biome.json), so that `biome check` and the
 * drift check agree on the checked-in bytes.
 * @throws {Error} when Biome is not installed or rejects the input.
 */
function biomeFormat(path: string, text: string): string {
  const bin = join(REPO_ROOT, 'node_modules', '@biomejs', 'biome', 'bin', 'biome');
  const r = spawnSync(process.execPath, [bin, 'format', `--stdin-file-path=${path}`], {
    cwd: REPO_ROOT,
    input: text,
    encoding: 'utf8',
  });
  if (r.status !== 0 || !r.stdout) throw new Error(`biome format ${path} failed: ${r.stderr || r.error}`);
  return r.stdout;
}

function yamlDocs(docs: readonly object[]): string {
  return docs.map((d) => stringify(d, { lineWidth: 0 })).join('---\n');
}

/**
 * Every generated file, keyed by path relative to the repository root.
 * @throws {Error} when a CRD file is invalid (see {@link parseCrd}).
 */
export function generateFiles(
  controllers: readonly Controller[],
  crdSources: readonly CrdSource[],
  options: GenerateOptions = {},
): Map<string, string> {
  const levelsetRepository = options.levelsetRepository ?? true;
  const HEADER = headerOf(options);
  const relay = relayRules(controllers);
  const fns = functionsRules(controllers);
  const files = new Map<string, string>();
  const crds = crdSources.map((source) => {
    const { name } = parseCrd(source);
    const owner = controllers.find(
      (c) => isCustomResource(c.primary) && `${c.primary.plural}.${c.primary.group}` === name,
    );
    const generated = generateCrd(source, owner);
    if (owner?.schemas && !source.shipped) files.set(generated.path, generated.text);
    return parseCrd(generated);
  });

  const registryJson: RegistryJson = {
    controllers: controllers.map((c) => c.name),
    relay_cluster_rules: tfRules(relay),
    functions_cluster_rules: tfRules(fns),
    audit_log_filter: auditLogFilter(controllers),
    crds: crds
      .map((c) => parseDocument(c.source.text).toJS() as Record<string, unknown>)
      .sort((a, b) => crdName(a).localeCompare(crdName(b))),
    admission_policies: (options.policies ?? []).flatMap((p) => [{ ...p.policy }, { ...p.binding }]),
    webhook_configurations: webhookConfigurations(options.webhooks ?? [], {
      levelsetNamespace: NAMES.namespace,
    }),
  };
  if (registryJson.webhook_configurations.length)
    files.set(
      'deploy/webhooks.yaml',
      `# ${HEADER}\n# ${WEBHOOKS_NOTE}\n${yamlDocs(registryJson.webhook_configurations)}`,
    );
  const registryJsonPath = 'deploy/registry.gen.json';
  const registryText = `${JSON.stringify(registryJson, null, 2)}\n`;
  // Biome formats this repository's JSON (its lint checks it); a project's formatting is its own.
  files.set(
    registryJsonPath,
    levelsetRepository ? biomeFormat(registryJsonPath, registryText) : registryText,
  );

  const labels = { 'app.kubernetes.io/part-of': 'levelset' };
  const rbac = [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: {
        name: NAMES.relayClusterRole,
        labels: { ...labels, 'app.kubernetes.io/component': 'relay' },
      },
      rules: relay,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: {
        name: NAMES.relayClusterRole,
        labels: { ...labels, 'app.kubernetes.io/component': 'relay' },
      },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: NAMES.relayClusterRole },
      subjects: [{ kind: 'ServiceAccount', name: NAMES.relayServiceAccount, namespace: NAMES.namespace }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: {
        name: NAMES.functionsClusterRole,
        labels: { ...labels, 'app.kubernetes.io/component': 'functions' },
      },
      rules: fns,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: {
        name: NAMES.functionsClusterRole,
        labels: { ...labels, 'app.kubernetes.io/component': 'functions' },
      },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: NAMES.functionsClusterRole,
      },
      // GKE authenticates a Google access token as the service account's email (kustomization.yaml patches it).
      subjects: [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: NAMES.functionsUserPlaceholder },
      ],
    },
  ];
  files.set('deploy/rbac.yaml', `# ${HEADER}\n${yamlDocs(rbac)}`);

  const inProcess = { ...labels, 'app.kubernetes.io/component': 'in-process' };
  const inProcessRbac = [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: NAMES.inProcessClusterRole, labels: inProcess },
      rules: inProcessRules(controllers),
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: NAMES.inProcessClusterRole, labels: inProcess },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: NAMES.inProcessClusterRole,
      },
      subjects: [{ kind: 'ServiceAccount', name: NAMES.inProcessServiceAccount, namespace: NAMES.namespace }],
    },
  ];
  if (levelsetRepository) {
    files.set('deploy/in-process/rbac.yaml', `# ${HEADER}\n${yamlDocs(inProcessRbac)}`);
    files.set(
      'deploy/in-process/namespace.yaml',
      `# ${HEADER}\n# Copied from deploy/namespace.yaml.\n${readFileSync(join(packageRoot, 'deploy', 'namespace.yaml'), 'utf8')}`,
    );
  }

  const crdFiles: string[] = [];
  for (const crd of crds) {
    const file = `${crd.name}.yaml`;
    crdFiles.push(file);
    files.set(`deploy/crds/${file}`, `# ${HEADER}\n# Copied from ${crd.source.path}.\n${crd.source.text}`);
  }
  crdFiles.sort();
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: crdFiles,
  };
  files.set('deploy/crds/kustomization.yaml', `# ${HEADER}\n${yamlDocs([kustomization])}`);
  if (registryJson.admission_policies.length > 0)
    files.set(
      'deploy/admission-policies.yaml',
      `# ${HEADER}\n# The registry's admission policies (definePolicy): kubectl apply -f, or the Terraform module.\n${yamlDocs(registryJson.admission_policies)}`,
    );
  return files;
}

function crdName(crd: Record<string, unknown>): string {
  return String((crd.metadata as { name?: unknown } | undefined)?.name ?? '');
}

/** Generated files under `deploy/crds/` that exist on disk but are no longer generated. */
function staleCrdFiles(root: string, files: Map<string, string>): string[] {
  const dir = join(root, 'deploy', 'crds');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((f) => `deploy/crds/${f}`)
    .filter((p) => p.endsWith('.yaml') && !files.has(p));
}

/**
 * Compares the generated files with the checked-in ones.
 * @returns paths that differ, are missing, or are stale (generated before, not any more).
 */
export function drift(files: Map<string, string>, root: string = REPO_ROOT): string[] {
  const out: string[] = [];
  for (const [path, content] of files) {
    const abs = join(root, path);
    if (!existsSync(abs) || readFileSync(abs, 'utf8') !== content) out.push(path);
  }
  return [...out, ...staleCrdFiles(root, files)];
}

/** Writes the generated files and removes stale CRD copies. */
export function writeFiles(files: Map<string, string>, root: string = REPO_ROOT): void {
  for (const stale of staleCrdFiles(root, files)) rmSync(join(root, stale));
  for (const [path, content] of files) {
    const abs = join(root, path);
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  }
}

/**
 * The manifests of `project` (default: the current directory's, core/project.ts) from its
 * registry: writes them, or with `check` only compares them with the files on disk.
 * @returns the paths written (relative to the project's root), or with `check` the paths that differ
 * @throws {ProjectError} outside a project or with a bad registry; {@link Error} for an invalid CRD file
 */
export async function generateManifests(
  options: { project?: Project; check?: boolean; warn?: (line: string) => void } = {},
): Promise<string[]> {
  const project = options.project ?? findProject();
  const { controllers, policies, webhooks } = await loadRegistry(project.registry);
  const crdSources = projectCrdSources(project, controllers);
  const files = generateFiles(controllers, crdSources, {
    policies,
    levelsetRepository: isLevelsetRepository(project),
    registry: relative(project.root, project.registry).split('\\').join('/'),
    webhooks,
  });
  for (const m of missingCrds(controllers, crdSources.map(parseCrd)))
    options.warn?.(
      `warning: no crd.yaml under ${relative(project.root, dirname(project.registry)) || '.'} defines ${m}`,
    );
  if (options.check) return drift(files, project.root);
  writeFiles(files, project.root);
  return [...files.keys()];
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { check: { type: 'boolean', default: false } } });
  const warn = (line: string) => process.stderr.write(`${line}\n`);
  const paths = await generateManifests({ check: values.check, warn });
  if (values.check) {
    if (paths.length > 0) {
      process.stderr.write(
        `generated manifests are out of date (run npm run generate:manifests):\n  ${paths.join('\n  ')}\n`,
      );
      process.exitCode = 1;
    }
    return;
  }
  process.stdout.write(`wrote ${paths.join(', ')}\n`);
}

if (import.meta.main) await main();
