/**
 * The body of `levelset build` (cli/commands/build.ts): the manifests, the functions' package and
 * the relay's image context of the current directory's project.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { getCompileCacheDir } from 'node:module';
import { join, relative } from 'node:path';
import { Worker } from 'node:worker_threads';
import { findProject, loadRegistry, type Project, ProjectError } from '../../core/project.ts';
import { CliError } from '../errors.ts';
import { bundleAll } from './bundle.ts';
import type { ManifestsMessage, ManifestsWorkerData } from './manifests-worker.ts';
import { clearFunctionsPackage, functionsBundle, stageFunctionsPackage } from './package-functions.ts';
import {
  clearRelayPackage,
  IN_PROCESS_MAIN,
  RELAY_MAIN,
  relayBundles,
  relayPackageFiles,
} from './package-relay.ts';

/**
 * The relay image's Dockerfile, beside the bundle in `build/relay` (the build context): distroless
 * Node 24 as the nonroot user; the bundle holds every library it imports (cli/build/package-relay.ts).
 * Its environment is relay/Dockerfile's (local/service.ts ALLOCATOR_ENV: glibc's malloc settings).
 */
export const RELAY_DOCKERFILE = `# syntax=docker/dockerfile:1
# The relay's image, with this project's registry: written by \`levelset build\`; do not edit.
#   docker build -t REGION-docker.pkg.dev/PROJECT/REPO/relay:TAG build/relay
# Two entry points: dist/${RELAY_MAIN} (the relay, the default command) and dist/${IN_PROCESS_MAIN}
# (the in-process mode). NODE_OPTIONS (Terraform) adds the V8 flags.
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot
FROM \${RUNTIME_IMAGE}
WORKDIR /app
ENV NODE_ENV=production \\
    RELAY_PORT=8080 \\
    MALLOC_ARENA_MAX=2 \\
    MALLOC_MMAP_THRESHOLD_=131072 \\
    MALLOC_TRIM_THRESHOLD_=131072
COPY dist ./dist
USER 65532:65532
EXPOSE 8080
CMD ["dist/${RELAY_MAIN}"]
`;

/** The manifests generated in a worker thread ({@link startManifests}). */
export interface ManifestsRun {
  /** Resolves once the registry has loaded; rejects as {@link loadRegistry} does. */
  registry: Promise<void>;
  /** The files written, relative to the project; rejects as generateManifests does. */
  files: Promise<string[]>;
}

/**
 * Generates `project`'s manifests (cli/build/generate-manifests.ts) in a worker thread
 * (cli/build/manifests-worker.ts), so that loading the registry's modules and generating the
 * manifests do not hold the main thread, which answers esbuild's plugins (decision 62); the worker
 * uses this thread's compile cache, if it has one (bin/levelset.js: decision 66). `warn`
 * gets generateManifests' warnings. A failure rejects `registry` (when the registry did not load)
 * and `files` with the worker's error: a ProjectError stays one.
 */
export function startManifests(project: Project, warn: (line: string) => void): ManifestsRun {
  const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
  const workerData: ManifestsWorkerData = { project, compileCache: getCompileCacheDir() };
  const worker = new Worker(new URL(`./manifests-worker.${extension}`, import.meta.url), { workerData });
  let registryLoaded!: () => void;
  let finish!: (files: string[]) => void;
  let fail!: (err: Error) => void;
  let failRegistry!: (err: Error) => void;
  const registry = new Promise<void>((res, rej) => {
    registryLoaded = res;
    failRegistry = rej;
  });
  const files = new Promise<string[]>((res, rej) => {
    finish = res;
    fail = rej;
  });
  // Whoever awaits only one of the two: the other's rejection is not unhandled.
  registry.catch(() => {});
  files.catch(() => {});
  const failed = (err: Error) => {
    failRegistry(err);
    fail(err);
  };
  worker.on('message', (m: ManifestsMessage) => {
    if (m.type === 'warn') warn(m.line);
    else if (m.type === 'registry') registryLoaded();
    else if (m.type === 'done') {
      finish(m.files);
      void worker.terminate(); // whatever the registry's modules left running
    } else {
      const err = m.name === 'ProjectError' ? new ProjectError(m.message) : new Error(m.message);
      if (m.stack) err.stack = m.stack;
      failed(err);
      void worker.terminate();
    }
  });
  worker.on('error', failed);
  worker.on('exit', (code) =>
    failed(new Error(`the manifests' worker exited (code ${code}) before it was done`)),
  );
  return { registry, files };
}

/**
 * Builds the current directory's project (the file's docstring); with `check`, only compares the
 * manifests.
 * @throws {ProjectError} outside a project or with a bad registry; {@link CliError} when `check` finds drift
 * @throws {Error} when esbuild fails (its messages)
 */
export async function buildProject(
  options: { check?: boolean; say?: (line: string) => void } = {},
): Promise<void> {
  const say = options.say ?? (() => {});
  const project = findProject();
  const rel = (p: string) => relative(process.cwd(), p) || '.';
  if (options.check) {
    // A registry that does not load fails here, in one line.
    await loadRegistry(project.registry);
    // Nothing built yet is nothing stale: a new project's `npm test` passes before its first build.
    if (!existsSync(join(project.root, 'deploy'))) {
      say('manifests       deploy/ not built yet (levelset build writes it): nothing to compare');
      return;
    }
    const { generateManifests } = await import('./generate-manifests.ts');
    const drift = await generateManifests({ project, check: true, warn: say });
    if (drift.length)
      throw new CliError(`generated manifests differ (run levelset build): ${drift.join(', ')}`);
    return;
  }
  const functionsOut = join(project.root, 'build', 'functions');
  const relayOut = join(project.root, 'build', 'relay');
  const functions = { root: project.root, registry: project.registry, out: functionsOut };
  const relay = { root: project.root, registry: project.registry, out: join(relayOut, 'dist') };
  // The manifests in a worker thread, while this one runs esbuild: the functions' bundle and the
  // relay's two, as rebuilds of one esbuild context (each file parsed once: decision 59). Nothing is
  // written before the registry has loaded: one that does not fails in one line (decision 62).
  const manifests = startManifests(project, say);
  const abort = new AbortController();
  manifests.registry.catch((err) => abort.abort(err));
  const bundled = bundleAll([functionsBundle(functions), ...relayBundles(relay)], {
    signal: abort.signal,
    beforeWrite: async () => {
      await manifests.registry;
      clearFunctionsPackage(functions);
      clearRelayPackage(relay);
    },
  });
  try {
    await manifests.registry;
  } catch (err) {
    // The registry's failure, not esbuild's (which, for a registry that does not load, says less).
    await bundled.catch(() => {});
    throw err;
  }
  let files: string[];
  try {
    files = await manifests.files;
  } catch (err) {
    await bundled.catch(() => {});
    throw err;
  }
  say(`manifests       ${files.length} files (${rel(join(project.root, 'deploy', 'registry.gen.json'))}, …)`);
  await bundled;
  const functionsFiles = stageFunctionsPackage(functions);
  say(`functions       ${rel(functionsOut)} (${functionsFiles.length} files)`);
  writeFileSync(join(relayOut, 'Dockerfile'), RELAY_DOCKERFILE);
  say(
    `relay           ${rel(relayOut)} (${relayPackageFiles(relay).length} files and a Dockerfile: docker build -t IMAGE ${rel(relayOut)})`,
  );
}
