/**
 * `node local/guard.ts <command> [args…]`: runs a non-Node child of the local stack (the Pub/Sub
 * emulator's Java process) so that it goes when the stack goes, however the stack goes: the guard
 * forwards SIGTERM and SIGINT to the command, stops it (SIGTERM, SIGKILL after 5 s) when the guard's
 * own parent dies (local/parent-watch.ts), and exits with the command's exit code.
 * `LEVELSET_GUARD_GRACE_MS` sets the time between that SIGTERM and SIGKILL (default 5 000 ms).
 */
import { spawn } from 'node:child_process';
import { watchParent } from './parent-watch.ts';

/** ms between SIGTERM and SIGKILL of the command. */
const GRACE_MS = Number(process.env.LEVELSET_GUARD_GRACE_MS) || 5_000;

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write('usage: node local/guard.ts <command> [args…]\n');
  process.exit(2);
}
const child = spawn(command, args, { stdio: 'inherit' });
let ending = false;
const end = () => {
  if (ending) return;
  ending = true;
  child.kill('SIGTERM');
  setTimeout(() => child.kill('SIGKILL'), GRACE_MS).unref();
};
process.on('SIGTERM', end);
process.on('SIGINT', end);
watchParent(end);
child.once('error', (err) => {
  process.stderr.write(`guard: ${command}: ${err.message}\n`);
  process.exit(1);
});
child.once('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
