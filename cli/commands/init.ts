/**
 * `levelset init <dir>`: a new project that depends on Levelset (cli/scaffold/init-project.ts): its
 * registry, an example controller and its test, the Terraform root that calls Levelset's module.
 * A non-empty directory is refused with one line; nothing is written then.
 */
import type { CommandModule } from 'yargs';
import { CliError, EXIT_USAGE } from '../errors.ts';

export const initCommand: CommandModule<object, { dir: string }> = {
  command: 'init <dir>',
  describe:
    'create a Levelset project in <dir> (new or empty): registry, example controller, test, Terraform root',
  builder: (y) =>
    y.positional('dir', { type: 'string', demandOption: true, describe: 'the directory to create' }),
  handler: async (argv) => {
    const { InitError, initProject } = await import('../scaffold/init-project.ts');
    let written: string[];
    try {
      written = await initProject(argv.dir);
    } catch (err) {
      if (err instanceof InitError) throw new CliError(err.message, EXIT_USAGE);
      throw err;
    }
    process.stdout.write(
      `wrote\n  ${written.join('\n  ')}\nnext: cd ${argv.dir} && npm install && npm start (README.md)\n`,
    );
  },
};
