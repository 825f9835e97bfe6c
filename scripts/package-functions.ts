/**
 * Bundles the functions for Cloud Run functions (runtime nodejs24) with esbuild and stages the
 * deployment package, which Terraform's `archive_file` zips as it is (terraform/functions.tf):
 *
 *   terraform/.build/functions/
 *     package.json        the project's, with main = dist/index.mjs, no workspaces (local/apiserver,
 *                         the test double, is not in the archive), and one script, `gcp-build`,
 *                         which the buildpack runs after `npm ci`: dist/compile-cache.mjs
 *     package-lock.json   the project's without its workspaces ({@link archiveLockfile}), so the
 *                         buildpack's `npm ci` installs exactly the locked tree the functions need
 *     dist/index.mjs      functions/index.ts and everything it imports, in one ES module …
 *     dist/chunk-*.mjs    … but what is imported dynamically (resync's publisher, a controller's
 *                         client library) in chunks loaded at first use
 *     dist/compile-cache.mjs  loads the bundle once with Node's compile cache on, filling
 *                         dist/compile-cache/ ({@link WARM_COMPILE_CACHE}; NODE_COMPILE_CACHE)
 *     dist/*.mjs.map      source maps of Levelset's own code (mappings only, no sources), read by
 *                         Node with `--enable-source-maps` (Terraform sets it in NODE_OPTIONS), so
 *                         stack traces in Cloud Logging and Error Reporting name functions/…/*.ts
 *                         lines; a frame in a bundled library shows its bundle position
 *
 * Why a bundle: a cold start spent most of its time resolving, reading and compiling thousands of
 * module files (@kubernetes/client-node alone is ~2,000); one minified file loads in a fraction of
 * that (`npm run bench`, cold start, against an empty functions-framework function).
 *
 * Left outside the bundle ({@link EXTERNAL}), loaded from node_modules as installed by the
 * buildpack's `npm ci`: functions-framework (its CLI serves the function and must find its own
 * registry and Express, functions/http.ts), and the gRPC client libraries, which read their
 * `.proto`/JSON descriptors from their package directories at run time. The functions import these
 * only where needed (resync, the Topic controller, Cloud Tasks requeues), never at start.
 *
 *   npx node scripts/package-functions.ts [--out terraform/.build/functions]
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { decode, encode, type SourceMapSegment } from '@jridgewell/sourcemap-codec';
import { build, type Plugin } from 'esbuild';

const REPO_ROOT = resolve(import.meta.dirname, '..');

/** Where `archive_file` looks by default (terraform/functions.tf, `functions_source_dir`). */
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

