/**
 * `npm test` loads `@kubernetes/client-node` from one esbuild bundle of it (docs/architecture.md
 * decision 46). The package is ~1,000 ES modules; every Node process of a run (each test file, each
 * stack's relay and functions, each `levelset` CLI call: a few hundred) spent about a second of CPU
 * resolving, reading and linking them, even with the compile cache. The bundle is the same package
 * (every module, every export), as the deployed functions and relay bundles hold it, loaded from
 * one file.
 *
 * The global setup ({@link buildClientNodeBundle}, from test/support/temp-check.ts) builds it once
 * into node_modules/.cache, keyed by the package's and esbuild's versions, and gives every process
 * of the run the resolve hook of test/support/bundled-client-node-hook.mjs through `NODE_OPTIONS`.
 * The hook swaps only the exact entry file the bundle was built from (the repository's
 * node_modules/@kubernetes/client-node/dist/index.js), so a project elsewhere, a deep import, or a
 * run under `TEST_KUBECONFIG` with its own copy is untouched, and the user's path
 * (`npm run test:package`, the examples from the packed tarballs) runs the package as npm installs it.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, version as esbuildVersion } from 'esbuild';

/** The environment variable that tells the hook what to swap: `{ "<entry file URL>": "<bundle file URL>" }`. */
export const BUNDLES_ENV = 'LEVELSET_TEST_BUNDLES';

/** The hook module, for `NODE_OPTIONS=--import=<this URL>`. */
export const BUNDLE_HOOK_URL = new URL('./bundled-client-node-hook.mjs', import.meta.url).href;

const repoRoot = join(import.meta.dirname, '..', '..');

/**
 * Builds (or finds in the cache) the bundle of `@kubernetes/client-node` and returns the hook's map.
 * The bundle is ESM for Node 24, minified except for names (`keepNames`: `constructor.name` and
 * error names stay as the package has them), with a `require` for the package's CommonJS
 * dependencies. Written to a temporary name and renamed into place, so a torn build is never used.
 * @param cacheDir where bundles are kept across runs (e.g. node_modules/.cache/levelset-test-bundles).
 * @returns the value for {@link BUNDLES_ENV}.
 * @throws esbuild's error when the package cannot be bundled.
 */
export async function buildClientNodeBundle(cacheDir: string): Promise<Record<string, string>> {
  const require = createRequire(join(repoRoot, 'package.json'));
  const packageJson = require.resolve('@kubernetes/client-node/package.json');
  const { version, main } = JSON.parse(readFileSync(packageJson, 'utf8')) as {
    version: string;
    main: string;
  };
  const entry = join(dirname(packageJson), main);
  const key = createHash('sha256')
    .update(`${packageJson}\0${version}\0${esbuildVersion}\0${process.version}\0v1`)
    .digest('hex')
    .slice(0, 16);
  const bundle = join(cacheDir, `client-node-${key}.mjs`);
  if (!existsSync(bundle)) {
    mkdirSync(cacheDir, { recursive: true });
    const partial = `${bundle}.${process.pid}.partial`;
    await build({
      entryPoints: [entry],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node24',
      minify: true,
      keepNames: true,
      outfile: partial,
      logLevel: 'error',
      banner: {
        js: "import { createRequire as __levelsetCreateRequire } from 'node:module'; const require = __levelsetCreateRequire(import.meta.url);",
      },
    });
    renameSync(partial, bundle);
  }
  return { [pathToFileURL(entry).href]: pathToFileURL(bundle).href };
}
