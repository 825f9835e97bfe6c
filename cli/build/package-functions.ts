/**
 * Bundles the functions for Cloud Run functions (runtime nodejs24) with esbuild (Levelset's one
 * configuration, cli/build/bundle.ts, which the relay's image uses too) and stages the deployment
 * package, which Terraform's `archive_file` zips as it is (terraform/functions.tf):
 *
 *   terraform/.build/functions/
 *     package.json        the project's, with main = dist/index.mjs, no workspaces (apiserver,
 *                         the test double, is not in the archive), and one script, `gcp-build`,
 *                         which the buildpack runs after `npm ci`: dist/compile-cache.mjs
 *     package-lock.json   the project's without its workspaces ({@link archiveLockfile}), so the
 *                         buildpack's `npm ci` installs exactly the locked tree the functions need
 *     dist/index.mjs      the project's registry and the runtime (functions/runtime/index.ts), everything
 *                         they import, in one ES module (its generated entry: {@link functionsEntry}) …
 *     dist/chunk-*.mjs    … but what is imported dynamically (resync's publisher, a controller's
 *                         client library) in chunks loaded at first use
 *     dist/compile-cache.mjs  loads the bundle once with Node's compile cache on, filling
 *                         dist/compile-cache/ ({@link WARM_COMPILE_CACHE}; NODE_COMPILE_CACHE)
 *     dist/*.mjs.map      source maps of Levelset's own code (mappings only, no sources), read by
 *                         Node with `--enable-source-maps` (Terraform sets it in NODE_OPTIONS), so
 *                         stack traces in Cloud Logging and Error Reporting name functions/…/*.ts
 *                         lines; a frame in a bundled library shows its bundle position
 *
 * Why a bundle: the cold start, docs/architecture.md decision 28.
 *
 * Left outside the bundle ({@link EXTERNAL}), loaded from node_modules as installed by the
 * buildpack's `npm ci`: functions-framework (its CLI serves the function and must find its own
 * registry and Express, functions/runtime/http.ts), and the gRPC client libraries, which read their
 * `.proto`/JSON descriptors from their package directories at run time. The functions import these
 * only where needed (resync, the Topic controller, Cloud Tasks requeues), never at start.
 *
 * `levelset build` stages it in a project's `build/functions`.
 *
 *   npx node cli/build/package-functions.ts [--out terraform/.build/functions]
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { findProject } from '../../core/project.ts';
import { levelsetModule } from '../../local/module-path.ts';
import { type BundleOptions, bundle, walk } from './bundle.ts';

const REPO_ROOT = resolve(import.meta.dirname, '../..');

/** Where this repository's Terraform root passes the bundle (terraform/examples/basic `functions_source_dir`). */
export const DEFAULT_OUT = join(REPO_ROOT, 'terraform', '.build', 'functions');

/** The package entry point inside the archive; functions-framework loads it (package.json `main`). */
export const MAIN = 'dist/index.mjs';

/**
 * The script the buildpack runs at build time (`gcp-build`) to fill {@link COMPILE_CACHE}: it loads
 * the bundle as a cold start does, with Node's compile cache on, so V8's code for every module
 * loaded at start (the bundle's and functions-framework's) is on disk; a cold start then reads
 * it instead of parsing and compiling them (Node's `module.enableCompileCache`). Run with the
 * runtime's own Node (the buildpack's), so V8 accepts the cache; a cache V8 rejects (another Node)
 * is ignored, and the start compiles as without it.
 */
export const WARM_COMPILE_CACHE = 'dist/compile-cache.mjs';

/** Node's compile cache directory inside the package; Terraform points NODE_COMPILE_CACHE at it. */
export const COMPILE_CACHE = 'dist/compile-cache';

const WARM_COMPILE_CACHE_SOURCE = `// Fills ${COMPILE_CACHE} (cli/build/package-functions.ts, WARM_COMPILE_CACHE). Portable: the
// cache holds paths relative to its directory, so it is valid wherever the package is.
import { enableCompileCache, flushCompileCache } from 'node:module';
import { fileURLToPath } from 'node:url';
// A failure here never fails the build: the start then compiles what the cache lacks.
enableCompileCache({ directory: fileURLToPath(new URL('compile-cache', import.meta.url)), portable: true });
try {
  await import('./index.mjs');
} catch (err) {
  console.warn('compile cache: the bundle did not load at build time; it is compiled at start', err);
}
flushCompileCache();
`;

/**
 * The bundle's entry: imports the registry module `registry` (absolute path) and registers the
 * functions for its controllers and webhooks (functions/runtime/index.ts `registerFunctions`; a
 * registry without `webhooks` registers none).
 */
