/**
 * `node --test --test-global-setup` module of `npm test`: gives the whole run a temporary directory
 * of its own (`TMPDIR`, inherited by every test file's process and their children, so `os.tmpdir()`
 * points there) and fails the run when a test left anything in it — a temporary directory or file
 * not cleaned up. Other processes of the machine, and test files running in parallel, do not
 * disturb the check: nothing else writes there.
 *
 * It also gives every process of the run Node's compile cache ({@link TEST_COMPILE_CACHE}) and
 * `@kubernetes/client-node` from one bundle (test/support/bundled-client-node.ts).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUNDLE_HOOK_URL, BUNDLES_ENV, buildClientNodeBundle } from './bundled-client-node.ts';

/**
 * Node's compile cache of `npm test` (`NODE_COMPILE_CACHE`, inherited like `TMPDIR`): the
 * TypeScript each process strips and the V8 code it compiles, kept across processes and runs. A run
 * starts a few hundred Node processes from the same sources (every test file, each stack's relay
 * and functions, each `levelset` CLI call), and each spent most of its start stripping and
 * compiling them (client-node alone is ~2,000 modules): docs/architecture.md decision 38. Node keys
 * each entry by the file's contents and checksums it, so an edited file is compiled afresh and a
 * torn entry is ignored. Outside the run's temporary directory, so that it outlives the run (the
 * check above would otherwise count it); in node_modules/.cache, where tools keep their caches.
 */
export const TEST_COMPILE_CACHE = join(
  import.meta.dirname,
  '..',
  '..',
  'node_modules',
  '.cache',
  'levelset-test-compile-cache',
);

/** Where the run's dependency bundles are kept across runs (test/support/bundled-client-node.ts). */
const TEST_BUNDLES = join(import.meta.dirname, '..', '..', 'node_modules', '.cache', 'levelset-test-bundles');

let dir: string | undefined;

export async function globalSetup(): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'levelset-test-run-'));
  process.env.TMPDIR = dir;
  // Also where tools that call module.enableCompileCache() (tsc, run by the scaffold test) keep
  // theirs, instead of <tmpdir>/node-compile-cache, which the check would count as left behind.
  process.env.NODE_COMPILE_CACHE ??= TEST_COMPILE_CACHE;
  process.env[BUNDLES_ENV] = JSON.stringify(await buildClientNodeBundle(TEST_BUNDLES));
  process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, `--import=${BUNDLE_HOOK_URL}`]
    .filter(Boolean)
    .join(' ');
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
