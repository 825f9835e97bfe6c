/**
 * Scaffolds a controller on the kit into a project (core/project.ts): the folder
 * `<registry folder>/<name>/` (`api.ts` with the resource type and the zod schema of its spec,
 * `crd.yaml` with the OpenAPI schema, the status subresource and printer columns, `index.ts` with
 * `defineController` and a reconcile to fill in, `example.yaml`), a test `test/<name>.test.ts`, the
 * registry line, and the regenerated RBAC/CRD manifests. The generated controller passes the
 * project's `npm test` as generated. Levelset's own examples are projects too (examples/icecream).
 *
 *   npx levelset new controller icecream --group controller.nicoleh.io --version v1alpha1 --kind Icecream \
 *     --spec deploymentName:string!,replicas:integer --status availableReplicas:integer,nodeNames:string[]
 *
 * Fields are `name:type[!]` separated by commas ({@link FIELDS_GRAMMAR}): a type is a scalar
 * (`string`, `integer`, `number`, `boolean`), an array `T[]` or `[T]`, or an object
 * `{name:type[!],…}`, nested at will (`sources:[{namespace:string!,name:string!}]`); a trailing `!`
 * makes the field required (in the CRD's `required` and the zod schema). The command is `levelset new controller` (cli/commands/new.ts);
 * it calls {@link scaffoldController}.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { stringify } from 'yaml';
import * as z from 'zod';
import { controllerName, dns1123Subdomain } from '../../core/contract/names.ts';
import { findProject } from '../../core/project.ts';
import { generateCrd, generateManifests, REPO_ROOT } from '../build/generate-manifests.ts';
import { type Constraints, type Field, type FieldType, isScalar } from './scaffold-fields.ts';

export { FIELDS_GRAMMAR, type Field, type FieldType, parseFields } from './scaffold-fields.ts';

/** What to scaffold. */
export interface ScaffoldOptions {
  /** kebab-case controller name, e.g. `icecream`. */
  name: string;
  /** API group, e.g. `controller.nicoleh.io`. */
  group: string;
  /** e.g. `v1alpha1`. */
  version: string;
  /** UpperCamelCase kind, e.g. `Icecream`. */
  kind: string;
  /** Default: the lower-cased kind plus `s`. */
  plural?: string;
  /** The CRD's `spec.scope`; default `Namespaced`. A `Cluster` primary's keys are names alone. */
  scope?: 'Namespaced' | 'Cluster';
  spec?: Field[];
  status?: Field[];
  /** The project's root (default: the current directory's project, core/project.ts). */
  root?: string;
  /** Where to write and what to import; default the project's ({@link projectLayout}). */
  layout?: Layout;
  /** Regenerate RBAC/CRD manifests from the registry afterwards (default true). */
  regenerate?: boolean;
}

const optionsSchema = z.object({
  name: controllerName,
  group: dns1123Subdomain.refine((g) => g.includes('.'), 'must be a DNS subdomain with a dot'),
  version: z.string().regex(/^v[0-9]+((alpha|beta)[0-9]+)?$/, 'must look like v1, v1beta1, v1alpha1'),
  kind: z.string().regex(/^[A-Z][A-Za-z0-9]*$/, 'must be UpperCamelCase'),
  plural: z
    .string()
    .regex(/^[a-z][a-z0-9]*$/, 'must be lower-case letters and digits')
    .optional(),
  scope: z.enum(['Namespaced', 'Cluster']).default('Namespaced'),
});

/**
 * A printer column's name from a field name, as kubebuilder projects name them (words separated by
 * spaces, each capitalised: `deploymentName` → `Deployment Name`); kubectl prints it upper-cased.
 */
export const columnName = (field: string): string =>
  field
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(' ')
    .map((w) => (w[0] ?? '').toUpperCase() + w.slice(1))
    .join(' ');

const camel = (kebab: string) => kebab.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** `.min(…).max(…).regex(…)` of a scalar's constraints, as source text. */
function bounds(t: Constraints): string {
  const regex = t.pattern === undefined ? '' : `.regex(/${t.pattern.replace(/(?<!\\)\//g, '\\/')}/)`;
  return `${t.min === undefined ? '' : `.min(${t.min})`}${t.max === undefined ? '' : `.max(${t.max})`}${regex}`;
}

