/**
 * `levelset build`: what a project deploys, from its registry (core/project.ts), into the
 * project (paths relative to its root):
 *
 *   deploy/               the manifests (cli/build/generate-manifests.ts): deploy/registry.gen.json,
 *                         which Levelset's Terraform module reads, RBAC and the CRDs
 *   build/functions/      the functions' deployment package (cli/build/package-functions.ts), which
 *                         the Terraform module zips (`functions_source_dir`)
 *   build/relay/          the relay image's build context: dist/ (cli/build/package-relay.ts: the
 *                         relay and the in-process mode with the project's registry) and a Dockerfile
 *                         (`docker build -t IMAGE build/relay`)
 */
import type { CommandModule } from 'yargs';

export const buildCommand: CommandModule<object, { check: boolean }> = {
  command: 'build',
  describe:
    "build the project's functions bundle (build/functions), relay image context (build/relay) and manifests (deploy/)",
  builder: (y) =>
    y.option('check', {
      type: 'boolean',
      default: false,
      describe: 'only compare the generated manifests with deploy/ (exit 1 when they differ); build nothing',
    }),
  handler: async (argv) => {
    const { buildProject } = await import('../build/index.ts');
    await buildProject({ check: argv.check, say: (line) => process.stdout.write(`${line}\n`) });
  },
};
