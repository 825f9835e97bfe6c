/**
 * The processes of a session, for tests that check a process tree leaves nothing behind: a test
 * starts the tree's root with `detached: true` (setsid: the session id is the root's pid), and
 * every process the tree starts stays in that session unless it makes one of its own.
 */
import { execFileSync } from 'node:child_process';
import { waitFor } from './wait.ts';

/** The processes of session `sid` (its leader included), from `ps -e -o pid,sid,args` (Linux, macOS). */
export function session(sid: number): { pid: number; args: string }[] {
  const out = execFileSync('ps', ['-e', '-o', 'pid=,sid=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => !!m && Number(m[2]) === sid)
    .map((m) => ({ pid: Number(m[1]), args: m[3] ?? '' }));
}

/** Sends SIGKILL to every process of session `sid` (a failed test's leftovers). */
export function killSession(sid: number): void {
  for (const p of session(sid))
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
}

/**
 * Waits until session `sid` has no process left (deadline `timeoutMs`, default 30 000).
 * @throws {Error} naming every process still there at the deadline
 */
export async function sessionEmptied(sid: number, timeoutMs = 30_000): Promise<void> {
  await waitFor(() => session(sid).length === 0, {
    timeoutMs,
    intervalMs: 200,
    message: `no process left in session ${sid}`,
  }).catch((err: Error) => {
    throw new Error(
      `${err.message}: ${session(sid)
        .map((p) => `${p.pid} ${p.args}`)
        .join('\n')}`,
    );
  });
}
