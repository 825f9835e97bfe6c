/**
 * The one esbuild configuration of Levelset's deployed processes: the functions' package
 * (cli/build/package-functions.ts, Cloud Run functions) and the relay's image
 * (cli/build/package-relay.ts, relay/Dockerfile) are both built by {@link bundle}, so that both load
 * the same way (docs/architecture.md, decision 28): one minified ES module per entry point (Node 24),
 * what is imported dynamically in chunks loaded at first use, client-node's unused modules
 * dropped, `@google-cloud/logging` loaded at its first call, and source maps of Levelset's own code
 * only (a chunk of libraries alone ships none). Why bundles, and the measurements behind each
 * plugin: docs/architecture.md, decisions 28 and 36.
 */
import { readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { builtinModules, isBuiltin } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { context, type OutputFile, type Plugin } from 'esbuild';

/**
 * CommonJS code inside an ES module bundle still reads `require`, `__filename` and `__dirname`
 * (e.g. google-gax computes its protos directory at load); esbuild leaves them to the host.
 */
export const COMMONJS_GLOBALS = [
  "import { createRequire as __levelsetCreateRequire } from 'node:module';",
  "import { fileURLToPath as __levelsetFileURLToPath } from 'node:url';",
  'const require = __levelsetCreateRequire(import.meta.url);',
  'const __filename = __levelsetFileURLToPath(import.meta.url);',
  "const __dirname = __levelsetFileURLToPath(new URL('.', import.meta.url));",
].join(' ');

/**
 * `@google-cloud/pino-logging-gcp-config` requires `@google-cloud/logging` (google-gax, gRPC, every
 * Logging API client) at load for two exports it calls only when the service context or the
 * project is not given (core/log.ts gives both). Its stand-in loads the real package at the
 * first call of either.
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

/** Levelset's module whose import of `undici` {@link undiciDispatchersFirst} answers (besides client-node's). */
const REST_MODULE = fileURLToPath(new URL('../../core/k8s/rest.ts', import.meta.url));

/**
 * undici's `index.js` loads all of undici at its first import: `fetch` and the WHATWG classes,
 * WebSocket, EventSource, the HTTP cache and its SQLite store, the mock agents, every interceptor
 * (≈ 230 kB of minified output), and client-node imports it from `config.js`, which every process loads.
 * What Levelset's requests use of it is an `Agent` (client-node's `config.js` builds one per
 * cluster, or a `ProxyAgent`) and the dispatchers' `request` (core/k8s/rest.ts). For client-node's
 * modules and that one, `undici` is a module of those parts (the dispatcher classes, the global
 * dispatcher, and the Dispatcher API on every dispatcher, assigned as undici's `index.js` assigns
 * it), and a `fetch` that loads the whole package, in a chunk of its own, at its first call
 * (client-node's generated API clients, `Watch`, `Log`, `Metrics`, `Health`). Any other import of
 * `undici` (a user's controller) gets the whole package. Decision 83.
 */
const undiciDispatchersFirst: Plugin = {
  name: 'levelset-undici-dispatchers-first',
  setup(b) {
    const clientNode = /[\\/]node_modules[\\/]@kubernetes[\\/]client-node[\\/]dist[\\/]/;
    b.onResolve({ filter: /^undici$/ }, (args) =>
      args.namespace === 'file' && (args.importer === REST_MODULE || clientNode.test(args.importer))
        ? { path: args.importer, namespace: 'levelset-undici' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'levelset-undici' }, (args) => ({
      loader: 'js',
      resolveDir: dirname(args.path),
      contents: [
        "const Dispatcher = require('undici/lib/dispatcher/dispatcher.js');",
        "Object.assign(Dispatcher.prototype, require('undici/lib/api/index.js'));",
        "exports.Agent = require('undici/lib/dispatcher/agent.js');",
        "exports.ProxyAgent = require('undici/lib/dispatcher/proxy-agent.js');",
        "exports.getGlobalDispatcher = require('undici/lib/global.js').getGlobalDispatcher;",
        // A chunk of a CommonJS module has a default export only (without splitting, esbuild's
        // `__toESM` gives the same `default`).
        "exports.fetch = async (...args) => (await import('undici')).default.fetch(...args);",
      ].join('\n'),
    }));
  },
};

/** An import of a Node built-in (`fs`, `node:fs`, `fs/promises`, `node:test`…), as esbuild's filters match it (Go regexp). */
const BUILTIN = new RegExp(
  `^(node:)?(${builtinModules
    .filter((m) => !m.startsWith('_'))
    .map((m) => m.replace(/^node:/, '').replace(/[/.]/g, '\\$&'))
    .join('|')})$`,
);

/**
 * Node answers an ES module import of a built-in with a facade that reads every export at once:
 * `node:http`'s lazy `WebSocket` then compiles Node's internal undici, which nothing here uses.
 * Each built-in is `require`d instead, as the bundled CommonJS libraries do, so a lazy export stays
 * unloaded.
 */
const requireBuiltins: Plugin = {
  name: 'levelset-require-builtins',
  setup(b) {
    // Only the built-ins' names reach the callback: each call is a round trip between esbuild and
    // this process (about 0.3 ms on 2 busy cores), and a bundle resolves thousands of imports.
    b.onResolve({ filter: BUILTIN }, (args) => {
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
 * pino calls `caller()` (lib/caller.js) at every `pino()` for a transport given by relative path,
 * which Levelset never configures; under `--enable-source-maps` its `util.getCallSites()` parsed the
 * start chunks' source maps. The stand-in returns the same script names, unmapped.
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
 * client-node 2.0.1's `index.js` re-exports all of the package (exec, attach, ws, tar-fs, …) and
 * declares no `sideEffects`, so esbuild kept every module it reaches. Marking its hand-written
 * modules, the files directly in `dist/` (exec, attach, cp, informer, …, some of which import `ws`
 * or `tar-fs`), side-effect free lets esbuild drop the unused ones; `polyfill.js`, imported for its
 * side effect, is kept. The generated client under `dist/gen/` (≈ 840 of its ≈ 870 modules) is
 * left to esbuild: its modules' top-level code is declarations esbuild finds pure by itself, so the
 * unused ones go all the same (the bundles hold the same modules as when every module was marked),
 * and its ≈ 2 000 relative imports, resolved again at every rebuild, cost no call to this process
 * (decision 66). A top-level module's relative import by another (`./exec.js`) is answered from one
 * listing of `dist/` (a nested `b.resolve` per import was slow), with the path `b.resolve` would
 * give; the package's own import still goes through `b.resolve` (decision 36).
 */
const clientNodeSideEffectFree: Plugin = {
  name: 'levelset-client-node-side-effect-free',
  setup(b) {
    const DIST = /^(.*[\\/]node_modules[\\/]@kubernetes[\\/]client-node[\\/]dist)[\\/]/;
    // client-node's dist directory → its top-level files (absolute paths); listed once per build.
    const listings = new Map<string, Set<string>>();
    const filesOf = (dist: string) => {
      let files = listings.get(dist);
      if (!files) {
        files = new Set(topLevelFiles(dist).map((name) => join(dist, name)));
        listings.set(dist, files);
      }
      return files;
    };
    const sideEffectFree = (path: string) => DIST.test(path) && !/[\\/]polyfill\.js$/.test(path);
    // Imports of the package and relative imports of its top-level files' names: esbuild's filter
    // sees the path only, not the importer, and each call is a round trip to this process (decision 62).
    b.onResolve({ filter: clientNodeImports() }, async (args) => {
      if (args.pluginData?.levelsetResolved) return undefined;
      if (!/@kubernetes[\\/]client-node/.test(`${args.importer} ${args.path}`)) return undefined;
      const dist = DIST.exec(args.importer)?.[1];
      if (dist && args.namespace === 'file' && args.path.startsWith('./')) {
        const path = resolve(args.resolveDir, args.path);
        if (filesOf(dist).has(path)) return { path, namespace: 'file', sideEffects: !sideEffectFree(path) };
        // A generated module's import (dist/gen/…) that happens to bear a top-level file's name.
        return undefined;
      }
      const resolved = await b.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: { levelsetResolved: true },
      });
      if (resolved.errors.length > 0 || resolved.external) return resolved;
      return sideEffectFree(resolved.path) ? { ...resolved, sideEffects: false } : resolved;
    });
    // The generated client's two barrels of every model: `models/all.js` (gen/index.js re-exports
    // it) and `models/ObjectSerializer.js` (which re-exports every model too, and builds its type
    // map at load). Both have top-level code esbuild cannot prove pure, so importing the package
    // kept them and all ≈ 750 models (≈ 370 kB of output) in every bundle's static closure. Marked
    // side-effect free, they are kept only where something uses them (KubernetesObjectApi, the
    // generated API classes), with the models that use reaches: none in Levelset's functions and
    // relay, whose requests are their own (core/k8s/rest.ts). Decision 80.
    b.onResolve({ filter: /[\\/]models[\\/](all|ObjectSerializer)\.js$/ }, (args) => {
      if (args.namespace !== 'file' || !DIST.test(args.importer) || !args.path.startsWith('.'))
        return undefined;
      return { path: resolve(args.resolveDir, args.path), namespace: 'file', sideEffects: false };
    });
  },
};

/** The JavaScript files directly in `dir` (names). */
function topLevelFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.js'))
    .map((e) => e.name);
}

/**
 * The imports {@link clientNodeSideEffectFree} is called for: the package's, and the relative
 * imports `./<name>` of a JavaScript file directly in client-node's `dist/` (the copy Levelset's
 * modules import), as its top-level modules import each other. Other packages' imports of such a
 * name (`./index.js`, `./util.js`) reach the callback too, which leaves them to esbuild. When
 * client-node is not found from here, every `./<file>.js`.
 */
function clientNodeImports(): RegExp {
  let names: string[];
  try {
    names = topLevelFiles(dirname(fileURLToPath(import.meta.resolve('@kubernetes/client-node'))));
  } catch {
    return /^(@kubernetes\/client-node|\.\/[^/]+\.js)$/;
  }
  const literal = (n: string) => n.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return new RegExp(`^(@kubernetes/client-node|\\./(${names.sort().map(literal).join('|')}))$`);
}

/**
 * Keeps only the mappings into Levelset's own sources: a position inside a bundled library becomes
 * unmapped (a one-field segment, so it never borrows the mapping of the code before it), and runs
 * of unmapped positions collapse into one, so that `--enable-source-maps` does not parse the
 * libraries' mappings at load. The mappings are read and written in one pass over their Base64
 * VLQ text (source map v3), without decoding them into arrays: about half the CPU of
 * `@jridgewell/sourcemap-codec`'s decode and encode, for the same output (decision 66).
 * @param map a source map (v3) as esbuild writes it
 * @returns the map with only the sources outside node_modules
 */
export function ownMappingsOnly(map: {
  sources: string[];
  mappings: string;
  [k: string]: unknown;
}): typeof map {
  const keep = map.sources.map((s) => !s.split(/[\\/]/).includes('node_modules'));
  // A chunk of libraries alone: nothing to decode.
  if (!keep.includes(true)) return { ...map, sources: [], names: [], mappings: '' };
  const index = new Int32Array(map.sources.length).fill(-1);
  const sources: string[] = [];
  map.sources.forEach((s, i) => {
    if (!keep[i]) return;
    index[i] = sources.length;
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
  const input = map.mappings;
  let out = '';
  // The input's fields as absolute values (the generated column restarts at each line), and the
  // last written segment's, against which each written field is relative.
  let column = 0;
  let source = 0;
  let line = 0;
  let sourceColumn = 0;
  let name = 0;
  let outColumn = 0;
  let outSource = 0;
  let outLine = 0;
  let outSourceColumn = 0;
  let outName = 0;
  let lineStarted = false;
  let unmapped = false;
  const fields = [0, 0, 0, 0, 0];
  for (let pos = 0; pos < input.length; ) {
    const c = input.charCodeAt(pos);
    if (c === SEMICOLON) {
      out += ';';
      column = 0;
      outColumn = 0;
      lineStarted = false;
      unmapped = false;
      pos++;
      continue;
    }
    if (c === COMMA) {
      pos++;
      continue;
    }
    let n = 0;
    while (pos < input.length) {
      const next = input.charCodeAt(pos);
      if (next === COMMA || next === SEMICOLON) break;
      let value = 0;
      let shift = 0;
      let digit: number;
      do {
        digit = BASE64_VALUE[input.charCodeAt(pos++)] as number;
        value |= (digit & 31) << shift;
        shift += 5;
      } while (digit & 32);
      fields[n++] = value & 1 ? -(value >>> 1) : value >>> 1;
    }
    column += fields[0] as number;
    let own = -1;
    if (n > 1) {
      source += fields[1] as number;
      line += fields[2] as number;
      sourceColumn += fields[3] as number;
      if (n === 5) name += fields[4] as number;
      own = index[source] ?? -1;
    }
    if (own < 0) {
      if (!unmapped) {
        out += (lineStarted ? ',' : '') + vlq(column - outColumn);
        outColumn = column;
        lineStarted = true;
      }
      unmapped = true;
      continue;
    }
    unmapped = false;
    out +=
      (lineStarted ? ',' : '') +
      vlq(column - outColumn) +
      vlq(own - outSource) +
      vlq(line - outLine) +
      vlq(sourceColumn - outSourceColumn);
    outColumn = column;
    outSource = own;
    outLine = line;
    outSourceColumn = sourceColumn;
    if (n === 5) {
      const j = nameOf(name);
      out += vlq(j - outName);
      outName = j;
    }
    lineStarted = true;
  }
  return { ...map, sources, names, mappings: out };
}

const SEMICOLON = 59;
const COMMA = 44;
const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
/** A Base64 digit's character code → its value. */
const BASE64_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE64.length; i++) BASE64_VALUE[BASE64.charCodeAt(i)] = i;

/** `value` as a source map's Base64 VLQ. */
function vlq(value: number): string {
  let rest = value < 0 ? (-value << 1) | 1 : value << 1;
  let text = '';
  do {
    let digit = rest & 31;
    rest >>>= 5;
    if (rest > 0) digit |= 32;
    text += BASE64[digit];
  } while (rest > 0);
  return text;
}

/** Every file under `dir`, recursively. */
export function* walk(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path);
    else if (entry.isFile()) yield path;
  }
}

/** The namespace of generated entry points' modules (`{ source }` in {@link BundleOptions.entryPoints}). */
const GENERATED = 'levelset-entry';

/** The namespace of the entry points of a build other than the one running ({@link bundleAll}): empty modules. */
const IDLE = 'levelset-idle-entry';

/** Which of {@link bundleAll}'s builds esbuild is running: its entry points and its externals are live. */
interface Running {
  build: BundleOptions | undefined;
}

/**
 * Answers the entry points `levelset-entry:<name>`: for the running build, its file (`root`-relative
 * path) or its generated source; for another build's entry point, an empty module.
 */
function entries(running: Running, root: string): Plugin {
  return {
    name: 'levelset-entries',
    setup(b) {
      b.onResolve({ filter: new RegExp(`^${GENERATED}:`) }, (args) => {
        const name = args.path.slice(GENERATED.length + 1);
        const entry = running.build?.entryPoints[name];
        if (entry === undefined) return { path: name, namespace: IDLE };
        return typeof entry === 'string'
          ? { path: join(root, entry) }
          : { path: args.path, namespace: GENERATED };
      });
      b.onLoad({ filter: /.*/, namespace: GENERATED }, (args) => {
        const entry = running.build?.entryPoints[args.path.slice(GENERATED.length + 1)];
        return { contents: typeof entry === 'object' ? entry.source : '', loader: 'ts', resolveDir: root };
      });
      b.onLoad({ filter: /.*/, namespace: IDLE }, () => ({ contents: '', loader: 'js' }));
    },
  };
}

/**
 * The running build's {@link BundleOptions.external}, as esbuild's `external` treats a package name
 * (the package and its subpaths); `names` is every build's, so that the filter sees only those.
 */
function externals(running: Running, names: readonly string[]): Plugin {
  const literal = (n: string) => n.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const filter = new RegExp(`^(${names.map(literal).join('|')})(/.*)?$`);
  return {
    name: 'levelset-externals',
    setup(b) {
      if (names.length === 0) return;
      b.onResolve({ filter }, (args) => {
        const name = filter.exec(args.path)?.[1];
        return name && running.build?.external?.includes(name)
          ? { path: args.path, external: true }
          : undefined;
      });
    },
  };
}

/**
 * The source of an entry that imports `controllers` from the registry module `registry` (absolute
 * path) and passes them to `run`, exported by Levelset's module `runtime` (absolute path): e.g.
 * `registerFunctions` of functions/runtime/index.ts, `runRelay` of relay/main.ts.
 */
export function registryEntry(registry: string, runtime: string, run: string): string {
  return [
    `import { controllers } from ${JSON.stringify(registry)};`,
    `import { ${run} } from ${JSON.stringify(runtime)};`,
    `await ${run}(controllers);`,
    '',
  ].join('\n');
}

export interface BundleOptions {
  /** Repository root, against which `entryPoints` resolve. */
  root: string;
  /**
   * Output name (without extension) → source file relative to `root` (e.g. `{ index: 'functions/runtime/main.ts' }`),
   * or `{ source }`, a generated module whose imports are absolute paths or packages ({@link registryEntry}).
   */
  entryPoints: Record<string, string | { source: string }>;
  /** Directory the bundle is written to (`<name>.mjs`, `chunk-*.mjs`, `*.mjs.map`); not emptied here. */
  outdir: string;
  /** Packages imported from node_modules at run time instead of bundled (e.g. those reading their own files). */
  external?: readonly string[];
}

/**
 * Bundles `entryPoints` with Levelset's esbuild configuration (this file's docstring), then keeps
 * only the source mappings into Levelset's own code ({@link ownMappingsOnly}); a chunk of libraries
 * alone loses its map and its `sourceMappingURL`. Run with `--enable-source-maps` to read stack
 * traces as TypeScript lines.
 * @throws {Error} when esbuild fails (its messages), e.g. an import that does not resolve.
 */
export async function bundle(options: BundleOptions): Promise<void> {
  await bundleAll([options]);
}

/** When {@link bundleAll} writes, and when it stops. */
export interface BundleAllOptions {
  /**
   * Called once every build is done, before anything is written (e.g. to empty the output
   * directories); a rejection is bundleAll's, and nothing is written.
   */
  beforeWrite?: () => Promise<void>;
  /** Aborted, the running build is cancelled and bundleAll rejects with the signal's reason, writing nothing. */
  signal?: AbortSignal;
}

/**
 * Bundles each of `builds` as {@link bundle} does, one after the other, in one esbuild context:
 * each build is a rebuild of it, so esbuild parses a file once for all of them (the functions'
 * package, the relay and the in-process mode share most of their 2 000 modules; decision 59). Each
 * build's output is as its own `bundle` call's: the context's entry points are every build's,
 * those of the builds not running empty modules whose outputs are not written; its externals are
 * the running build's. A build's maps are trimmed while esbuild runs the next build (decision 62).
 * Output is written once every build is done, each file once.
 * @throws {Error} when esbuild fails (its messages), or when two builds name the same entry point
 * or have different roots; what `beforeWrite` throws; the signal's reason once aborted.
 */
export async function bundleAll(
  builds: readonly BundleOptions[],
  options: BundleAllOptions = {},
): Promise<void> {
  const [first] = builds;
  if (!first) return;
  const { signal } = options;
  signal?.throwIfAborted();
  const root = first.root;
  const names = builds.flatMap((b) => Object.keys(b.entryPoints));
  if (new Set(names).size !== names.length)
    throw new Error(`two builds name one entry point: ${names.join(', ')}`);
  if (builds.some((b) => b.root !== root)) throw new Error('the builds of one bundleAll share their root');
  const running: Running = { build: undefined };
  const ctx = await context({
    write: false,
    absWorkingDir: root,
    entryPoints: Object.fromEntries(names.map((name) => [name, `${GENERATED}:${name}`])),
    outdir: first.outdir,
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
    banner: { js: COMMONJS_GLOBALS },
    logLevel: 'silent',
    legalComments: 'none',
    plugins: [
      entries(running, root),
      externals(running, [...new Set(builds.flatMap((b) => b.external ?? []))]),
      lazyGoogleCloudLogging,
      clientNodeSideEffectFree,
      undiciDispatchersFirst,
      requireBuiltins,
      pinoCallerUnmapped,
    ],
  });
  const cancel = () => void ctx.cancel();
  signal?.addEventListener('abort', cancel, { once: true });
  const files = new Map<string, Uint8Array | string>();
  const rebuild = (build: BundleOptions) => {
    running.build = build;
    return ctx.rebuild();
  };
  // Each build's output is trimmed while esbuild runs the next: the plugins read `running` only
  // during a rebuild, and a rebuild's outputFiles are its own.
  let next = signal?.aborted ? Promise.reject(signal.reason) : rebuild(first);
  try {
    for (let i = 0; i < builds.length; i++) {
      const build = builds[i] as BundleOptions;
      const { outputFiles } = await next;
      signal?.throwIfAborted();
      const following = builds[i + 1];
      if (following) next = rebuild(following);
      const idle = new Set(
        names.filter((n) => !(n in build.entryPoints)).flatMap((n) => [`${n}.mjs`, `${n}.mjs.map`]),
      );
      const own = outputFiles.filter((f) => !idle.has(relative(first.outdir, f.path).split('\\').join('/')));
      for (const [path, content] of ownOutput(own, first.outdir, build.outdir)) files.set(path, content);
    }
  } catch (err) {
    throw signal?.aborted ? signal.reason : err;
  } finally {
    signal?.removeEventListener('abort', cancel);
    // A failed trim leaves the next rebuild running: it ends before the context is disposed.
    await next.catch(() => {});
    running.build = undefined;
    await ctx.dispose();
  }
  await options.beforeWrite?.();
  await Promise.all(
    [...new Set([...files.keys()].map((f) => dirname(f)))].map((d) => mkdir(d, { recursive: true })),
  );
  await Promise.all([...files].map(([path, content]) => writeFile(path, content)));
}

/**
 * One build's output files as written into `outdir` (esbuild wrote them for `builtIn`): each map
 * with only Levelset's own mappings (its sources relative to `outdir`), and a chunk of libraries
 * alone without its map and its `sourceMappingURL`, so that Node with --enable-source-maps does not
 * read it, parse it and index the chunk's lines at load.
 * @returns output path → content
 */
function ownOutput(
  outputFiles: readonly OutputFile[],
  builtIn: string,
  outdir: string,
): Map<string, Uint8Array | string> {
  const files = new Map<string, Uint8Array | string>();
  const at = (path: string) => join(outdir, relative(builtIn, path));
  for (const f of outputFiles) if (!f.path.endsWith('.map')) files.set(at(f.path), f.contents);
  for (const f of outputFiles) {
    if (!f.path.endsWith('.map')) continue;
    const map = ownMappingsOnly(JSON.parse(f.text));
    if (map.sources.length > 0) {
      // A file's path is relative to the output's directory; a plugin's module is `namespace:path`.
      if (outdir !== builtIn)
        map.sources = map.sources.map((s) =>
          /^[\w-]+:/.test(s) ? s : relative(outdir, resolve(builtIn, s)).split('\\').join('/'),
        );
      files.set(at(f.path), JSON.stringify(map));
      continue;
    }
    const chunk = at(f.path.slice(0, -'.map'.length));
    const code = Buffer.from(files.get(chunk) ?? '').toString('utf8');
    files.set(chunk, code.replace(/\n\/\/# sourceMappingURL=[^\n]*\n?$/, '\n'));
  }
  return files;
}
