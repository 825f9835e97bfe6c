/**
 * Stages the functions' source for Cloud Run functions (runtime nodejs24), where Terraform's
 * `archive_file` zips it (terraform/functions.tf):
 *
 *   terraform/.build/functions/
 *     package.json        the project's, with main = dist/functions/index.js and no scripts
 *     package-lock.json   unchanged, so the buildpack's `npm ci` installs exactly the locked tree
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
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  cpSync(join(root, 'package-lock.json'), join(out, 'package-lock.json'));

  return [...walk(out)].map((f) => relative(out, f).split('\\').join('/')).sort();
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
