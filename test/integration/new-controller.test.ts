/**
 * The scaffold (`levelset new controller`, cli/scaffold/new-controller.ts) on a copy of the Icecream
 * example project (examples/icecream, of `levelset init`'s shape) in a temporary directory (nothing
 * is written here): the generated controller typechecks, passes Biome and its own generated test,
 * is registered, and its CRD and RBAC are generated; the Icecream and ConfigMapBundle examples are
 * exactly the scaffold's output plus their reconcile (index.ts); Levelset's repository root refuses.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { columnName, parseFields, scaffoldController } from '../../cli/scaffold/new-controller.ts';

const exec = promisify(execFile);
const REPO = new URL('../../', import.meta.url).pathname;
const temps: string[] = [];

/** The example project the scaffold is compared with and written into (copies of it). */
const EXAMPLE = join(REPO, 'examples', 'icecream');

/**
 * A temporary copy of `parts` of the Icecream example project, with the repository's node_modules
 * (where `levelset` is this checkout, as npm links the workspace's `file:../..`).
 */
function copyOfExample(parts: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'levelset-scaffold-'));
  temps.push(dir);
  for (const part of parts) cpSync(join(EXAMPLE, part), join(dir, part), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** The example project's files a scaffold and its test need. */
const PROJECT = ['package.json', 'tsconfig.json', 'biome.json', 'controllers'];

after(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

/** `levelset new controller <args> --root=<root>`, the real CLI in a process of its own. */
const levelset = (root: string, ...args: string[]) =>
  exec(process.execPath, [join(REPO, 'cli/levelset.ts'), 'new', 'controller', ...args, `--root=${root}`]);

/** The cluster-scoped scaffold's TypeScript files. */
const CLUSTER_FILES = [
  'controllers/cluster-probe/api.ts',
  'controllers/cluster-probe/index.ts',
  'test/cluster-probe.test.ts',
];

describe('scaffold: levelset new controller', () => {
  let root: string;
  let written: string[];
  let clusterScaffold: { stdout: string };

  before(async () => {
    root = copyOfExample(PROJECT);
    // The cluster-scoped scaffold, from the command line, into the same project (first, so that the
    // registry's last line is the probe's below): one Biome run, one typecheck and one run of the
    // generated tests cover both scaffolds.
    clusterScaffold = await levelset(
      root,
      'cluster-probe',
      '--group=probe.levelset.dev',
      '--kind=ClusterProbe',
      '--scope=Cluster',
      '--spec=size:integer!',
    );
    written = await scaffoldController({
      root,
      name: 'scaffold-probe',
      group: 'probe.levelset.dev',
      version: 'v1beta1',
      kind: 'ScaffoldProbe',
      spec: parseFields(
        'size:integer(5..10)!,label:string(3..20,pattern=^[a-z][a-z0-9-]*$),tier:enum(gold|silver)!,tags:string[],deploymentName:string,sources:[{namespace:string!,name:string!}],limits:{cpu:string,sizes:integer[]}',
      ),
      status: parseFields('availableReplicas:integer'),
    });
  });

  it('names the printer columns as kubebuilder projects do (words, not DEPLOYMENTNAME)', () => {
    const crd = parse(readFileSync(join(root, 'controllers/scaffold-probe/crd.yaml'), 'utf8')) as {
      spec: { versions: { additionalPrinterColumns: { name: string; jsonPath: string }[] }[] };
    };
    const columns = crd.spec.versions[0]?.additionalPrinterColumns ?? [];
    assert.deepEqual(
      columns.map((c) => [c.name, c.jsonPath]),
      [
        ['Size', '.spec.size'],
        ['Label', '.spec.label'],
        ['Tier', '.spec.tier'],
        ['Deployment Name', '.spec.deploymentName'],
        ['Available Replicas', '.status.availableReplicas'],
        ['Ready', '.status.conditions[?(@.type=="Ready")].status'],
        ['Age', '.metadata.creationTimestamp'],
      ],
    );
    assert.equal(columnName('observedGeneration'), 'Observed Generation');
    assert.equal(columnName('podCIDR'), 'Pod CIDR');
    assert.equal(columnName('replicas'), 'Replicas');
  });

  it('writes the folder, the test, the registry line and the manifests', () => {
    for (const path of [
      'controllers/scaffold-probe/api.ts',
      'controllers/scaffold-probe/index.ts',
      'controllers/scaffold-probe/crd.yaml',
      'controllers/scaffold-probe/example.yaml',
      'test/scaffold-probe.test.ts',
      'deploy/crds/scaffoldprobes.probe.levelset.dev.yaml',
    ])
      assert.ok(written.includes(path) && existsSync(join(root, path)), path);
    const registry = readFileSync(join(root, 'controllers/index.ts'), 'utf8');
    assert.match(registry, /import \{ scaffoldProbeController \} from '\.\/scaffold-probe\/index\.ts';/);
    assert.match(
      registry,
      /\n {2}scaffoldProbeController, \/\/ ScaffoldProbe \(probe\.levelset\.dev\/v1beta1\)\n\];/,
    );
    const rbac = readFileSync(join(root, 'deploy/rbac.yaml'), 'utf8');
    assert.match(rbac, /scaffoldprobes\/status/, 'the functions may write its status');
  });

  it('writes arrays and nested objects into the CRD schema and the zod schema', async () => {
    const crd = parse(readFileSync(join(root, 'controllers/scaffold-probe/crd.yaml'), 'utf8'));
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
    assert.deepEqual(spec.required, ['size', 'tier']);
    assert.deepEqual(spec.properties.size, { type: 'integer', minimum: 5, maximum: 10 });
    assert.deepEqual(spec.properties.label, {
      type: 'string',
      minLength: 3,
      maxLength: 20,
      pattern: '^[a-z][a-z0-9-]*$',
    });
    assert.deepEqual(spec.properties.tier, { type: 'string', enum: ['gold', 'silver'] });
    assert.deepEqual(spec.properties.sources, {
      type: 'array',
      items: {
        type: 'object',
        properties: { namespace: { type: 'string' }, name: { type: 'string' } },
        required: ['namespace', 'name'],
      },
    });
    assert.deepEqual(spec.properties.limits, {
      type: 'object',
      properties: { cpu: { type: 'string' }, sizes: { type: 'array', items: { type: 'integer' } } },
    });
    const columns = crd.spec.versions[0].additionalPrinterColumns.map((c: { name: string }) => c.name);
    assert.deepEqual(
      columns,
      ['Size', 'Label', 'Tier', 'Deployment Name', 'Available Replicas', 'Ready', 'Age'],
      'printer columns for scalars only',
    );
    const api = await import(join(root, 'controllers/scaffold-probe/api.ts'));
    const schema = api.scaffoldProbeSpecSchema;
    assert.ok(
      schema.safeParse({
        size: 5,
        tier: 'gold',
        sources: [{ namespace: 'a', name: 'b' }],
        limits: { sizes: [1] },
      }).success,
    );
    assert.ok(
      !schema.safeParse({ size: 5, tier: 'gold', sources: [{ namespace: 'a' }] }).success,
      'name is required',
    );
    assert.ok(!schema.safeParse({ size: 5, tier: 'gold', limits: { sizes: ['x'] } }).success, 'integers');
    assert.ok(!schema.safeParse({ size: 11, tier: 'gold' }).success, 'at most 10');
    assert.ok(!schema.safeParse({ size: 5, tier: 'gold', label: 'Bad' }).success, 'the pattern');
    assert.ok(!schema.safeParse({ size: 5, tier: 'bronze' }).success, 'the enum');
  });

  it("writes an example.yaml its own schema accepts (values from the fields' bounds)", async () => {
    const example = parse(readFileSync(join(root, 'controllers/scaffold-probe/example.yaml'), 'utf8'));
    assert.deepEqual(example.spec, {
      size: 5,
      label: 'example-scaffold-pro',
      tier: 'gold',
      tags: [],
      deploymentName: 'example-scaffold-probe',
      sources: [],
      limits: {},
    });
    const api = await import(join(root, 'controllers/scaffold-probe/api.ts'));
    assert.ok(api.scaffoldProbeSpecSchema.safeParse(example.spec).success);
  });

  it('levelset new controller --help prints the field grammar', async () => {
    const { stdout } = await exec(process.execPath, [
      join(REPO, 'cli/levelset.ts'),
      'new',
      'controller',
      '--help',
    ]);
    assert.match(
      stdout.replace(/\s+/g, ' '),
      /T\[\] or \[T\] \(an array of T\), or \{name:type\[!\],…\} \(an object\)/,
    );
  });

  it('passes Biome and the typechecker as generated (both scaffolds)', async () => {
    const files = [...written.filter((p) => p.endsWith('.ts')), ...CLUSTER_FILES];
    await exec(process.execPath, [join(REPO, 'node_modules/@biomejs/biome/bin/biome'), 'check', ...files], {
      cwd: root,
    });
    writeFileSync(
      join(root, 'tsconfig.scaffold.json'),
      JSON.stringify({ extends: './tsconfig.json', include: files }),
    );
    await exec(
      process.execPath,
      [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.scaffold.json'],
      {
        cwd: root,
      },
    );
  });

  it('passes its own generated test against an API server (both scaffolds: a cluster-scoped key is a name alone)', async () => {
    // Without NODE_TEST_CONTEXT, the child runs as a test runner of its own (not a subtest of this one).
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const { stdout } = await exec(
      process.execPath,
      ['--test', '--test-reporter=tap', 'test/scaffold-probe.test.ts', 'test/cluster-probe.test.ts'],
      { cwd: root, env },
    );
    assert.match(stdout, /# pass 2/);
    assert.match(stdout, /# fail 0/);
  });

  it('--scope Cluster writes a cluster-scoped CRD and primary', () => {
    const folder = join(root, 'controllers/cluster-probe');
    assert.match(readFileSync(join(folder, 'crd.yaml'), 'utf8'), /\n {2}scope: Cluster\n/);
    assert.match(readFileSync(join(folder, 'api.ts'), 'utf8'), /scope: 'Cluster',/);
  });

  it('never overwrites an existing controller, and rejects bad names and fields', async () => {
    await assert.rejects(
      scaffoldController({
        root,
        name: 'scaffold-probe',
        group: 'probe.levelset.dev',
        version: 'v1',
        kind: 'X',
      }),
      /already exists/,
    );
    await assert.rejects(
      scaffoldController({ root, name: 'Bad_Name', group: 'probe.levelset.dev', version: 'v1', kind: 'X' }),
      /kebab-case/,
    );
    assert.throws(
      () => parseFields('size:int'),
      /^Error: bad field at column 6 of "size:int": expected a type/,
    );
    assert.throws(() => parseFields('a:{b:string'), /column 12 .*"," or "\}" closing the object/);
    assert.throws(() => parseFields('a:[string!]'), /"\]" closing the array/);
    assert.throws(() => parseFields('size:integer(10..1)'), /MIN no greater than MAX \(10\.\.1\)/);
    assert.throws(() => parseFields('on:boolean(1..2)'), /no "\(…\)" after boolean/);
    assert.throws(() => parseFields('tier:enum'), /the values of the enum/);
    assert.throws(() => parseFields('id:string(pattern=^(?!goog))'), /kube-apiserver \(RE2\)/);
    // A code no candidate matches: the scaffold asks for example=, and writes nothing.
    await assert.rejects(
      scaffoldController({
        root,
        name: 'no-example',
        group: 'probe.levelset.dev',
        version: 'v1',
        kind: 'NoExample',
        spec: parseFields('code:string(pattern=^[0-9]{5}$)!'),
        regenerate: false,
      }),
      /spec\.code: no example value .*example=VALUE/,
    );
    assert.ok(!existsSync(join(root, 'controllers/no-example')));
  });

  it('parses bounds, patterns, enums and examples', () => {
    assert.deepEqual(
      parseFields('size:integer!(1..10),ratio:number(..0.5),name:string(pattern=^[a-z]+(-[a-z]+)*$)'),
      [
        { type: 'integer', min: 1, max: 10, name: 'size', required: true },
        { type: 'number', max: 0.5, name: 'ratio', required: false },
        { type: 'string', pattern: '^[a-z]+(-[a-z]+)*$', name: 'name', required: false },
      ],
    );
    assert.deepEqual(parseFields('tier:enum(gold|silver,example=silver)!,code:string(5..5,example=12345)'), [
      { type: 'enum', values: ['gold', 'silver'], example: 'silver', name: 'tier', required: true },
      { type: 'string', min: 5, max: 5, example: '12345', name: 'code', required: false },
    ]);
  });

  it('levelset new controller: the same scaffold from the command line; a refusal is one line, exit 2', async () => {
    // The cluster-scoped scaffold of `before`, written by the CLI.
    assert.match(clusterScaffold.stdout, /controllers\/cluster-probe\/index\.ts/);
    assert.ok(existsSync(join(root, 'controllers/cluster-probe/crd.yaml')));
    assert.match(
      readFileSync(join(root, 'controllers/index.ts'), 'utf8'),
      /from '\.\/cluster-probe\/index\.ts'/,
    );
    await assert.rejects(
      levelset(root, 'cluster-probe', '--group=probe.levelset.dev', '--kind=ClusterProbe'),
      (err: Error) => {
        const failure = err as Error & { code: number; stderr: string };
        assert.equal(failure.code, 2);
        assert.equal(
          failure.stderr,
          'levelset: cannot scaffold cluster-probe: controllers/cluster-probe already exists\n',
        );
        return true;
      },
    );
  });

  it('refuses a project whose dependencies are not installed: one line, nothing written', async () => {
    const bare = copyOfExample(PROJECT);
    rmSync(join(bare, 'node_modules'));
    const registry = readFileSync(join(bare, 'controllers', 'index.ts'), 'utf8');
    await assert.rejects(
      exec(process.execPath, [
        join(REPO, 'cli/levelset.ts'),
        'new',
        'controller',
        'bare-probe',
        '--group=probe.levelset.dev',
        '--kind=BareProbe',
        `--root=${bare}`,
      ]),
      (err: Error) => {
        const failure = err as Error & { code: number; stderr: string };
        assert.equal(failure.code, 2, failure.stderr);
        assert.match(
          failure.stderr,
          /^levelset: cannot scaffold bare-probe: levelset\/kit is not installed in .*: run `npm install` there first \(nothing was written\)\n$/,
        );
        return true;
      },
    );
    assert.ok(!existsSync(join(bare, 'controllers', 'bare-probe')));
    assert.ok(!existsSync(join(bare, 'test', 'bare-probe.test.ts')));
    assert.equal(readFileSync(join(bare, 'controllers', 'index.ts'), 'utf8'), registry);
  });

  it("refuses in Levelset's repository root, whose controllers are example projects: one line, nothing written", async () => {
    await assert.rejects(
      exec(process.execPath, [
        join(REPO, 'cli/levelset.ts'),
        'new',
        'controller',
        'root-probe',
        '--group=probe.levelset.dev',
        '--kind=RootProbe',
        `--root=${REPO}`,
      ]),
      (err: Error) => {
        const failure = err as Error & { code: number; stderr: string };
        assert.equal(failure.code, 2);
        assert.match(
          failure.stderr,
          /^levelset: Levelset's repository scaffolds into an example project: .*\n$/,
        );
        return true;
      },
    );
    assert.ok(!existsSync(join(REPO, 'examples', 'root-probe')));
  });
});

/**
 * A project of the example's shape holding its registry without the lines matching `without`: where
 * the scaffold writes what the example project holds.
 */
function emptiedExample(example: string, without: RegExp): string {
  const root = mkdtempSync(join(tmpdir(), 'levelset-scaffold-'));
  temps.push(root);
  for (const file of ['package.json', 'biome.json'])
    cpSync(join(REPO, 'examples', example, file), join(root, file));
  mkdirSync(join(root, 'controllers'));
  const registry = readFileSync(join(REPO, 'examples', example, 'controllers/index.ts'), 'utf8');
  writeFileSync(join(root, 'controllers/index.ts'), registry.replace(without, ''));
  return root;
}

describe('the Icecream example is the scaffold plus its reconcile', () => {
  it('api.ts, crd.yaml, example.yaml, its test and the registry are byte for byte what the scaffold writes', async () => {
    const root = emptiedExample('icecream', /.*icecream.*\n/gi);
    await scaffoldController({
      root,
      regenerate: false,
      name: 'icecream',
      group: 'controller.nicoleh.io',
      version: 'v1alpha1',
      kind: 'Icecream',
      spec: parseFields('deploymentName:string!,replicas:integer'),
      status: parseFields('availableReplicas:integer,nodeNames:string[]'),
    });
    for (const path of [
      'controllers/icecream/api.ts',
      'controllers/icecream/crd.yaml',
      'controllers/icecream/example.yaml',
      'test/icecream.test.ts',
      'controllers/index.ts',
    ])
      assert.equal(readFileSync(join(root, path), 'utf8'), readFileSync(join(EXAMPLE, path), 'utf8'), path);
  });
});

describe('the ConfigMapBundle example is the scaffold plus its reconcile', () => {
  it('api.ts, crd.yaml, example.yaml, its test and the registry are byte for byte what the scaffold writes', async () => {
    const root = emptiedExample('configmap-bundle', /.*configmap-?bundle.*\n/gi);
    await scaffoldController({
      root,
      regenerate: false,
      name: 'configmap-bundle',
      group: 'examples.levelset.dev',
      version: 'v1alpha1',
      kind: 'ConfigMapBundle',
      spec: parseFields('sources:[{namespace:string!,name:string!}]!'),
      status: parseFields('sourcesFound:integer,missing:string[]'),
    });
    const example = join(REPO, 'examples', 'configmap-bundle');
    for (const path of [
      'controllers/configmap-bundle/api.ts',
      'controllers/configmap-bundle/crd.yaml',
      'controllers/configmap-bundle/example.yaml',
      'test/configmap-bundle.test.ts',
      'controllers/index.ts',
    ])
      assert.equal(readFileSync(join(root, path), 'utf8'), readFileSync(join(example, path), 'utf8'), path);
  });
});
