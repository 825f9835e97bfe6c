/**
 * The user's path from the packed tarballs (`npm run test:package`, not part of `npm test`): both
 * packages packed as npm publishes them, `levelset init` of a new project, `npm install` of the
 * tarballs (the rest from the npm registry, through the npm cache), then what the README's first
 * section says a user does: the example controller's own test passes; `levelset new controller`
 * adds a second whose scaffolded test passes; `levelset build` writes a functions bundle that serves
 * a reconcile of the project's controller, a relay bundle with its Dockerfile, and the manifests
 * (deploy/registry.gen.json, the Terraform module's input); `levelset dev --no-demo` converges an
 * object of each controller and `levelset reconcile … --wait` says success. The tarballs hold no test files; their
 * sizes are printed as diagnostics. And each example project (examples/<name>/), copied out of the
 * repository with its `levelset` dependency set to the tarball, passes its own `npm test` and
 * `levelset build`: the examples are written exactly as a user's project is.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { findCondition, parseConditions } from '../../functions/kit/index.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { freePort } from '../../local/pubsub-emulator.ts';
import { repoRoot, type Service, startService } from '../../local/service.ts';
import { readStackState } from '../../local/state.ts';
import { waitFor } from '../support/wait.ts';
import { loadModule, references, topBlocks } from '../terraform/hcl.ts';

const exec = promisify(execFile);
const MINUTES = 60_000;

/** Runs `command` in `cwd`, with the npm cache preferred; its output is in the error when it fails. */
async function run(cwd: string, command: string, args: string[], env: Record<string, string> = {}) {
  // The project's `node --test` reports to its own output, not to this test runner's.
  const { NODE_TEST_CONTEXT: _runner, ...ownEnv } = process.env;
  try {
    return await exec(command, args, {
      cwd,
      env: {
        ...ownEnv,
        npm_config_prefer_offline: 'true',
        npm_config_audit: 'false',
        npm_config_fund: 'false',
        ...env,
      },
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`,
    );
  }
}

/** The entries of a tarball `npm pack --json` described. */
interface Packed {
  filename: string;
  size: number;
  unpackedSize: number;
  files: { path: string }[];
}

/** What no tarball may hold: tests, fixtures, local state, TypeScript sources outside dist/. */
const NOT_SHIPPED = /(^|\/)(test|fixtures|\.levelset|bench)\/|\.test\.[cm]?[jt]s$|\.load\.ts$/;

let dir: string;
let packed: Packed[];

before(
  async () => {
    dir = mkdtempSync(join(tmpdir(), 'levelset-user-path-'));
    const pack = async (args: string[]) =>
      (
        JSON.parse(
          (await run(repoRoot, 'npm', ['pack', ...args, '--pack-destination', dir, '--json'])).stdout,
        ) as Packed[]
      )[0] as Packed;
    // `prepack` compiles each package (tsc); the root's first, whose dist/ the workspace's does not need.
    packed = [await pack([]), await pack(['-w', 'apiserver'])];
  },
  { timeout: 10 * MINUTES },
);

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a user's project from the packed tarballs", { timeout: 40 * MINUTES }, () => {
  let project: string;
  let cluster: TestCluster | undefined;
  let reconcile: Service | undefined;

  before(async () => {
    project = join(dir, 'my-controllers');
    // `npx levelset init my-controllers`: the CLI of this checkout, the version of the package.
    await run(dir, process.execPath, [join(repoRoot, 'cli', 'levelset.ts'), 'init', 'my-controllers']);
    await run(project, 'npm', ['install', ...packed.map((p) => join(dir, p.filename))]);
  });

  after(async () => {
    await reconcile?.stop();
    await cluster?.stop();
  });

  it('packs no tests, fixtures or local state, and prints the sizes', (t) => {
    for (const p of packed) {
      t.diagnostic(
        `${p.filename}: ${p.size} bytes packed, ${p.unpackedSize} unpacked, ${p.files.length} files`,
      );
      const shipped = p.files.map((f) => f.path).filter((f) => NOT_SHIPPED.test(f));
      assert.deepEqual(shipped, [], `${p.filename} ships no tests`);
      assert.ok(
        p.files.some((f) => f.path.startsWith('dist/') && f.path.endsWith('.js')),
        'compiled JavaScript',
      );
      assert.ok(
        !p.files.some((f) => f.path.endsWith('.ts') && !f.path.endsWith('.d.ts')),
        'no TypeScript sources',
      );
    }
    // The published manifest states the Node it needs (the repository's does not: pack-manifest.mjs).
    const installed = JSON.parse(
      readFileSync(join(project, 'node_modules', 'levelset', 'package.json'), 'utf8'),
    );
    assert.equal(installed.engines?.node, '>=22.19.0');
    const levelset = packed.find((p) => p.filename.startsWith('levelset-'));
    for (const crd of ['functions/controllers/topic/crd.yaml', 'functions/controllers/subscription/crd.yaml'])
      assert.ok(
        levelset?.files.some((f) => f.path === crd),
        `the shipped controllers' CRD ${crd}`,
      );
  });

  it("init writes a project that depends on the package's exact version", () => {
    const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
    assert.deepEqual(pkg.levelset, { registry: 'controllers/index.ts' });
    assert.equal(pkg.scripts.start, 'levelset dev');
    assert.equal(pkg.scripts.build, 'levelset build');
    assert.match(pkg.dependencies.levelset, /levelset-0\.1\.0\.tgz$/, 'the tarball, as npm install wrote it');
    const tf = readFileSync(join(project, 'terraform', 'main.tf'), 'utf8');
    assert.match(tf, /source\s*=\s*"\.\.\/node_modules\/levelset\/terraform"/);
    assert.match(
      tf,
      /registry\s*=\s*jsondecode\(file\("\$\{path\.module\}\/\.\.\/deploy\/registry\.gen\.json"\)\)/,
    );
    assert.ok(
      existsSync(join(project, 'node_modules', 'levelset', 'terraform', 'main.tf')),
      "the module's source exists",
    );
  });

  it("the example controller's own test passes (npm test)", async () => {
    const { stdout } = await run(project, 'npm', ['test']);
    assert.match(stdout, /^(ℹ|#) pass 1$/m);
    assert.match(stdout, /^(ℹ|#) fail 0$/m);
  });

  it('levelset new controller adds a second one, registered, whose scaffolded test passes', async () => {
    await run(project, 'npx', [
      'levelset',
      'new',
      'controller',
      'widget',
      '--group',
      'example.com',
      '--kind',
      'Widget',
      '--spec',
      'size:integer!',
    ]);
    assert.match(readFileSync(join(project, 'controllers', 'index.ts'), 'utf8'), /widgetController/);
    assert.ok(existsSync(join(project, 'test', 'widget.test.ts')));
    const { stdout } = await run(project, 'npm', ['test']);
    assert.match(stdout, /^(ℹ|#) pass 2$/m);
    assert.match(stdout, /^(ℹ|#) fail 0$/m);
  });

  it('levelset build writes the manifests, the relay image context and a functions bundle that serves a reconcile', async () => {
    await run(project, 'npx', ['levelset', 'build']);
    const registry = JSON.parse(readFileSync(join(project, 'deploy', 'registry.gen.json'), 'utf8'));
    assert.deepEqual(registry.controllers, ['greeting', 'widget']);
    assert.deepEqual(registry.crds.map((c: { metadata: { name: string } }) => c.metadata.name).sort(), [
      'greetings.example.com',
      'widgets.example.com',
    ]);
    for (const file of [
      'build/relay/Dockerfile',
      'build/relay/dist/relay.mjs',
      'build/relay/dist/in-process.mjs',
    ])
      assert.ok(existsSync(join(project, file)), file);
    const functions = join(project, 'build', 'functions');
    assert.ok(existsSync(join(functions, 'dist', 'index.mjs')));
    // Its controllers declare no celRule: no bundle holds the CEL engine (decision 81), whose
    // expression protos are named `cel.expr`.
    for (const out of [join(functions, 'dist'), join(project, 'build', 'relay', 'dist')])
      for (const file of readdirSync(out).filter((f) => f.endsWith('.mjs')))
        assert.doesNotMatch(readFileSync(join(out, file), 'utf8'), /cel\.expr/, `${out}/${file}`);
    // Installed from the tarball, levelset is in the bundle: Cloud Build installs what it leaves out.
    const archived = readFileSync(join(functions, 'package.json'), 'utf8');
    assert.doesNotMatch(archived, /file:/);
    assert.match(archived, /"@google-cloud\/functions-framework": "\d/);

    // A stale manifest (deploy/ edited, or a declaration changed without a build) fails the
    // project's npm test, as check:manifests fails Levelset's own.
    const rbac = join(project, 'deploy', 'rbac.yaml');
    const built = readFileSync(rbac, 'utf8');
    writeFileSync(rbac, `${built}# edited by hand\n`);
    try {
      await assert.rejects(
        run(project, 'npm', ['test']),
        /generated manifests differ \(run levelset build\): .*rbac\.yaml/,
      );
    } finally {
      writeFileSync(rbac, built);
    }

    // The bundle under the real functions-framework, as Cloud Run serves it (the buildpack's
    // node_modules stands in for the project's).
    symlinkSync(join(project, 'node_modules'), join(functions, 'node_modules'), 'dir');
    cluster = await startTestCluster();
    const ns = await cluster.createNamespace('user-path');
    const crd = registry.crds.find(
      (c: { metadata: { name: string } }) => c.metadata.name === 'widgets.example.com',
    );
    const widgets = { group: 'example.com', version: 'v1alpha1', plural: 'widgets' };
    await cluster.createCrd(crd, widgets, ns);
    const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      ...widgets,
      namespace: ns,
      body: {
        apiVersion: 'example.com/v1alpha1',
        kind: 'Widget',
        metadata: { name: 'bundled' },
        spec: { size: 3 },
      },
    });
    const port = await freePort();
    reconcile = await startService({
      name: 'reconcile-user-bundle',
      // The project's functions-framework: the bundle registers its functions with that one.
      args: [
        join(project, 'node_modules', '@google-cloud', 'functions-framework', 'build', 'src', 'main.js'),
        '--target=reconcile',
        `--port=${port}`,
        `--source=${functions}`,
      ],
      port,
      env: { KUBECONFIG: cluster.kubeconfigPath, LEVELSET_REQUEUE: 'none', LOG_LEVEL: 'info' },
    });
    const data = {
      v: 1,
      controller: 'widget',
      namespace: ns,
      name: 'bundled',
      reason: 'manual',
      enqueuedAt: new Date().toISOString(),
    };
    const res = await fetch(reconcile.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        message: { data: Buffer.from(JSON.stringify(data)).toString('base64'), messageId: '1' },
        subscription: 'projects/p/subscriptions/levelset-keys-reconcile',
      }),
    });
    assert.equal(res.status, 204);
    const outcome = await waitFor(() => reconcile?.logs.find((l) => typeof l.outcome === 'string'), {
      message: 'the outcome line of the delivery',
    });
    assert.equal(outcome.outcome, 'success');
    // biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
    const widget: any = await custom.getNamespacedCustomObject({
      ...widgets,
      namespace: ns,
      name: 'bundled',
    });
    assert.equal(findCondition(parseConditions(widget.status?.conditions), 'Ready')?.status, 'True');
  });

  it("the project's Terraform root calls the installed module with every required input, and what it reads exists", async () => {
    // No provider can be downloaded here: `terraform validate`'s checks, structurally (test/terraform).
    const root = await loadModule(join(project, 'terraform'));
    const module = await loadModule(join(project, 'node_modules', 'levelset', 'terraform'));
    const calls = topBlocks(root, 'module').filter(
      ([, b]) => b.source === '../node_modules/levelset/terraform',
    );
    assert.equal(calls.length, 1, 'one call of the installed module');
    const inputs = Object.keys(calls[0]?.[1] ?? {}).filter((k) => k !== 'source');
    for (const i of inputs) assert.ok(module.variables.has(i), `input ${i} is a variable of the module`);
    for (const [name, v] of module.variables)
      if (!('default' in v)) assert.ok(inputs.includes(name), `the root passes the required ${name}`);
    for (const v of references([root.other], 'var'))
      assert.ok(root.variables.has(v), `var.${v} is declared in the root`);
    // What the root reads, relative to it, exists after `levelset build`.
    const text = [...root.texts.values()].join('\n');
    for (const [, path] of text.matchAll(/"\$\{path\.module\}\/([^"]+)"/g))
      assert.ok(existsSync(join(project, 'terraform', path ?? '')), `${path} exists`);
    // The registry input has the shape of the module's variable.
    const registry = JSON.parse(readFileSync(join(project, 'deploy', 'registry.gen.json'), 'utf8'));
    for (const key of [
      'controllers',
      'relay_cluster_rules',
      'functions_cluster_rules',
      'audit_log_filter',
      'crds',
      'webhook_configurations',
    ])
      assert.ok(key in registry, `registry.gen.json has ${key}`);
    const fmt = spawnSync('terraform', ['fmt', '-check', '-recursive', join(project, 'terraform')], {
      encoding: 'utf8',
    });
    if (!fmt.error) assert.equal(fmt.status, 0, `terraform fmt -check: ${fmt.stdout}${fmt.stderr}`);
  });

  it("levelset dev --no-demo runs the project's controllers: an object of each converges, reconcile --wait says success", async (t) => {
    const state = join(dir, 'dev-state');
    const cliBin = join(project, 'node_modules', 'levelset', 'bin', 'levelset.js');
    const { NODE_TEST_CONTEXT: _runner, ...ownEnv } = process.env;
    const env = { ...ownEnv, LEVELSET_STATE_DIR: state, METADATA_SERVER_DETECTION: 'none' };
    const dev = spawn(
      process.execPath,
      [cliBin, 'dev', '--cluster', 'embedded', '--no-demo', '--resync-interval-ms', '0'],
      { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    dev.stdout.on('data', (c: Buffer) => {
      output += c.toString();
    });
    dev.stderr.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => dev.once('close', (code) => resolve(code)));
    t.after(() => dev.kill('SIGKILL'));
    try {
      await waitFor(() => readStackState(state)?.relayUrl, {
        timeoutMs: 180_000,
        message: `levelset dev to start (its output: ${output.slice(-2000)})`,
      });
      // The banner says what this project runs, and nothing of a controller it does not register.
      await waitFor(() => output.includes('Ctrl-C stops everything'), { message: 'the banner' });
      assert.match(output, /controllers +greeting, widget/);
      assert.doesNotMatch(output, /source namespace|source Secrets/);
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(join(state, 'kubeconfig'));
      await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'dev' } } });
      const custom = kubeConfig.makeApiClient(CustomObjectsApi);
      const objects = [
        { plural: 'greetings', kind: 'Greeting', spec: { message: 'hello' } },
        { plural: 'widgets', kind: 'Widget', spec: { size: 2 } },
      ];
      for (const o of objects) {
        const resource = { group: 'example.com', version: 'v1alpha1', plural: o.plural };
        // The project's CRDs were created by levelset dev: served once the API server has them.
        await waitFor(
          () =>
            custom
              .createNamespacedCustomObject({
                ...resource,
                namespace: 'dev',
                body: {
                  apiVersion: 'example.com/v1alpha1',
                  kind: o.kind,
                  metadata: { name: 'one' },
                  spec: o.spec,
                },
              })
              .then(() => true),
          { message: `a ${o.kind} created` },
        );
        await waitFor(
          async () => {
            // biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
            const object: any = await custom.getNamespacedCustomObject({
              ...resource,
              namespace: 'dev',
              name: 'one',
            });
            return findCondition(parseConditions(object.status?.conditions), 'Ready')?.status === 'True';
          },
          { timeoutMs: 120_000, message: `the ${o.kind} Ready through the relay and the functions` },
        );
      }
      const { stdout } = await run(
        project,
        process.execPath,
        [cliBin, 'reconcile', 'widget', 'dev/one', '--wait'],
        {
          LEVELSET_STATE_DIR: state,
        },
      );
      assert.match(stdout, /success/);
    } finally {
      dev.kill('SIGINT');
    }
    assert.equal(await exited, 0, output.slice(-2000));
  });
});

