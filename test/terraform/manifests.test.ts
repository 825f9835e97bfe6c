/**
 * The manifests generated from the controller registry (cli/build/generate-manifests.ts): the rules
 * each identity gets, that the checked-in files are what the generator writes now (CI catches
 * drift), that deploy/ builds with kustomize, and the functions' source packaging.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import {
  type CrdSource,
  drift,
  functionsRules,
  generateFiles,
  generateManifests,
  inProcessRules,
  mergeGrants,
  missingCrds,
  NAMES,
  parseCrd,
  projectCrdSources,
  REPO_ROOT,
  relayRules,
} from '../../cli/build/generate-manifests.ts';
import { MAIN, packageFunctions, WARM_COMPILE_CACHE } from '../../cli/build/package-functions.ts';
import { IN_PROCESS_MAIN } from '../../cli/build/package-relay.ts';
import type { Controller, ResourceType } from '../../core/contract/controller.ts';
import { findProject } from '../../core/project.ts';
import { controllers, policies, webhooks } from '../../examples/registry.ts';
import { deployments, namespaces, secrets } from '../../functions/kit/resources.ts';

/** This repository's CRD files, as `npm run generate:manifests` finds them (the examples' and the shipped controllers'). */
const repositoryCrds = () => projectCrdSources(findProject(REPO_ROOT), controllers);

const foos: ResourceType = {
  group: 'samplecontroller.k8s.io',
  version: 'v1alpha1',
  plural: 'foos',
  kind: 'Foo',
  namespaced: true,
};

function controller(
  c: Pick<Controller, 'name' | 'primary' | 'rbac'> & { watches: ResourceType[] },
): Controller {
  return {
    ...c,
    watches: c.watches.map((resource) => ({ resource, map: () => [] })),
    reconcile: async () => undefined,
  };
}

const replicator = controller({
  name: 'replicator',
  primary: secrets,
  watches: [secrets, namespaces],
  rbac: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'update', 'delete'] }],
});
const foo = controller({
  name: 'foo',
  primary: foos,
  watches: [foos, deployments],
  rbac: [
    { apiGroups: ['samplecontroller.k8s.io'], resources: ['foos'], verbs: ['get'] },
    { apiGroups: ['samplecontroller.k8s.io'], resources: ['foos/status'], verbs: ['patch'] },
    { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'create', 'patch'] },
  ],
});

function crdText(name: string, group: string, plural: string, extra = ''): string {
  return [
    'apiVersion: apiextensions.k8s.io/v1',
    'kind: CustomResourceDefinition',
    `metadata: {name: ${name}}`,
    `spec: {group: ${group}, names: {plural: ${plural}, kind: X}, scope: Namespaced, versions: []}`,
    extra,
  ].join('\n');
}

describe('relayRules', () => {
  test('get, list, watch on every watched resource, merged per group', () => {
    assert.deepEqual(relayRules([replicator]), [
      { apiGroups: [''], resources: ['namespaces', 'secrets'], verbs: ['get', 'list', 'watch'] },
    ]);
  });

  test('adds customresourcedefinitions when a primary is a custom resource', () => {
    assert.deepEqual(relayRules([replicator, foo]), [
      { apiGroups: [''], resources: ['namespaces', 'secrets'], verbs: ['get', 'list', 'watch'] },
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        verbs: ['get', 'list', 'watch'],
      },
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['samplecontroller.k8s.io'], resources: ['foos'], verbs: ['get', 'list', 'watch'] },
    ]);
  });

  test('an empty registry grants nothing', () => {
    assert.deepEqual(relayRules([]), []);
    assert.deepEqual(functionsRules([]), []);
  });
});