/** The zod expression of `t`, as source text (what api.ts declares; {@link zodSchemaOf} evaluates it). */
function zodOf(t: FieldType): string {
  switch (t.type) {
    case 'string':
      return `z.string()${bounds(t)}`;
    case 'integer':
      return `z.number().int()${bounds(t)}`;
    case 'number':
      return `z.number()${bounds(t)}`;
    case 'boolean':
      return 'z.boolean()';
    case 'enum':
      return `z.enum([${(t.values ?? []).map((v) => `'${v}'`).join(', ')}])`;
    case 'array':
      return `z.array(${zodOf(t.items)})`;
    case 'object':
      return `z.object({ ${zodFields(t.fields)} })`;
  }
}
const zodFields = (fields: readonly Field[]) =>
  fields.map((f) => `${f.name}: ${zodOf(f)}${f.required ? '' : '.optional()'},`).join('\n');

/**
 * The zod schema of `t` itself: what {@link zodOf}'s text evaluates to, by evaluating it (the text
 * written into api.ts is the one source), for the CRD's and the example's.
 */
const zodSchemaOf = (t: FieldType): z.ZodType => new Function('z', `return ${zodOf(t)};`)(z);
const objectSchemaOf = (fields: readonly Field[]): z.ZodObject =>
  new Function('z', `return z.object({ ${zodFields(fields)} });`)(z);

/**
 * An example value of `t` that its schema accepts: the field's `example=`, else one within its bounds
 * (a number: 1 moved into MIN..MAX; a string: `example-<controller>` cut or padded to its length bounds, or
 * a short candidate its pattern matches; an enum: its first value); an object's required fields only;
 * arrays empty.
 * @throws {Error} `spec.<path>: …` when the example given, or every candidate, fails the field's schema.
 */
function exampleOf(t: FieldType, name: string, path: string): unknown {
  if (t.type === 'array') return [];
  if (t.type === 'object')
    return Object.fromEntries(
      t.fields.filter((f) => f.required).map((f) => [f.name, exampleOf(f, name, `${path}.${f.name}`)]),
    );
  const schema = zodSchemaOf(t);
  const candidates: unknown[] = [];
  if (t.example !== undefined)
    candidates.push(t.type === 'integer' || t.type === 'number' ? Number(t.example) : t.example);
  else if (t.type === 'integer' || t.type === 'number')
    candidates.push(Math.min(Math.max(1, t.min ?? 1), t.max ?? Number.POSITIVE_INFINITY));
  else if (t.type === 'boolean') candidates.push(true);
  else if (t.type === 'enum') candidates.push(t.values?.[0]);
  else {
    const fit = (s: string) => s.padEnd(t.min ?? 0, 'x').slice(0, t.max ?? s.length);
    candidates.push(...[`example-${name}`, 'example', 'a', 'A', '0'].map(fit));
  }
  const found = candidates.find((c) => schema.safeParse(c).success);
  if (found === undefined) {
    const why = schema.safeParse(candidates[0]).error?.issues[0]?.message;
    throw new Error(
      `${path}: no example value for its schema (${why}); give one in the field: example=VALUE`,
    );
  }
  return found;
}

type Names = Required<Pick<ScaffoldOptions, 'name' | 'group' | 'version' | 'kind' | 'plural' | 'scope'>>;

/** Where the scaffold writes and what its files import, in a project of `levelset init`'s shape. */
export interface Layout {
  /** The registry module (absolute path); the controller's folder goes beside it. */
  registry: string;
  /** The controller's test file (absolute path). */
  testFile(name: string): string;
  /** The kit's specifier, from a file of the controller's folder. */
  kit: string;
  /** The test file's imports, for `name`: the controller's folder (relative, with its trailing `/`), the kit's lines. */
  testImports(name: string): { folder: string; lines: string };
  /** The command that regenerates the manifests, named in the files' comments. */
  regenerate: string;
  /** The command that scaffolds, named in the files' comments. */
  scaffold: string;
  /** The registry module as the files' comments name it (relative to the root). */
  registryName: string;
}