const WARM_COMPILE_CACHE_SOURCE = `// Fills ${COMPILE_CACHE} (scripts/package-functions.ts, WARM_COMPILE_CACHE). Portable: the
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

/** The functions' source entry point, relative to the repository root. */
export const ENTRY = 'functions/index.ts';

/** Packages the bundle imports from node_modules instead of containing them (see the file's docstring). */
export const EXTERNAL = [
  '@google-cloud/functions-framework',
  '@google-cloud/pubsub',
  '@google-cloud/tasks',
] as const;

/**
 * CommonJS code inside an ES module bundle still reads `require`, `__filename` and `__dirname`
 * (e.g. google-gax computes its protos directory at load); esbuild leaves them to the host.
 */
const COMMONJS_GLOBALS = [
  "import { createRequire as __levelsetCreateRequire } from 'node:module';",
  "import { fileURLToPath as __levelsetFileURLToPath } from 'node:url';",
  'const require = __levelsetCreateRequire(import.meta.url);',
  'const __filename = __levelsetFileURLToPath(import.meta.url);',
  "const __dirname = __levelsetFileURLToPath(new URL('.', import.meta.url));",
].join(' ');

/**
 * `@google-cloud/pino-logging-gcp-config` requires `@google-cloud/logging` at load for two exports
 * it calls only when the service context or the project is not given (functions/log.ts gives both):
 * `Logging` and `detectServiceContext`. That package's index pulls in google-gax, gRPC and every
 * Logging API client (≈ 2 MB of the bundle, most of its load time). Here the logging config gets a
 * stand-in whose two exports load the real package (from node_modules) at their first call, so
 * nothing changes in behaviour and nothing is loaded at start.
 */
const lazyGoogleCloudLogging: Plugin = {
  name: 'levelset-lazy-google-cloud-logging',
  setup(b) {
    b.onResolve({ filter: /^@google-cloud\/logging$/ }, (args) =>
      args.namespace === 'levelset-lazy'
        ? { path: args.path, external: true }
        : { path: args.path, namespace: 'levelset-lazy' },
    );
    b.onLoad({ filter: /.*/, namespace: 'levelset-lazy' }, () => ({
      loader: 'js',
      contents: [
        'let real;',
        "const load = () => (real ??= require('@google-cloud/logging'));",
        'exports.Logging = function Logging(...args) { return new (load().Logging)(...args); };',
        'exports.detectServiceContext = (...args) => load().detectServiceContext(...args);',
      ].join('\n'),
    }));
  },
};

/**
 * The bundle's ES modules `import` Node's built-in modules (`node:http`, `https`, `net`, …, from
 * client-node, its proxy agents and Levelset's own code); Node answers an ES module import of a
 * built-in with a facade that reads every export at once, and `node:http`'s include the lazy
 * `WebSocket`, `CloseEvent` and `MessageEvent`, so the first such import compiled Node's internal
 * undici (≈ 20 ms of a cold start, `node --cpu-prof`), which nothing in the functions uses. Here
 * each built-in is `require`d instead (a CommonJS module of one line), as the bundled CommonJS
 * libraries already do: an export is read when the code reads it, so a lazy one stays unloaded.
 */
const requireBuiltins: Plugin = {
  name: 'levelset-require-builtins',
  setup(b) {
    b.onResolve({ filter: /^[a-z_/:]+$/ }, (args) => {
      if (args.namespace === 'levelset-builtin') return { path: args.path, external: true };
      if (!isBuiltin(args.path) || (args.kind !== 'import-statement' && args.kind !== 'dynamic-import'))
        return undefined;
      return { path: args.path.replace(/^node:/, ''), namespace: 'levelset-builtin' };
    });
    b.onLoad({ filter: /.*/, namespace: 'levelset-builtin' }, (args) => ({
      loader: 'js',
      contents: `module.exports = require(${JSON.stringify(`node:${args.path}`)});`,
    }));
  },
};

/**
 * pino calls `caller()` (lib/caller.js) at every `pino()`, for the one option that reads it: a
 * transport's target given as a relative path, which the functions never configure. It calls
 * `util.getCallSites()`, which under `--enable-source-maps` (Terraform's NODE_OPTIONS) maps each
 * frame: at start, the logger's creation parsed the source maps of the start chunks (≈ 15 ms of a
 * cold start, `node --cpu-prof`). The stand-in returns the same script names, unmapped (the bundle's
 * files, which is what a relative target would be resolved against anyway).
 */
const pinoCallerUnmapped: Plugin = {
  name: 'levelset-pino-caller-unmapped',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]pino[\\/]lib[\\/]caller\.js$/ }, () => ({
      loader: 'js',
      contents: [
        "const { getCallSites } = require('node:util');",
        'module.exports = () => getCallSites({ sourceMap: false }).slice(2).map((site) => site.scriptName);',
      ].join('\n'),
    }));
  },
};

/**
 * client-node 2.0.1's `index.js` re-exports all of the package (exec, attach, port-forward, cp,
 * informers, metrics, …) and declares no `sideEffects`, so esbuild keeps every module it reaches,
 * with their dependencies (ws, tar-fs, …), although the functions use a handful of exports
 * (KubeConfig, ApiException, the request context). Marking its modules side-effect free lets
 * esbuild drop the unused ones, as the package's own `sideEffects: false` would; `polyfill.js`,
 * imported for its side effect (the `File` global undici needs on Node 18), is kept.
 */
const clientNodeSideEffectFree: Plugin = {
  name: 'levelset-client-node-side-effect-free',
  setup(b) {
    b.onResolve({ filter: /.*/ }, async (args) => {
      if (args.pluginData?.levelsetResolved) return undefined;
      if (!/@kubernetes[\\/]client-node/.test(`${args.importer} ${args.path}`)) return undefined;
      const resolved = await b.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: { levelsetResolved: true },
      });
      if (resolved.errors.length > 0 || resolved.external) return resolved;
      const inPackage = /[\\/]node_modules[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]/.test(resolved.path);
      return inPackage && !/[\\/]polyfill\.js$/.test(resolved.path)
        ? { ...resolved, sideEffects: false }
        : resolved;
    });
  },
};

/**
 * Keeps only the mappings into Levelset's own sources: a position inside a bundled library becomes
 * unmapped (a one-field segment, so it never borrows the mapping of the code before it), and runs
 * of unmapped positions collapse into one. Node parses every map of a module as it loads it with
 * `--enable-source-maps`; the libraries' mappings made most of that parse (≈ 20× the size of ours)
 * and of the function's cold start (`npm run bench`, cold start), for frames nobody reads as
 * TypeScript anyway.
 * @param map a source map (v3) as esbuild writes it
 * @returns the map with only the sources outside node_modules
 */
export function ownMappingsOnly(map: {
  sources: string[];
  mappings: string;
  [k: string]: unknown;
}): typeof map {
  const keep = map.sources.map((s) => !s.split(/[\\/]/).includes('node_modules'));
  const index = new Map<number, number>();
  const sources: string[] = [];
  map.sources.forEach((s, i) => {
    if (!keep[i]) return;
    index.set(i, sources.length);
    sources.push(s);
  });
  const names: string[] = [];
  const nameIndex = new Map<number, number>();
  const nameOf = (i: number) => {
    let j = nameIndex.get(i);
    if (j === undefined) {
      j = names.length;
      nameIndex.set(i, j);
      names.push((map.names as string[] | undefined)?.[i] ?? '');
    }
    return j;
  };
  const lines = decode(map.mappings).map((line) => {
    const out: SourceMapSegment[] = [];
    let unmapped = false;
    for (const seg of line) {
      const own = seg.length > 1 ? index.get(seg[1] as number) : undefined;
      if (own === undefined) {
        if (!unmapped) out.push([seg[0]]);
        unmapped = true;
        continue;
      }
      unmapped = false;
      const [column, , line, sourceColumn] = seg as [number, number, number, number];
      out.push(
        seg.length === 5
          ? [column, own, line, sourceColumn, nameOf(seg[4])]
          : [column, own, line, sourceColumn],
      );
    }
    return out;
  });
  return { ...map, sources, names, mappings: encode(lines) };
}

export interface PackageOptions {
  /** Repository root holding package.json, package-lock.json and functions/. */
  root?: string;
  /** Staging directory, emptied first. */
  out?: string;
}

function* walk(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (entry.isFile()) yield path;
  }
}

/**
 * Bundles `functions/index.ts` and stages the functions' package.
 * @returns the staged files, relative to `out`, sorted.
 * @throws {Error} when esbuild fails (its messages), e.g. an import that does not resolve.
 */
export async function packageFunctions(options: PackageOptions = {}): Promise<string[]> {
  const root = options.root ?? REPO_ROOT;
  const out = options.out ?? DEFAULT_OUT;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });

  await build({
    absWorkingDir: root,
    entryPoints: { index: join(root, ENTRY) },
    outdir: join(out, 'dist'),
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node24',
    minify: true,
    // Stack traces name the TypeScript sources; the sources themselves are not shipped twice.
    sourcemap: 'linked',
    sourcesContent: false,
    external: [...EXTERNAL],
    banner: { js: COMMONJS_GLOBALS },
    logLevel: 'silent',
    legalComments: 'none',
    plugins: [lazyGoogleCloudLogging, clientNodeSideEffectFree, requireBuiltins, pinoCallerUnmapped],
  });

  writeFileSync(join(out, WARM_COMPILE_CACHE), WARM_COMPILE_CACHE_SOURCE);

  for (const file of walk(join(out, 'dist'))) {
    if (!file.endsWith('.map')) continue;
    const map = ownMappingsOnly(JSON.parse(readFileSync(file, 'utf8')));
    if (map.sources.length > 0) {
      writeFileSync(file, JSON.stringify(map));
      continue;
    }
    // A chunk of libraries alone: no map and no sourceMappingURL, so that Node with
    // --enable-source-maps does not read it, parse it and index the chunk's lines at load.
    rmSync(file);
    const chunk = file.slice(0, -'.map'.length);
    const code = readFileSync(chunk, 'utf8');
    writeFileSync(chunk, code.replace(/\n\/\/# sourceMappingURL=[^\n]*\n?$/, '\n'));
  }

  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  pkg.main = MAIN;
  // The buildpack runs `gcp-build` after `npm ci`, with the runtime's Node: it fills the compile cache.
  pkg.scripts = { 'gcp-build': `node ${WARM_COMPILE_CACHE}` };
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
    },
  });
  const files = await packageFunctions({ out: resolve(values.out) });
  process.stdout.write(`staged ${files.length} files in ${relative(process.cwd(), resolve(values.out))}\n`);
}