describe('functionsRules', () => {
  test("is the union of the controllers' rbac, Events create/get/patch (the recorder), and list for resync", () => {
    assert.deepEqual(functionsRules([replicator, foo]), [
      { apiGroups: [''], resources: ['events'], verbs: ['get', 'create', 'patch'] },
      { apiGroups: [''], resources: ['namespaces'], verbs: ['list'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'create', 'patch'] },
      { apiGroups: ['samplecontroller.k8s.io'], resources: ['foos'], verbs: ['get', 'list'] },
      { apiGroups: ['samplecontroller.k8s.io'], resources: ['foos/status'], verbs: ['patch'] },
    ]);
  });

  test('mergeGrants unions verbs per resource and groups resources with equal verbs', () => {
    assert.deepEqual(
      mergeGrants([
        { group: 'g', resource: 'b', verbs: ['list'] },
        { group: 'g', resource: 'a', verbs: ['list', 'get'] },
        { group: 'g', resource: 'b', verbs: ['get'] },
      ]),
      [{ apiGroups: ['g'], resources: ['a', 'b'], verbs: ['get', 'list'] }],
    );
  });
});

describe('CRDs', () => {
  test('parseCrd accepts one apiextensions.k8s.io/v1 CRD named <plural>.<group>', () => {
    const crd = parseCrd({ path: 'x/crd.yaml', text: crdText('foos.example.com', 'example.com', 'foos') });
    assert.equal(crd.name, 'foos.example.com');
  });

  test('parseCrd rejects what Terraform could not apply', () => {
    const cases: Array<[string, RegExp]> = [
      [
        `${crdText('foos.example.com', 'example.com', 'foos')}\n---\n${crdText('bars.example.com', 'example.com', 'bars')}`,
        /exactly one/,
      ],
      [crdText('foo.example.com', 'example.com', 'foos'), /metadata.name/],
      [crdText('foos.example.com', 'example.com', 'foos', 'status: {}'), /status/],
      ['apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}', /CustomResourceDefinition/],
    ];
    for (const [text, error] of cases) {
      assert.throws(() => parseCrd({ path: 'x/crd.yaml', text } satisfies CrdSource), error);
    }
  });

  test("every controller folder's crd.yaml is valid and every custom-resource primary has one", () => {
    const crds = repositoryCrds().map(parseCrd);
    assert.deepEqual(missingCrds(controllers, crds), []);
    assert.deepEqual(missingCrds([foo], []), ['foo: foos.samplecontroller.k8s.io']);
  });
});