/** The layout of a project whose registry module is `registry` (its tests in `<root>/test/`). */
export function projectLayout(root: string, registry: string): Layout {
  return {
    registry,
    testFile: (name) => join(root, 'test', `${name}.test.ts`),
    kit: 'levelset/kit',
    testImports: (name) => ({
      folder: `${relative(join(root, 'test'), join(dirname(registry), name))
        .split('\\')
        .join('/')}/`,
      lines: [
        `import { findCondition, parseConditions } from 'levelset/kit';`,
        `import { reconcilerForTest, startTestCluster, type TestCluster, waitFor, writesOf } from 'levelset/kit/testing';`,
      ].join('\n'),
    }),
    regenerate: 'levelset build',
    scaffold: 'levelset new controller',
    registryName: relative(root, registry).split('\\').join('/'),
  };
}

function apiTs(o: Names, spec: Field[], status: Field[], layout: Layout) {
  const id = camel(o.name);
  const fields = zodFields(spec);
  const statusFields = zodFields(status);
  return `/**
 * The ${o.kind} API (\`${o.group}/${o.version}\`): the zod schemas of its spec and status, from which
 * \`${layout.regenerate}\` generates \`crd.yaml\`'s openAPIV3Schema (so the API server refuses an
 * invalid spec with 422; the rules a CRD cannot express are checked by the reconcile, and listed in
 * \`crd.yaml\`). Other controllers may import this module; the rest of the folder is this controller's own.
 */
import * as z from 'zod';
import { customResource } from '${layout.kit}';

/** The primary resource: \`${o.plural}.${o.group}\`, ${o.scope === 'Cluster' ? 'cluster-scoped' : 'namespaced'}. */
export const ${id}Resource = customResource({
  group: '${o.group}',
  version: '${o.version}',
  kind: '${o.kind}',
  plural: '${o.plural}',${o.scope === 'Cluster' ? "\n  scope: 'Cluster'," : ''}
});

/** \`spec\`, as the CRD allows it. */
export const ${id}SpecSchema = z.object({${fields ? `\n${fields}\n` : ''}});
export type ${o.kind}Spec = z.infer<typeof ${id}SpecSchema>;

/** \`status\`, as the reconcile returns it (the kit adds \`observedGeneration\` and \`conditions\`). */
export const ${id}StatusSchema = z.object({${statusFields ? `\n${statusFields}\n` : ''}});
export type ${o.kind}Status = z.infer<typeof ${id}StatusSchema>;
`;
}

function indexTs(o: Required<Pick<ScaffoldOptions, 'name' | 'group' | 'version' | 'kind'>>, layout: Layout) {
  const id = camel(o.name);
  return `/**
 * \`${o.name}\`: the ${o.kind} controller (\`${o.group}/${o.version}\`), on the Levelset controller kit
 * (docs/writing-a-controller.md).
 */
import { defineController } from '${layout.kit}';
import { ${id}Resource, ${id}SpecSchema, ${id}StatusSchema } from './api.ts';

/** The \`${o.name}\` controller module (registered in \`${layout.registryName}\`). */
export const ${id}Controller = defineController({
  name: '${o.name}',
  primary: ${id}Resource,
  spec: ${id}SpecSchema,
  status: ${id}StatusSchema,
  owns: [],
  watches: [],
  reconcile({ object }) {
    // Return the desired children (of the owned types), the status fields and the Ready condition.
    return { ready: { status: true, reason: 'Reconciled', message: \`\${object.metadata.name} reconciled\` } };
  },
});
`;
}

function crdYaml(o: Names, spec: Field[], status: Field[], layout: Layout) {
  const scalar = isScalar;
  const columnType = (t: string) => (t === 'enum' ? 'string' : t);
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${o.plural}.${o.group}`,
      labels: { 'app.kubernetes.io/part-of': 'levelset', 'levelset.dev/controller': o.name },
    },
    spec: {
      group: o.group,
      scope: o.scope,
      names: { kind: o.kind, listKind: `${o.kind}List`, plural: o.plural, singular: o.kind.toLowerCase() },
      versions: [
        {
          name: o.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            ...spec.filter(scalar).map((f) => ({
              name: columnName(f.name),
              type: columnType(f.type),
              jsonPath: `.spec.${f.name}`,
            })),
            ...status.filter(scalar).map((f) => ({
              name: columnName(f.name),
              type: columnType(f.type),
              jsonPath: `.status.${f.name}`,
            })),
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: { openAPIV3Schema: {} },
        },
      ],
    },
  };
  const text = `# The ${o.kind} CRD, generated by \`${layout.scaffold}\`. Read by Terraform and \`npm start\`.\n${stringify(crd)}`;
  // The schema as `npm run generate:manifests` writes it from api.ts (the same zod schemas).
  const schemas = { spec: objectSchemaOf(spec), status: objectSchemaOf(status) };
  return generateCrd({ path: 'crd.yaml', text }, { name: o.name, primary: { version: o.version }, schemas })
    .text;
}

