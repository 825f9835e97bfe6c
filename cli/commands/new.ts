/**
 * `levelset new controller <name>`: scaffolds a controller into the current directory's project
 * (cli/scaffold/new-controller.ts): its folder, CRD, registry line, a test, and regenerated manifests.
 */
import type { CommandModule } from 'yargs';
import { findProject, isLevelsetRepository } from '../../core/project.ts';
import { CliError, EXIT_USAGE } from '../errors.ts';
import { FIELDS_GRAMMAR } from '../scaffold/scaffold-fields.ts';

interface NewControllerArgs {
  name: string;
  group: string;
  version: string;
  kind: string;
  plural?: string;
  scope: 'Namespaced' | 'Cluster';
  spec?: string;
  status?: string;
  root?: string;
}

const controllerCommand: CommandModule<object, NewControllerArgs> = {
  command: 'controller <name>',
  describe: 'scaffold a controller: api (zod), CRD, defineController stub, registry line, test, manifests',
  builder: (y) =>
    y
      .positional('name', { type: 'string', demandOption: true, describe: 'kebab-case, e.g. icecream' })
      .option('group', {
        type: 'string',
        demandOption: true,
        describe: 'API group, e.g. controller.nicoleh.io',
      })
      .option('version', { type: 'string', default: 'v1alpha1', describe: 'API version' })
      .option('kind', { type: 'string', demandOption: true, describe: 'UpperCamelCase kind, e.g. Icecream' })
      .option('plural', { type: 'string', describe: 'resource name (default: lower-case kind + s)' })
      .option('scope', {
        choices: ['Namespaced', 'Cluster'] as const,
        default: 'Namespaced' as const,
        describe: "the CRD's scope: a Cluster primary's keys are names alone",
      })
      .option('spec', {
        type: 'string',
        describe: `spec fields: ${FIELDS_GRAMMAR}`,
      })
      .option('status', { type: 'string', describe: 'status fields: the same grammar as --spec' })
      .option('root', {
        type: 'string',
        describe: 'the project to write into (default: the current directory\'s, package.json "levelset")',
      }),
  handler: async (argv) => {
    const { parseFields, projectLayout, scaffoldController } = await import('../scaffold/new-controller.ts');
    // The project's registry folder and tests (core/project.ts). Levelset's own repository has no
    // controller folder of its own to scaffold into: its examples are projects (examples/<name>/).
    const project = findProject(argv.root ?? process.cwd());
    if (isLevelsetRepository(project))
      throw new CliError(
        "Levelset's repository scaffolds into an example project: cd examples/<name> (or levelset init examples/<name>) and run it there",
        EXIT_USAGE,
      );
    const layout = projectLayout(project.root, project.registry);
    let written: string[];
    try {
      written = await scaffoldController({
        name: argv.name,
        group: argv.group,
        version: argv.version,
        kind: argv.kind,
        ...(argv.plural ? { plural: argv.plural } : {}),
        scope: argv.scope,
        root: project.root,
        layout,
        spec: parseFields(argv.spec),
        status: parseFields(argv.status),
      });
    } catch (err) {
      const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
      throw new CliError(`cannot scaffold ${argv.name}: ${message}`, EXIT_USAGE);
    }
    process.stdout.write(
      `wrote\n  ${written.join('\n  ')}\nnext: write the reconcile in ${written[1]} (docs/writing-a-controller.md)\n`,
    );
  },
};

export const newCommand: CommandModule = {
  command: 'new <what>',
  describe: 'create something from a template (new controller --help)',
  builder: (y) => y.command(controllerCommand).demandCommand(1, 'name what to create: controller'),
  handler: () => undefined,
};
