/**
 * `node --test --test-global-setup` module of `npm test`: gives the whole run a temporary directory
 * of its own (`TMPDIR`, inherited by every test file's process and their children, so `os.tmpdir()`
 * points there) and fails the run when a test left anything in it — a temporary directory or file
 * not cleaned up. Other processes of the machine, and test files running in parallel, do not
 * disturb the check: nothing else writes there.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let dir: string | undefined;

export async function globalSetup(): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'levelset-test-run-'));
  process.env.TMPDIR = dir;
  // Tools that call module.enableCompileCache() (tsc, run by the scaffold test) would otherwise
  // keep Node's compile cache in <tmpdir>/node-compile-cache: a cache, but still something left.
  process.env.NODE_DISABLE_COMPILE_CACHE = '1';
}

export async function globalTeardown(): Promise<void> {
  if (!dir) return;
  const left = readdirSync(dir);
  rmSync(dir, { recursive: true, force: true });
  dir = undefined;
  if (left.length > 0) {
    // node --test does not print an error thrown here (it only sets the exit code): say it.
    process.stderr.write(
      `✖ tests left ${left.length} entries in the temporary directory: ${left.join(', ')}\n`,
    );
    process.exitCode = 1;
  }
}