/** The example projects of the repository: every folder of examples/. */
const EXAMPLES = readdirSync(join(repoRoot, 'examples'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);

describe('the example projects, copied out of the repository, on the packed tarballs', {
  timeout: 30 * MINUTES,
  concurrency: 2,
}, () => {
  for (const name of EXAMPLES)
    it(`examples/${name}: npm install, npm test and levelset build pass`, async (t) => {
      const project = join(dir, 'examples', name);
      // As a user copies it: no dependencies, build output or local state.
      cpSync(join(repoRoot, 'examples', name), project, {
        recursive: true,
        filter: (src) => !['node_modules', 'build', 'deploy', '.levelset'].includes(basename(src)),
      });
      // Its `levelset` is the checkout's (`file:../..`): the tarballs instead, installed as init's project installs them.
      const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
      assert.equal(pkg.dependencies.levelset, 'file:../..');
      delete pkg.dependencies.levelset;
      writeFileSync(join(project, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
      await run(project, 'npm', ['install', ...packed.map((p) => join(dir, p.filename))]);

      const { stdout } = await run(project, 'npm', ['test']);
      t.diagnostic(stdout.match(/^(ℹ|#) (pass|fail) \d+$/gm)?.join(', ') ?? '');
      assert.match(stdout, /^(ℹ|#) pass [1-9]\d*$/m);
      assert.match(stdout, /^(ℹ|#) fail 0$/m);

      await run(project, 'npx', ['levelset', 'build']);
      const registry = JSON.parse(readFileSync(join(project, 'deploy', 'registry.gen.json'), 'utf8'));
      assert.deepEqual(registry.controllers, [name]);
      assert.equal(registry.crds.length, 1, "the example's CRD");
      assert.ok(existsSync(join(project, 'build', 'functions', 'dist', 'index.mjs')), 'the functions bundle');
      assert.ok(existsSync(join(project, 'build', 'relay', 'Dockerfile')), "the relay's image context");
    });
});
