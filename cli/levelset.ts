#!/usr/bin/env node
/**
 * `levelset`: the operator's command line (yargs). Every subcommand has `--help`;
 * `levelset completion` prints a bash/zsh completion script.
 *
 * Exit codes: 0 done; 1 an expected failure (cluster unreachable, emulator absent, keys that failed),
 * printed as one line `levelset: …`; 2 a usage error (unknown command or controller, malformed key).
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { ProjectError } from '../core/project.ts';
import { buildCommand } from './commands/build.ts';
import { conditionsCommand } from './commands/conditions.ts';
import { controllersCommand } from './commands/controllers.ts';
import { deadLettersCommand } from './commands/dead-letters.ts';
import { devCommand } from './commands/dev.ts';
import { finalizersCommand } from './commands/finalizers.ts';
import { initCommand } from './commands/init.ts';
import { logsCommand } from './commands/logs.ts';
import { newCommand } from './commands/new.ts';
import { planCommand } from './commands/plan.ts';
import { reconcileCommand } from './commands/reconcile.ts';
import { relayCommand } from './commands/relay.ts';
import { resyncCommand } from './commands/resync.ts';
import { runCommand } from './commands/run.ts';
import { statusCommand } from './commands/status.ts';
import { traceCommand } from './commands/trace.ts';
import { CliError, EXIT_FAILURE, EXIT_USAGE } from './errors.ts';

process.env.METADATA_SERVER_DETECTION ??= 'none';

const parser = yargs(hideBin(process.argv))
  .scriptName('levelset')
  .usage('$0 <command>\n\nKubernetes controllers as serverless functions: run, inspect and operate Levelset.')
  .command(initCommand)
  .command(devCommand)
  .command(relayCommand)
  .command(runCommand)
  .command(reconcileCommand)
  .command(resyncCommand)
  .command(deadLettersCommand)
  .command(finalizersCommand)
  .command(controllersCommand)
  .command(statusCommand)
  .command(conditionsCommand)
  .command(planCommand)
  .command(logsCommand)
  .command(traceCommand)
  .command(newCommand)
  .command(buildCommand)
  .completion('completion', 'print a bash/zsh completion script (levelset completion >> ~/.bashrc)')
  .demandCommand(1, 'name a command (levelset --help lists them)')
  .recommendCommands()
  .strict()
  .help()
  .alias('help', 'h')
  .version(false)
  .wrap(Math.min(110, process.stdout.columns || 110))
  .fail((message, err) => {
    // A handler's error passes through; a yargs validation message is a usage error.
    if (err) throw err;
    throw new CliError(`${message} (levelset --help)`, EXIT_USAGE);
  });

/** Commands that keep running until a signal stops them. */
const LONG_RUNNING = ['dev', 'relay', 'run'];

try {
  const argv = await parser.parseAsync();
  // A finished command exits now, even if a client library left a socket or timer behind.
  if (!LONG_RUNNING.includes(String(argv._[0]))) process.exit(process.exitCode ?? 0);
} catch (err) {
  if (err instanceof CliError || err instanceof ProjectError) {
    // Outside a project, or a registry that is not one: one line (core/project.ts).
    process.stderr.write(`levelset: ${err.message}\n`);
    process.exitCode = err instanceof CliError ? err.exitCode : EXIT_FAILURE;
  } else {
    // Unexpected: a bug or an unclassified failure. The stack trace helps a bug report.
    process.stderr.write(
      `levelset: ${err instanceof Error ? err.message : String(err)}\n${process.env.LEVELSET_DEBUG ? `${(err as Error).stack}\n` : '(LEVELSET_DEBUG=1 shows the stack trace)\n'}`,
    );
    process.exitCode = EXIT_FAILURE;
  }
  process.exit(process.exitCode);
}
