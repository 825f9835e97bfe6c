/**
 * Stages the functions' source for Cloud Run functions (runtime nodejs24), where Terraform's
 * `archive_file` zips it (terraform/functions.tf):
 *
 *   terraform/.build/functions/
 *     package.json        the project's, with main = dist/functions/index.js, no scripts and no
 *                         workspaces (local/apiserver, the test double, is not in the archive)
 *     package-lock.json   the project's without its workspaces ({@link archiveLockfile}), so the
 *                         buildpack's `npm ci` installs exactly the locked tree the functions need
 *     dist/functions/…    `npm run build` output (tsc, .ts imports rewritten to .js), plus every
 *                         non-TypeScript file under functions/ (e.g. crd.yaml) at the same path
 *
 * Why compiled JavaScript and not the .ts sources: Node refuses type stripping for files under
 * node_modules and the buildpack's layout is not ours to rely on; plain JS starts faster too.
 * `dependencies`/`devDependencies` stay as they are because `npm ci` fails when package.json and
 * the lockfile disagree; the buildpack installs production dependencies only.
 *
 *   npx node scripts/package-functions.ts [--out terraform/.build/functions] [--skip-build]
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const REPO_ROOT = resolve(import.meta.dirname, '..');

/** Where `archive_file` looks by default (terraform/functions.tf, `functions_source_dir`). */
export const DEFAULT_OUT = join(REPO_ROOT, 'terraform', '.build', 'functions');

/** The package entry point inside the archive; functions-framework loads it (package.json `main`). */
export const MAIN = 'dist/functions/index.js';

export interface PackageOptions {
  /** Repository root holding package.json, package-lock.json, functions/ and dist/. */
  root?: string;
  /** Staging directory, emptied first. */
  out?: string;
  /** Run `tsc -p tsconfig.build.json` first (default true). */
  build?: boolean;
}

function* walk(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (entry.isFile()) yield path;
  }
}

/**
 * Builds (optionally) and stages the functions' package.
 * @returns the staged files, relative to `out`, sorted.
 * @throws {Error} when the build fails or `dist/functions/index.js` is missing.
 */
export function packageFunctions(options: PackageOptions = {}): string[] {
  const root = options.root ?? REPO_ROOT;
  const out = options.out ?? DEFAULT_OUT;
  if (options.build ?? true) {
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
      cwd: root,
      stdio: 'inherit',
    });
    if (r.status !== 0)
      throw new Error(`npm run build (tsc -p tsconfig.build.json) failed with status ${r.status}`);
  }
  const dist = join(root, 'dist', 'functions');
  if (!existsSync(join(root, MAIN))) throw new Error(`${MAIN} is missing: run npm run build`);

  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });

  // Compiled JavaScript (and source maps, for stack traces), tests excluded.
  cpSync(dist, join(out, 'dist', 'functions'), {
    recursive: true,
    filter: (src) => !/\.test\.(js|js\.map|d\.ts)$/.test(src),
  });
  // Non-TypeScript files the code may read next to itself (crd.yaml, JSON), at the same place.
  const src = join(root, 'functions');
  for (const file of walk(src)) {
    if (file.endsWith('.ts')) continue;
    const target = join(out, 'dist', 'functions', relative(src, file));
    mkdirSync(dirname(target), { recursive: true });
    cpSync(file, target);
  }

  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  pkg.main = MAIN;
  delete pkg.scripts; // nothing for the buildpack to run (no build, no gcp-build)
  delete pkg.workspaces; // the workspaces' folders are not in the archive
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as Lockfile;
  writeFileSync(join(out, 'package-lock.json'), `${JSON.stringify(archiveLockfile(lock), null, 2)}\n`);

  return [...walk(out)].map((f) => relative(out, f).split('\\').join('/')).sort();
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
      'skip-build': { type: 'boolean', default: false },
    },
  });
  const files = packageFunctions({ out: resolve(values.out), build: !values['skip-build'] });
  process.stdout.write(`staged ${files.length} files in ${relative(process.cwd(), resolve(values.out))}\n`);
}
