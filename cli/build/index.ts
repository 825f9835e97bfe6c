/**
 * The body of `levelset build` (cli/commands/build.ts): the manifests, the functions' package and
 * the relay's image context of the current directory's project.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { findProject, loadRegistry } from '../../core/project.ts';
import { CliError } from '../errors.ts';
import { bundleAll } from './bundle.ts';
import { generateManifests } from './generate-manifests.ts';
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
 * Its environment is relay/Dockerfile's (local/stack-services.ts RELAY_ENV: at most 2 malloc arenas).
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
    MALLOC_ARENA_MAX=2
COPY dist ./dist
USER 65532:65532
EXPOSE 8080
CMD ["dist/${RELAY_MAIN}"]
`;

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
  // A registry that does not load fails here, in one line, before anything is written.
  await loadRegistry(project.registry);
  const rel = (p: string) => relative(process.cwd(), p) || '.';
  if (options.check) {
    // Nothing built yet is nothing stale: a new project's `npm test` passes before its first build.
    if (!existsSync(join(project.root, 'deploy'))) {
      say('manifests       deploy/ not built yet (levelset build writes it): nothing to compare');
      return;
    }
    const drift = await generateManifests({ project, check: true, warn: say });
    if (drift.length)
      throw new CliError(`generated manifests differ (run levelset build): ${drift.join(', ')}`);
    return;
  }
  const functionsOut = join(project.root, 'build', 'functions');
  const relayOut = join(project.root, 'build', 'relay');
  const functions = { root: project.root, registry: project.registry, out: functionsOut };
  const relay = { root: project.root, registry: project.registry, out: join(relayOut, 'dist') };
  clearFunctionsPackage(functions);
  clearRelayPackage(relay);
  // The functions' bundle and the relay's two, as rebuilds of one esbuild context (each file parsed
  // once: decision 59); the manifests are generated while esbuild works.
  const bundled = bundleAll([functionsBundle(functions), ...relayBundles(relay)]);
  let manifests: string[];
  try {
    manifests = await generateManifests({ project, warn: say });
  } catch (err) {
    await bundled.catch(() => {});
    throw err;
  }
  say(
    `manifests       ${manifests.length} files (${rel(join(project.root, 'deploy', 'registry.gen.json'))}, …)`,
  );
  await bundled;
  const functionsFiles = stageFunctionsPackage(functions);
  say(`functions       ${rel(functionsOut)} (${functionsFiles.length} files)`);
  writeFileSync(join(relayOut, 'Dockerfile'), RELAY_DOCKERFILE);
  say(
    `relay           ${rel(relayOut)} (${relayPackageFiles(relay).length} files and a Dockerfile: docker build -t IMAGE ${rel(relayOut)})`,
  );
}