function exampleYaml(
  o: Required<Pick<ScaffoldOptions, 'name' | 'group' | 'version' | 'kind'>>,
  spec: Field[],
) {
  const name = `example-${o.name}`;
  return stringify({
    apiVersion: `${o.group}/${o.version}`,
    kind: o.kind,
    metadata: { name },
    spec: Object.fromEntries(spec.map((f) => [f.name, exampleOf(f, o.name, `spec.${f.name}`)])),
  });
}

function testTs(o: Names, layout: Layout) {
  const imports = layout.testImports(o.name);
  const id = camel(o.name);
  const cluster = o.scope === 'Cluster';
  // A cluster-scoped primary: no namespace to make, its key is the name alone.
  const read = cluster
    ? `getClusterCustomObject({ ...resource, name: 'example-${o.name}' })`
    : `getNamespacedCustomObject({ ...resource, namespace, name: 'example-${o.name}' })`;
  const apply = cluster
    ? `kubectl('apply', '-f', new URL('example.yaml', folder).pathname)`
    : `kubectl('apply', '-n', namespace, '-f', new URL('example.yaml', folder).pathname)`;
  return `/**
 * The ${o.name} controller against an API server (the local one, or TEST_KUBECONFIG's cluster): its
 * CRD and example applied with kubectl, reconciles converge it, the last one writes nothing.
 * Generated by \`${layout.scaffold}\`; extend it as the controller grows.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { ${id}Controller } from '${imports.folder}index.ts';
${imports.lines}

const exec = promisify(execFile);
const folder = new URL('${imports.folder}', import.meta.url);
const resource = { group: '${o.group}', version: '${o.version}', plural: '${o.plural}' };

describe('${o.name} controller', () => {
  let cluster: TestCluster;
  let namespace${cluster ? " = ''" : ': string'};
  // biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
  const get = (): Promise<any> =>
    cluster.kubeConfig
      .makeApiClient(CustomObjectsApi)
      .${read};

  before(async () => {
    cluster = await startTestCluster();
    const kubectl = (...args: string[]) => exec('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args]);
    await kubectl('apply', '-f', new URL('crd.yaml', folder).pathname);
${cluster ? '' : `    namespace = await cluster.createNamespace('${o.name}');\n`}    await waitFor(() => ${apply}.then(() => true), {
      message: 'the CRD to be served and the example applied',
    });
  });
${
  cluster
    ? `  after(async () => {
    // A cluster-scoped object is in no test namespace: delete it (a real cluster keeps it otherwise).
    await cluster?.kubeConfig
      .makeApiClient(CustomObjectsApi)
      .deleteClusterCustomObject({ ...resource, name: 'example-${o.name}' })
      .catch(() => undefined);
    await cluster?.stop();
  });
`
    : `  after(() => cluster?.stop());
`
}
  it('reconciles the example: Ready with observedGeneration; then a no-op writes nothing', async () => {
    const t = reconcilerForTest(${id}Controller, cluster.kubeconfigPath);
    const first = await t.reconcile({ namespace, name: 'example-${o.name}' });
    assert.equal(first.error, undefined, first.error?.message);
    const object = await get();
    const ready = findCondition(parseConditions(object.status?.conditions), 'Ready');
    assert.ok(ready, 'a Ready condition');
    assert.equal(ready.observedGeneration, object.metadata.generation);
    // Reconcile until one writes nothing (other writers, a Deployment controller or kubelet, move what
    // a reconcile reads after the first): a converged object is only read.
    const runs = await t.converge({ namespace, name: 'example-${o.name}' });
    const last = runs.at(-1)?.requests ?? [];
    assert.deepEqual(writesOf(last), [], \`a converged object is only read: \${last.join(', ')}\`);
  });
});
`;
}

