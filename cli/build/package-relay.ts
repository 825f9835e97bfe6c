/**
 * Bundles the relay for its image (relay/Dockerfile) with Levelset's esbuild configuration
 * (cli/build/bundle.ts, the one the functions' package uses):
 *
 *   <out>/
 *     relay.mjs          the relay process (relay/main.ts `runRelay`, what `levelset relay` runs) with
 *                        the project's registry, and what they import, in one ES module; the image's
 *                        command runs it (its generated entry: {@link relayEntry})
 *     in-process.mjs     the in-process mode's process (functions/runtime/in-process-main.ts `runInProcess`) with
 *                        the registry (same image, deploy/in-process/)
 *     chunk-*.mjs        what is imported dynamically (the tracing SDK, …), loaded at first use
 *     *.mjs.map          source maps of Levelset's own code only, read with `--enable-source-maps`
 *                        (not set by default: it costs the idle relay memory)
 *
 * Why a bundle: memory, docs/architecture.md decision 28. The relay and the in-process mode are two
 * esbuild builds into one directory ({@link relayBundles}): in one build the in-process mode's typed
 * API clients landed in chunks relay.mjs imports at start.
 *
 * Nothing is left outside ({@link RELAY_EXTERNAL}), unlike the functions' package: the relay's
 * gRPC clients load their descriptors with `require` of JSON, which esbuild inlines, and google-gax
 * reads `.proto` files only for `loadProto`, which they never call. The image keeps its production
 * node_modules all the same, so that a `require` the bundle could not resolve still finds its package.
 *
 * `levelset build` stages it, with the image's Dockerfile, in a project's `build/relay`.
 *
 *   node cli/build/package-relay.ts [--out relay/.build]
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { findProject } from '../../core/project.ts';
import { levelsetModule } from '../../local/module-path.ts';
import { type BundleOptions, bundleAll, registryEntry, walk } from './bundle.ts';

const REPO_ROOT = resolve(import.meta.dirname, '../..');

/** Where `npm run package:relay` stages the bundle by default (ignored by git). */
export const DEFAULT_RELAY_OUT = join(REPO_ROOT, 'relay', '.build');

/** The relay bundle's entry: imports the registry module `registry` (absolute path) and runs the relay of its controllers. */
export function relayEntry(registry: string): string {
  return registryEntry(registry, levelsetModule('relay/main.ts'), 'runRelay');
}

/** The in-process bundle's entry: imports the registry module `registry` and runs its controllers in one process. */
export function inProcessEntry(registry: string): string {
  return registryEntry(registry, levelsetModule('functions/runtime/in-process-main.ts'), 'runInProcess');
}

/** The bundle's entry file inside `out`: what the image's CMD runs. */
export const RELAY_MAIN = 'relay.mjs';

/** The in-process mode's entry file inside `out` (deploy/in-process/in-process.yaml's args). */
export const IN_PROCESS_MAIN = 'in-process.mjs';

/** Packages the relay bundle imports from node_modules instead of containing them: none (the file's docstring). */
export const RELAY_EXTERNAL: readonly string[] = [];

export interface PackageRelayOptions {
  /** The project's root; default this repository. */
  root?: string;
  /** The registry module (absolute path); default the registry of `root`'s project (core/project.ts). */
  registry?: string;
  /** Staging directory, emptied first. */
  out?: string;
  /**
   * More entry points bundled beside the relay's with the same configuration, output name → source
   * relative to `root` (the bench's informer children, so that they load what the relay loads).
   */
  extraEntryPoints?: Record<string, string>;
  /**
   * Also bundle the in-process mode ({@link inProcessEntry}: a second esbuild build, after the first);
   * default `true`, as the image ships both. The relay's tests and the bench, which run the relay
   * alone, leave it out.
   */
  inProcess?: boolean;
}

/**
 * The esbuild builds of the relay's image: the relay ({@link relayEntry}, and `extraEntryPoints`),
 * then the in-process mode ({@link inProcessEntry}) unless `inProcess` is `false`, both into `out`,
 * for {@link bundleAll}. Two builds into one directory, not one with both entry points: esbuild
 * tree-shakes a module once for all the entry points of a build and places it by which entries
 * import it, so the in-process mode's API clients (the controllers' typed clients, client-node's
 * generated models) would land in chunks relay.mjs loads at start. Chunk names are content hashes,
 * so the two builds' files never collide (a chunk both write is the same file).
 */
export function relayBundles(options: PackageRelayOptions = {}): BundleOptions[] {
  const root = options.root ?? REPO_ROOT;
  const out = options.out ?? DEFAULT_RELAY_OUT;
  const registry = options.registry ?? findProject(root).registry;
  return [
    {
      root,
      entryPoints: { relay: { source: relayEntry(registry) }, ...options.extraEntryPoints },
      outdir: out,
      external: RELAY_EXTERNAL,
    },
    ...((options.inProcess ?? true)
      ? [
          {
            root,
            entryPoints: { 'in-process': { source: inProcessEntry(registry) } },
            outdir: out,
            external: RELAY_EXTERNAL,
          },
        ]
      : []),
  ];
}

/** Empties `out` (default {@link DEFAULT_RELAY_OUT}) for {@link relayBundles}' builds. */
export function clearRelayPackage(options: PackageRelayOptions = {}): void {
  const out = options.out ?? DEFAULT_RELAY_OUT;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
}

/** The files in `out` (default {@link DEFAULT_RELAY_OUT}), relative to it, sorted. */
export function relayPackageFiles(options: PackageRelayOptions = {}): string[] {
  const out = options.out ?? DEFAULT_RELAY_OUT;
  return [...walk(out)].map((f) => relative(out, f).split('\\').join('/')).sort();
}

/**
 * Bundles the relay ({@link relayEntry}, and `extraEntryPoints`), then the in-process mode
 * ({@link inProcessEntry}) unless `inProcess` is `false`, into `out` ({@link relayBundles}).
 * @returns the staged files, relative to `out`, sorted.
 * @throws {Error} when esbuild fails (its messages), e.g. an import that does not resolve.
 */
export async function packageRelay(options: PackageRelayOptions = {}): Promise<string[]> {
  clearRelayPackage(options);
  await bundleAll(relayBundles(options));
  return relayPackageFiles(options);
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: DEFAULT_RELAY_OUT } } });
  const files = await packageRelay({ out: resolve(values.out) });
  process.stdout.write(`staged ${files.length} files in ${relative(process.cwd(), resolve(values.out))}\n`);
}