describe('checked-in generated files', () => {
  test('equal what cli/build/generate-manifests.ts generates from the registry now', () => {
    const files = generateFiles(controllers, repositoryCrds(), { policies, webhooks });
    assert.deepEqual(drift(files), [], 'run: npm run generate:manifests');
  });

  test("the registry's admission policies: each policy and its binding, in deploy/admission-policies.yaml and registry.gen.json", () => {
    const files = generateFiles(controllers, repositoryCrds(), { policies });
    const docs = parseAllDocuments(files.get('deploy/admission-policies.yaml') ?? '').map((d) => d.toJS());
    const expected = policies.flatMap((p) => [p.policy, p.binding]);
    assert.deepEqual(docs, expected);
    assert.deepEqual(JSON.parse(files.get('deploy/registry.gen.json') ?? '{}').admission_policies, expected);
    const none = generateFiles(controllers, repositoryCrds());
    assert.equal(none.has('deploy/admission-policies.yaml'), false, 'no policies, no file');
    assert.deepEqual(JSON.parse(none.get('deploy/registry.gen.json') ?? '{}').admission_policies, []);
  });

  test("a CRD's openAPIV3Schema is the controller's zod schemas: a hand edit is drift, refinements are listed", () => {
    const source = repositoryCrds().find((c) => c.path === 'functions/controllers/topic/crd.yaml');
    assert.ok(source);
    const edited = { ...source, text: source.text.replace('minimum: 10', 'minimum: 1') };
    assert.notEqual(edited.text, source.text);
    const files = generateFiles(
      controllers,
      repositoryCrds().map((c) => (c.path === source.path ? edited : c)),
    );
    const root = mkdtempSync(join(tmpdir(), 'levelset-crd-drift-'));
    try {
      for (const [path, content] of files) {
        mkdirSync(join(root, path, '..'), { recursive: true });
        writeFileSync(join(root, path), content);
      }
      writeFileSync(join(root, source.path), edited.text);
      assert.deepEqual(drift(files, root), [source.path]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    const crd = files.get(source.path) ?? '';
    assert.match(crd, /# +\.spec\.topicId: must not start with "goog"\n/);
    const schema = parseAllDocuments(crd)[0]?.toJS().spec.versions[0].schema.openAPIV3Schema;
    assert.deepEqual(schema.properties.spec.properties.subscriptions.items.properties.ackDeadlineSeconds, {
      description: 'Seconds Pub/Sub waits for an acknowledgement, 10 to 600 (default 10).',
      type: 'integer',
      minimum: 10,
      maximum: 600,
    });
  });

  test('deploy/rbac.yaml: the relay only reads; the functions get the registry rules', () => {
    const docs = parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy', 'rbac.yaml'), 'utf8')).map((d) =>
      d.toJS(),
    );
    const relay = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === NAMES.relayClusterRole);
    for (const rule of relay.rules)
      for (const v of rule.verbs) assert.ok(['get', 'list', 'watch'].includes(v), v);
    assert.deepEqual(relay.rules, relayRules(controllers));
    const fns = docs.find((d) => d.kind === 'ClusterRole' && d.metadata.name === NAMES.functionsClusterRole);
    assert.deepEqual(fns.rules, functionsRules(controllers));
  });

  test('kubectl kustomize deploy/ builds the namespace, CRDs, RBAC and a hardened relay', (t) => {
    const r = spawnSync('kubectl', ['kustomize', join(REPO_ROOT, 'deploy')], { encoding: 'utf8' });
    if (r.error) {
      t.skip('kubectl not installed');
      return;
    }
    assert.equal(r.status, 0, r.stderr);
    const docs = parseAllDocuments(r.stdout).map((d) => d.toJS());
    const kinds = (k: string) => docs.filter((d) => d.kind === k);
    assert.equal(kinds('CustomResourceDefinition').length, repositoryCrds().length);
    assert.equal(kinds('Namespace')[0]?.metadata.name, NAMES.namespace);
    const dep = kinds('Deployment')[0];
    assert.equal(dep.metadata.namespace, NAMES.namespace);
    const pod = dep.spec.template.spec;
    assert.equal(pod.serviceAccountName, NAMES.relayServiceAccount);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    const c = pod.containers[0];
    assert.equal(c.livenessProbe.httpGet.path, '/healthz');
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.notEqual(c.image, 'levelset-relay', 'the images: entry rewrote the image');
    const cm = kinds('ConfigMap')[0];
    assert.equal(c.envFrom[0].configMapRef.name, cm.metadata.name, 'env from the generated ConfigMap');
    const binding = kinds('ClusterRoleBinding').find((b) => b.metadata.name === NAMES.functionsClusterRole);
    assert.match(binding.subjects[0].name, /@.+\.iam\.gserviceaccount\.com$/);
  });

  test('kubectl kustomize deploy/in-process builds one in-process Deployment whose role is the relay + functions union', (t) => {
    const r = spawnSync('kubectl', ['kustomize', join(REPO_ROOT, 'deploy', 'in-process')], {
      encoding: 'utf8',
    });
    if (r.error) {
      t.skip('kubectl not installed');
      return;
    }
    assert.equal(r.status, 0, r.stderr);
    const docs = parseAllDocuments(r.stdout).map((d) => d.toJS());
    const kinds = (k: string) => docs.filter((d) => d.kind === k);
    assert.equal(kinds('CustomResourceDefinition').length, repositoryCrds().length);
    assert.equal(kinds('Namespace')[0]?.metadata.name, NAMES.namespace);
    assert.deepEqual(
      kinds('Deployment').map((d) => d.metadata.name),
      ['levelset-in-process'],
      'no relay, nothing serverless',
    );
    const pod = kinds('Deployment')[0].spec.template.spec;
    assert.equal(pod.serviceAccountName, NAMES.inProcessServiceAccount);
    const c = pod.containers[0];
    // The in-process mode's bundle in the relay's image (relay/Dockerfile, cli/build/package-relay.ts).
    assert.deepEqual(c.args, [`dist/${IN_PROCESS_MAIN}`]);
    assert.equal(c.livenessProbe.httpGet.path, '/healthz');
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    const role = kinds('ClusterRole').find((d) => d.metadata.name === NAMES.inProcessClusterRole);
    assert.deepEqual(role.rules, inProcessRules(controllers));
    const binding = kinds('ClusterRoleBinding').find((b) => b.metadata.name === NAMES.inProcessClusterRole);
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: NAMES.inProcessServiceAccount, namespace: NAMES.namespace },
    ]);
    // Every (group, resource, verb) either identity has, the in-process role has, and nothing more.
    const grants = (rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[]) =>
      new Set(
        rules.flatMap((x) =>
          x.apiGroups.flatMap((g) => x.resources.flatMap((res) => x.verbs.map((v) => `${g}/${res}/${v}`))),
        ),
      );
    const union = new Set([...grants(relayRules(controllers)), ...grants(functionsRules(controllers))]);
    assert.deepEqual([...grants(role.rules)].sort(), [...union].sort());
  });
});