export function functionsEntry(
  registry: string,
  runtime: string = levelsetModule('functions/runtime/index.ts'),
): string {
  return [
    `import * as registry from ${JSON.stringify(registry)};`,
    `import { registerFunctions } from ${JSON.stringify(runtime)};`,
    'await registerFunctions(registry.controllers, registry.webhooks ?? []);',
    '',
  ].join('\n');
}

/** Packages the bundle imports from node_modules instead of containing them (see the file's docstring). */
export const EXTERNAL = [
  '@google-cloud/functions-framework',
  '@google-cloud/pubsub',
  '@google-cloud/tasks',
] as const;

export interface PackageOptions {
  /** The project's root, holding package.json and package-lock.json; default this repository. */
  root?: string;
  /** The registry module (absolute path); default the registry of `root`'s project (core/project.ts). */
  registry?: string;
  /**
   * The module exporting `registerFunctions` (absolute path); default Levelset's functions/runtime/index.ts.
   * The package's own tests give a small one, to test the packaging without bundling the runtime.
   */
  runtime?: string;
  /** Staging directory, emptied first. */
  out?: string;
}

/**
 * The esbuild build of the functions' bundle ({@link functionsEntry}, into `out`/dist), for
 * {@link bundleAll} beside other builds (`levelset build`).
 */
export function functionsBundle(options: PackageOptions = {}): BundleOptions {
  const root = options.root ?? REPO_ROOT;
  return {
    root,
    entryPoints: {
      index: { source: functionsEntry(options.registry ?? findProject(root).registry, options.runtime) },
    },
    outdir: join(options.out ?? DEFAULT_OUT, 'dist'),
    external: EXTERNAL,
  };
}

/**
 * Empties `out` (default {@link DEFAULT_OUT}) for the functions' package; {@link functionsBundle}'s
 * build then fills its dist/, and {@link stageFunctionsPackage} the rest.
 */
export function clearFunctionsPackage(options: PackageOptions = {}): void {
  const out = options.out ?? DEFAULT_OUT;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
}

/**
 * Stages what the functions' package holds beside its bundle: the compile cache's script,
 * package.json and the lockfile (the file's docstring).
 * @returns the staged files (the bundle's too), relative to `out`, sorted.
 */
export function stageFunctionsPackage(options: PackageOptions = {}): string[] {
  const root = options.root ?? REPO_ROOT;
  const out = options.out ?? DEFAULT_OUT;
  mkdirSync(join(out, 'dist'), { recursive: true });
  writeFileSync(join(out, WARM_COMPILE_CACHE), WARM_COMPILE_CACHE_SOURCE);

  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  pkg.main = MAIN;
  // The buildpack runs `gcp-build` after `npm ci`, with the runtime's Node: it fills the compile cache.
  pkg.scripts = { 'gcp-build': `node ${WARM_COMPILE_CACHE}` };
  delete pkg.workspaces; // the workspaces' folders are not in the archive, nor dependencies on them
  const projectLock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as Lockfile;
  for (const name of workspaceNames(projectLock))
    for (const field of ['dependencies', 'devDependencies'] as const)
      delete (pkg[field] as Record<string, string> | undefined)?.[name];
  const lock = installableDependencies(pkg, projectLock);
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  writeFileSync(join(out, 'package-lock.json'), `${JSON.stringify(archiveLockfile(lock), null, 2)}\n`);

  return [...walk(out)].map((f) => relative(out, f).split('\\').join('/')).sort();
}

/**
 * Bundles the runtime with the project's registry ({@link functionsEntry}) and stages the functions' package.
 * @returns the staged files, relative to `out`, sorted.
 * @throws {Error} when esbuild fails (its messages), e.g. an import that does not resolve.
 */
export async function packageFunctions(options: PackageOptions = {}): Promise<string[]> {
  clearFunctionsPackage(options);
  await bundle(functionsBundle(options));
  return stageFunctionsPackage(options);
}

/** One entry of a package-lock.json (lockfileVersion 2 or 3) `packages` map; the fields read here. */
export interface LockEntry {
  name?: string;
  version?: string;
  link?: boolean;
  resolved?: string;
  workspaces?: string[];
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  [field: string]: unknown;
}

/** A package-lock.json: `packages` keyed by install location (`""` is the root package). */
export interface Lockfile {
  lockfileVersion?: number;
  packages?: Record<string, LockEntry>;
  [field: string]: unknown;
}