/** Adds `import { <id>Controller } …` and its entry to the registry module `path`. */
function addRegistryLine(path: string, o: { name: string; kind: string; group: string; version: string }) {
  const text = readFileSync(path, 'utf8');
  const id = `${camel(o.name)}Controller`;
  if (text.includes(`./${o.name}/index.ts`)) return;
  const importLine = `import { ${id} } from './${o.name}/index.ts';\n`;
  // After the last import (Biome orders them afterwards), also in a registry that lists no controller yet.
  const lastImport = [...text.matchAll(/^import\b[^;]*;\n/gm)].at(-1);
  const end = text.indexOf('];', text.indexOf('export const controllers'));
  if (!lastImport || end < 0) throw new Error(`${path}: cannot find where to add the registry line`);
  const afterImport = lastImport.index + lastImport[0].length;
  const entry = `  ${id}, // ${o.kind} (${o.group}/${o.version})\n`;
  writeFileSync(
    path,
    text.slice(0, afterImport) + importLine + text.slice(afterImport, end) + entry + text.slice(end),
  );
}

/**
 * Creates the controller (see the module comment). Never overwrites: an existing folder is an error.
 * @returns the paths written, relative to the root
 * @throws {Error} for invalid options, an existing controller folder, or (when regenerating the
 *   manifests) a project where the kit cannot be resolved, its dependencies not installed
 */
export async function scaffoldController(options: ScaffoldOptions): Promise<string[]> {
  const valid = optionsSchema.parse(options);
  const root = options.root ?? findProject().root;
  const layout = options.layout ?? projectLayout(root, findProject(root).registry);
  const o = { ...valid, plural: valid.plural ?? `${valid.kind.toLowerCase()}s` };
  const spec = options.spec ?? [];
  const status = options.status ?? [];
  const dir = join(dirname(layout.registry), o.name);
  if (existsSync(dir)) throw new Error(`${relative(root, dir)} already exists`);
  // The new files import the kit, and regenerating the manifests loads the registry, which imports
  // it too: a project whose dependencies are not installed is refused before anything is written.
  if (options.regenerate ?? true)
    try {
      createRequire(layout.registry).resolve(layout.kit);
    } catch {
      throw new Error(
        `${layout.kit} is not installed in ${root}: run \`npm install\` there first (nothing was written)`,
      );
    }
  const testFile = layout.testFile(o.name);
  // Every text first (an example no schema accepts throws here), then the files: a refusal writes nothing.
  const files: [string, string][] = [
    [join(dir, 'api.ts'), apiTs(o, spec, status, layout)],
    [join(dir, 'index.ts'), indexTs(o, layout)],
    [join(dir, 'crd.yaml'), crdYaml(o, spec, status, layout)],
    [join(dir, 'example.yaml'), exampleYaml(o, spec)],
    [testFile, testTs(o, layout)],
  ];
  mkdirSync(dir, { recursive: true });
  mkdirSync(dirname(testFile), { recursive: true });
  for (const [path, text] of files) writeFileSync(path, text);
  addRegistryLine(layout.registry, o);
  const written = [
    ...files.map(([p]) => relative(root, p)),
    relative(root, layout.registry).split('\\').join('/'),
  ];
  // The project's formatter and import order (biome.json), so that its lint passes as generated:
  // this repository's Biome, or the project's own when it has one.
  const biome = [root, REPO_ROOT]
    .map((r) => join(r, 'node_modules', '@biomejs', 'biome', 'bin', 'biome'))
    .find((b) => existsSync(b));
  const format = !biome
    ? { status: 0, stderr: '', stdout: '' }
    : spawnSync(process.execPath, [biome, 'check', '--write', ...written.filter((p) => p.endsWith('.ts'))], {
        cwd: root,
        encoding: 'utf8',
      });
  if (format.status !== 0) throw new Error(`biome check --write failed: ${format.stderr || format.stdout}`);
  if (options.regenerate ?? true) written.push(...(await generateManifests({ project: findProject(root) })));
  return written;
}