const repoRoot = join(import.meta.dirname, '..', '..');

describe("a project's manifests", () => {
  test("Levelset's own controllers in a project's registry bring their CRDs from the package, never written back", async () => {
    const root = mkdtempSync(join(tmpdir(), 'levelset-project-manifests-'));
    try {
      const registry = join(root, 'controllers', 'index.ts');
      mkdirSync(join(root, 'controllers'));
      const shipped = new URL('../../functions/controllers/shipped.ts', import.meta.url).href;
      writeFileSync(
        registry,
        `import { topicController } from '${shipped}';\nexport const controllers = [topicController];\n`,
      );
      const packageJson = { name: 'my-controllers', levelset: { registry: 'controllers/index.ts' } };
      writeFileSync(join(root, 'package.json'), JSON.stringify(packageJson));
      const written = await generateManifests({ project: { root, registry, packageJson } });
      assert.ok(written.includes('deploy/crds/topics.pubsub.levelset.dev.yaml'), written.join(', '));
      assert.ok(
        !written.some((p) => p.includes('functions/controllers')),
        'nothing written into the package',
      );
      const input = JSON.parse(readFileSync(join(root, 'deploy', 'registry.gen.json'), 'utf8'));
      assert.deepEqual(
        input.crds.map((c: { metadata: { name: string } }) => c.metadata.name),
        ['topics.pubsub.levelset.dev'],
        "only the registered controller's CRD (not the Subscription's)",
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('packageFunctions', () => {
  test("bundles the runtime with the project's registry, with source maps, the package with the bundle as main, and the lockfile", async () => {
    const root = mkdtempSync(join(tmpdir(), 'levelset-pkg-'));
    try {
      const pkg = {
        name: 'x',
        type: 'module',
        main: 'functions/index.ts',
        scripts: { build: 'tsc' },
        dependencies: { a: '1.0.0' },
        devDependencies: { b: '1.0.0' },
      };
      writeFileSync(join(root, 'package.json'), JSON.stringify(pkg));
      writeFileSync(join(root, 'package-lock.json'), '{"lockfileVersion":3}');
      mkdirSync(join(root, 'functions', 'controllers', 'foo'), { recursive: true });
      const registry = join(root, 'functions', 'controllers', 'index.ts');
      writeFileSync(registry, "import { foo } from './foo/index.ts';\nexport const controllers = [foo];\n");
      writeFileSync(
        join(root, 'functions', 'controllers', 'foo', 'index.ts'),
        "export const foo = { name: 'foo-controller' };\n",
      );
      const out = join(root, 'out');

      // A runtime of its own: the packaging is tested, not the bundling of Levelset's runtime.
      const runtime = join(root, 'runtime.ts');
      writeFileSync(runtime, 'export const registerFunctions = (c: unknown[]): number => c.length;\n');
      const files = await packageFunctions({ root, out, registry, runtime });

      for (const file of [
        WARM_COMPILE_CACHE,
        'dist/index.mjs',
        'dist/index.mjs.map',
        'package-lock.json',
        'package.json',
      ])
        assert.ok(files.includes(file), `${file} staged`);
      assert.deepEqual(
        files.filter((f) => !f.startsWith('dist/')),
        ['package-lock.json', 'package.json'],
      );
      assert.equal(MAIN, 'dist/index.mjs');
      const bundle = readFileSync(join(out, MAIN), 'utf8');
      assert.match(bundle, /foo-controller/, 'the registry and its controllers are inside the bundle');
      assert.match(bundle, /\.length/, 'so is the runtime, called with them');
      assert.match(bundle, /sourceMappingURL=index\.mjs\.map/);
      const map = JSON.parse(readFileSync(join(out, 'dist', 'index.mjs.map'), 'utf8'));
      assert.ok(
        map.sources.some((s: string) => s.endsWith('functions/controllers/foo/index.ts')),
        'stack traces name the TypeScript source',
      );
      const staged = JSON.parse(readFileSync(join(out, 'package.json'), 'utf8'));
      assert.equal(staged.main, MAIN);
      assert.deepEqual(
        staged.scripts,
        { 'gcp-build': `node ${WARM_COMPILE_CACHE}` },
        'only the compile cache to fill',
      );
      assert.deepEqual(staged.dependencies, pkg.dependencies);
      assert.deepEqual(
        staged.devDependencies,
        pkg.devDependencies,
        'npm ci needs package.json to match the lockfile',
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("the archive's package.json and lockfile agree: npm would write the same lockfile", async () => {
    // The project's package.json names a workspace (apiserver) that the archive does not hold;
    // the buildpack's `npm ci` installs from the staged lockfile, so it must be the one npm writes
    // for the staged package.json. `npm install --package-lock-only` rewrites a lockfile that does
    // not match (a workspace's entries, packages nothing needs) and leaves a matching one as it is.
    const root = mkdtempSync(join(tmpdir(), 'levelset-pkg-'));
    try {
      for (const file of ['package.json', 'package-lock.json'])
        writeFileSync(join(root, file), readFileSync(join(repoRoot, file)));
      writeFileSync(join(root, 'registry.ts'), 'export const controllers = [];\n');
      writeFileSync(join(root, 'runtime.ts'), 'export const registerFunctions = (): void => {};\n');
      const out = join(root, 'out');
      await packageFunctions({
        root,
        out,
        registry: join(root, 'registry.ts'),
        runtime: join(root, 'runtime.ts'),
      });

      const staged = JSON.parse(readFileSync(join(out, 'package.json'), 'utf8'));
      assert.equal(staged.workspaces, undefined);
      const lock = readFileSync(join(out, 'package-lock.json'), 'utf8');
      assert.doesNotMatch(lock, /local\/apiserver|"link": true/);
      // npm as `npm test` or `npx` ran it (npm_execpath), else the one on PATH.
      const execpath = process.env.npm_execpath;
      const [command, ...prefix] = execpath ? [process.execPath, execpath] : ['npm'];
      const r = spawnSync(
        command as string,
        [
          ...prefix,
          'install',
          '--package-lock-only',
          '--offline',
          '--ignore-scripts',
          '--no-audit',
          '--no-fund',
          '--cache',
          join(root, 'npm-cache'),
        ],
        { cwd: out, encoding: 'utf8' },
      );
      assert.equal(r.status, 0, r.stderr);
      assert.equal(readFileSync(join(out, 'package-lock.json'), 'utf8'), lock);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("fails with esbuild's message when an import does not resolve", async () => {
    const root = mkdtempSync(join(tmpdir(), 'levelset-pkg-'));
    try {
      writeFileSync(join(root, 'registry.ts'), "import './missing.ts';\nexport const controllers = [];\n");
      await assert.rejects(
        packageFunctions({
          root,
          out: join(root, 'out'),
          registry: join(root, 'registry.ts'),
          runtime: join(root, 'registry.ts'),
        }),
        /missing\.ts/,
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