/**
 * Where Node (and npm's tree) finds dependency `name` of the package installed at `from`: the
 * nearest `node_modules/<name>` walking up from `from` to the root (`""`).
 * @returns its location in `packages`, or `undefined` when the lockfile has none.
 */
export function resolveInLockfile(
  packages: Record<string, LockEntry>,
  from: string,
  name: string,
): string | undefined {
  for (let base = from; ; ) {
    const location = `${base ? `${base}/` : ''}node_modules/${name}`;
    if (packages[location]) return location;
    if (base === '') return undefined;
    const up = base.lastIndexOf('/node_modules/');
    base = up === -1 ? '' : base.slice(0, up);
  }
}

/**
 * Makes the archive's dependencies installable where Cloud Build installs them: a dependency npm
 * installed from a file or a link (`levelset: file:../levelset-0.1.0.tgz`, a checkout) cannot be
 * installed from the archive, and the bundle holds its code already; so `pkg` (modified) then
 * depends instead on what the bundle leaves out ({@link EXTERNAL}) at the versions the lockfile
 * pins, and so does the returned lockfile's root (`lock` is not modified; archiveLockfile drops what
 * only the file dependency needed).
 * @throws {Error} when the lockfile has no {@link EXTERNAL} package (the functions need it at run time)
 */
export function installableDependencies(pkg: Record<string, unknown>, lock: Lockfile): Lockfile {
  const deps = { ...(pkg.dependencies as Record<string, string> | undefined) };
  const local = Object.keys(deps).filter((name) => /^(file|link):/.test(deps[name] ?? ''));
  if (local.length === 0) return lock;
  for (const name of local) delete deps[name];
  for (const name of EXTERNAL) {
    const version = lock.packages?.[`node_modules/${name}`]?.version;
    if (!version)
      throw new Error(`package-lock.json has no ${name}, which the functions need: run npm install`);
    deps[name] = version;
  }
  pkg.dependencies = deps;
  const packages = { ...lock.packages, '': { ...lock.packages?.[''], dependencies: deps } };
  return { ...lock, packages };
}

/** The package names of `lock`'s workspaces (its entries outside node_modules, the root aside). */
export function workspaceNames(lock: Lockfile): string[] {
  return Object.entries(lock.packages ?? {})
    .filter(([location, entry]) => location !== '' && !location.includes('node_modules/') && entry.name)
    .map(([, entry]) => entry.name as string);
}

/**
 * The lockfile the functions' archive installs from: the project's without its workspaces (the
 * root's `workspaces`, each workspace's entry and its `node_modules/<name>` link) and without the
 * packages that only they needed (every entry left is reachable from the root's dependencies and
 * devDependencies, as `npm install` would have written it for a project with no workspaces).
 * Pure: `lock` is not modified.
 * @throws {Error} when a dependency the root still declares is missing from the lockfile.
 */
export function archiveLockfile(lock: Lockfile): Lockfile {
  const packages = structuredClone(lock.packages ?? {});
  const rootEntry = packages[''] ?? {};
  delete rootEntry.workspaces;
  // The workspaces are not in the archive: nor is the root's dependency on them.
  for (const name of workspaceNames(lock))
    for (const deps of [rootEntry.dependencies, rootEntry.devDependencies]) if (deps) delete deps[name];
  for (const [location, entry] of Object.entries(packages))
    if (location !== '' && (entry.link || !location.includes('node_modules/'))) delete packages[location];

  const kept = new Set<string>(['']);
  const queue = [''];
  for (let location = queue.shift(); location !== undefined; location = queue.shift()) {
    const entry = packages[location] ?? {};
    const required = { ...entry.dependencies, ...(location === '' ? entry.devDependencies : {}) };
    const optional = { ...entry.optionalDependencies, ...entry.peerDependencies };
    for (const [name, isRequired] of [
      ...Object.keys(optional).map((n) => [n, false] as const),
      ...Object.keys(required).map((n) => [n, true] as const),
    ]) {
      const found = resolveInLockfile(packages, location, name);
      if (found === undefined) {
        if (isRequired && location === '')
          throw new Error(`package-lock.json has no ${name}, which package.json declares: run npm install`);
        continue;
      }
      if (!kept.has(found)) {
        kept.add(found);
        queue.push(found);
      }
    }
  }
  for (const location of Object.keys(packages)) if (!kept.has(location)) delete packages[location];
  return { ...lock, packages };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: DEFAULT_OUT },
    },
  });
  const files = await packageFunctions({ out: resolve(values.out) });
  process.stdout.write(`staged ${files.length} files in ${relative(process.cwd(), resolve(values.out))}\n`);
}
