/**
 * The deployment package serves a reconcile: `npm run package:functions`'s bundle (what Terraform
 * zips and deploys) under the real functions-framework CLI, with the Node options Terraform gives
 * the functions, answers a Pub/Sub push of a Foo's key with 204 and the Deployment exists, and as
 * the `admission` target answers a review with the registry's webhook. The
 * package's node_modules is the repository's (on Cloud Run the buildpack's `npm ci` installs it).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { AppsV1Api } from '@kubernetes/client-node';
import { bundle } from '../../cli/build/bundle.ts';
import {
  COMPILE_CACHE,
  EXTERNAL,
  MAIN,
  packageFunctions,
  WARM_COMPILE_CACHE,
} from '../../cli/build/package-functions.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { freePort } from '../../local/pubsub-emulator.ts';
import { repoRoot, type Service, startService } from '../../local/service.ts';
import { FUNCTION_NODE_OPTIONS, functionsCli } from '../../local/stack-services.ts';
import { type CustomResource, customObjects } from '../support/custom-objects.ts';
import { waitFor } from '../support/wait.ts';

const foos: CustomResource = {
  group: 'samplecontroller.k8s.io',
  version: 'v1alpha1',
  plural: 'foos',
  kind: 'Foo',
};

const pushBody = (namespace: string, name: string) =>
  JSON.stringify({
    message: {
      data: Buffer.from(
        JSON.stringify({
          v: 1,
          controller: 'foo',
          namespace,
          name,
          reason: 'manual',
          enqueuedAt: new Date().toISOString(),
        }),
      ).toString('base64'),
      messageId: '1',
    },
    subscription: 'projects/p/subscriptions/levelset-keys-reconcile',
  });

/**
 * The files of `dir` that loading `entry` loads: it and what it imports statically, transitively
 * (esbuild's minified `import…from"./chunk-….mjs"` and `import"./chunk-….mjs"`; not `import()`).
 */
function staticImports(dir: string, entry: string): string[] {
  const seen = new Set<string>();
  const queue = [entry];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (seen.has(file)) continue;
    seen.add(file);
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(
      /import\s*(?:[\w$*{}\s,]*?from\s*)?["']\.\/([^"']+\.mjs)["']/g,
    ))
      queue.push(m[1] as string);
  }
  return [...seen];
}

