/**
 * Expected failures of the `levelset` command: one line saying what to do, a non-zero exit code,
 * never a stack trace.
 */

/** Exit code of a usage error: unknown controller, malformed key, bad flag (as yargs' own). */
export const EXIT_USAGE = 2;
/**
 * Exit code of `levelset reconcile --wait` when the key's primary does not exist (the reconcile
 * succeeded with nothing to do: `notFound` on its outcome line, functions/runtime/reconcile.ts).
 */
export const EXIT_NOT_FOUND = 3;
/** Exit code of every other expected failure: cluster unreachable, emulator absent, failed keys… */
export const EXIT_FAILURE = 1;

/** An expected failure: `message` is printed as `levelset: <message>` and the process exits with `exitCode`. */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT_FAILURE) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** The first line of an error's message (gRPC and HTTP errors carry multi-line details). */
export function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0] ?? text;
}