describe('the deployed functions bundle', () => {
  let cluster: TestCluster;
  let reconcile: Service | undefined;
  let admission: Service | undefined;
  let dir: string;
  let ns: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'levelset-bundle-'));
    // The API server starts while the package is built (`after` stops it, whichever failed).
    const starting = startTestCluster();
    try {
      await packageFunctions({ out: dir });
      symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');
      // What the buildpack's gcp-build does after npm ci: fill the compile cache (WARM_COMPILE_CACHE).
      // npm test's global setup gives every process its own compile cache (test/support/temp-check.ts),
      // which module.enableCompileCache() would keep using: not this one, whose job is to fill the package's.
      const { NODE_COMPILE_CACHE: _testCache, NODE_DISABLE_COMPILE_CACHE: _disabled, ...env } = process.env;
      await promisify(execFile)(process.execPath, [join(dir, WARM_COMPILE_CACHE)], { cwd: dir, env });
    } finally {
      cluster = await starting;
    }
    ns = await cluster.createNamespace('bundle');
    await cluster.applyCrd(join(repoRoot, 'examples', 'foo', 'controllers', 'foo', 'crd.yaml'), foos, ns);
  });

  after(async () => {
    await admission?.stop();
    await reconcile?.stop();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is one bundle, not the TypeScript sources', () => {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    assert.equal(pkg.main, MAIN);
    assert.doesNotMatch(readFileSync(join(dir, MAIN), 'utf8'), /from\s*["'][^"']*\.ts["']/);
  });

  it("holds none of client-node's generated model classes (decision 80: nothing Levelset runs uses them)", () => {
    // Each model class carries its `attributeTypeMap`, a property name minification keeps.
    const files = readdirSync(join(dir, 'dist')).filter((f) => f.endsWith('.mjs'));
    assert.ok(files.length > 1);
    assert.deepEqual(
      files.filter((f) => readFileSync(join(dir, 'dist', f), 'utf8').includes('attributeTypeMap')),
      [],
    );
  });

  it('loads of undici, at start, its dispatchers only, and all of it in a chunk of its own (decision 83)', () => {
    // undici's index.js names every export, which minification keeps: `MockCallHistory` among them.
    const atStart = staticImports(join(dir, 'dist'), MAIN.replace(/^dist\//, ''));
    assert.ok(atStart.length > 1);
    const holding = readdirSync(join(dir, 'dist')).filter(
      (f) => f.endsWith('.mjs') && readFileSync(join(dir, 'dist', f), 'utf8').includes('MockCallHistory'),
    );
    assert.deepEqual(
      atStart.filter((f) => holding.includes(f)),
      [],
    );
    assert.equal(holding.length, 1, "all of undici, for client-node's fetch");
  });

  it("sends client-node's generated clients' requests through its fetch, loaded at the first call (decision 83)", async () => {
    const out = join(dir, 'generated-client');
    const source = [
      "import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';",
      'const kubeConfig = new KubeConfig();',
      'kubeConfig.loadFromFile(process.argv[2]);',
      'const { items } = await kubeConfig.makeApiClient(CoreV1Api).listNamespace();',
      'console.log(items.map((n) => n.metadata.name).join(" "));',
    ].join('\n');
    await bundle({ root: repoRoot, entryPoints: { main: { source } }, outdir: out, external: EXTERNAL });
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(out, 'main.mjs'), cluster.kubeconfigPath],
      {
        timeout: 30_000,
      },
    );
    assert.ok(stdout.trim().split(' ').includes(ns), stdout);
  });

  it("has the buildpack fill Node's compile cache (gcp-build), which the start then reads", () => {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    assert.equal(pkg.scripts?.['gcp-build'], `node ${WARM_COMPILE_CACHE}`);
    assert.ok(readdirSync(join(dir, COMPILE_CACHE), { recursive: true }).length > 1, 'cache entries written');
  });

  it('answers a push of a Foo key with 204 and converges the Foo', async () => {
    const port = await freePort();
    reconcile = await startService({
      name: 'reconcile-bundle',
      args: [functionsCli, '--target=reconcile', `--port=${port}`, `--source=${dir}`],
      port,
      env: {
        // As Terraform deploys it (terraform/functions.tf, function_env).
        NODE_OPTIONS: [...FUNCTION_NODE_OPTIONS, '--enable-source-maps'].join(' '),
        NODE_COMPILE_CACHE: join(dir, COMPILE_CACHE),
        NODE_COMPILE_CACHE_PORTABLE: '1',
        KUBECONFIG: cluster.kubeconfigPath,
        LEVELSET_REQUEUE: 'none',
        LOG_LEVEL: 'info',
      },
    });
    await customObjects(cluster.kubeConfig, foos, ns).create('bundled', {
      deploymentName: 'bundled',
      replicas: 2,
    });

    const res = await fetch(reconcile.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: pushBody(ns, 'bundled'),
    });
    assert.equal(res.status, 204);

    const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    const deployment = await waitFor(() =>
      apps.readNamespacedDeployment({ namespace: ns, name: 'bundled' }).catch(() => undefined),
    );
    assert.equal(deployment.spec?.replicas, 2);
    const outcome = await waitFor(() => reconcile?.logs.find((l) => typeof l.outcome === 'string'), {
      message: 'the outcome line of the delivery',
    });
    assert.equal(outcome.outcome, 'success');
  });

  it("serves the registry's webhooks as the admission target (terraform/admission.tf's entry point)", async () => {
    const port = await freePort();
    admission = await startService({
      name: 'admission-bundle',
      args: [functionsCli, '--target=admission', `--port=${port}`, `--source=${dir}`],
      port,
      env: { NODE_COMPILE_CACHE: join(dir, COMPILE_CACHE), NODE_COMPILE_CACHE_PORTABLE: '1' },
    });
    const res = await fetch(new URL('/foo-scale', admission.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid: 'bundle-1',
          kind: { group: foos.group, version: foos.version, kind: 'Foo' },
          resource: { group: foos.group, version: foos.version, resource: 'foos' },
          operation: 'CREATE',
          userInfo: { username: 'dev' },
          object: {
            apiVersion: `${foos.group}/${foos.version}`,
            kind: 'Foo',
            metadata: { name: 'big' },
            spec: { replicas: 9 },
          },
        },
      }),
    });
    assert.equal(res.status, 200);
    const review = (await res.json()) as {
      response: { uid: string; allowed: boolean; status?: { message?: string } };
    };
    assert.equal(review.response.uid, 'bundle-1');
    assert.equal(review.response.allowed, false);
    assert.match(review.response.status?.message ?? '', /more than 3 replicas/);
  });
});
