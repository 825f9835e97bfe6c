/**
 * Stopping the local stack leaves no process, however it is stopped (issue 19): SIGTERM to the
 * `npm start` process only (what a process manager or an IDE does), and SIGKILL of `levelset dev`
 * itself. `npm start` runs in a session of its own, and the test lists that session's processes
 * (`ps -e -o pid,sid,args`) — the emulator's Java process, the functions, the relay — before and after.
 * A stack killed with SIGKILL leaves its `stack.json`: the next `levelset` command and the next
 * `npm start` recognise it as stale.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { repoRoot } from '../../local/service.ts';
import { readStackState, stackStatePath } from '../../local/state.ts';
import { killSession, session, sessionEmptied } from '../support/processes.ts';
import { waitFor } from '../support/wait.ts';

describe('stopping the local stack leaves no process', { skip: process.platform !== 'linux' }, () => {
  let stateDir: string;
  const sessions: number[] = [];

  /** `npm start` (embedded cluster) in a new session; resolves once the stack runs. */
  const npmStart = async (): Promise<{ child: ChildProcess; sid: number; output: () => string }> => {
    const child = spawn(
      'npm',
      ['start', '--', '--cluster', 'embedded', '--no-demo', '--resync-interval-ms', '0'],
      {
        cwd: repoRoot,
        detached: true, // setsid: the session id is the npm process's pid
        env: { ...process.env, LEVELSET_STATE_DIR: stateDir, METADATA_SERVER_DETECTION: 'none' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout?.on('data', (c: Buffer) => {
      output += c.toString();
    });
    child.stderr?.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const sid = child.pid ?? 0;
    sessions.push(sid);
    await waitFor(() => output.includes('Ctrl-C stops everything'), {
      timeoutMs: 120_000,
      intervalMs: 200,
      message: `npm start to run the stack: ${output.slice(-500)}`,
    });
    return { child, sid, output: () => output };
  };
  const running = (sid: number) => {
    const processes = session(sid);
    for (const part of [
      /cloud-pubsub-emulator|java/,
      /--target=reconcile/,
      /--target=resync/,
      /levelset\.ts relay/,
    ])
      assert.ok(
        processes.some((p) => part.test(p.args)),
        `${part} in the session: ${processes.map((p) => p.args).join('\n')}`,
      );
  };
  const levelset = (args: string[]) => {
    try {
      return {
        code: 0,
        out: execFileSync(process.execPath, [join(repoRoot, 'cli', 'levelset.ts'), ...args], {
          cwd: repoRoot,
          env: { ...process.env, LEVELSET_STATE_DIR: stateDir, METADATA_SERVER_DETECTION: 'none' },
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
      };
    } catch (err) {
      const e = err as { status: number; stdout: string; stderr: string };
      return { code: e.status, out: e.stdout + e.stderr };
    }
  };

  before(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'levelset-stop-'));
  });

  after(() => {
    // Whatever a failed test left behind.
    for (const sid of sessions) killSession(sid);
    rmSync(stateDir, { recursive: true, force: true });
  });

  test('SIGTERM to the npm start process only: every process of its session goes', async () => {
    const { sid } = await npmStart();
    running(sid);
    process.kill(sid, 'SIGTERM');
    await sessionEmptied(sid);
    assert.ok(!existsSync(stackStatePath(stateDir)), 'stack.json removed');
  });

  test('SIGKILL of levelset dev: its children go; the stale stack.json is recognised by levelset and by npm start', async () => {
    const first = await npmStart();
    running(first.sid);
    const state = readStackState(stateDir);
    assert.ok(state);
    process.kill(state.pid, 'SIGKILL');
    await sessionEmptied(first.sid);
    assert.ok(existsSync(stackStatePath(stateDir)), 'a killed stack leaves its stack.json');

    const status = levelset(['status']);
    assert.equal(status.code, 1, status.out);
    assert.match(
      status.out,
      new RegExp(`the local stack is not running \\(its process ${state.pid} is gone\\)`),
    );

    const second = await npmStart();
    assert.match(second.output(), new RegExp(`stale state .*its stack \\(pid ${state.pid}\\) was killed`));
    assert.notEqual(readStackState(stateDir)?.pid, state.pid, 'a state file of its own');
    // A second stack on the same state is refused while one runs.
    const third = spawn(
      process.execPath,
      [join(repoRoot, 'cli', 'levelset.ts'), 'dev', '--cluster', 'embedded'],
      {
        cwd: repoRoot,
        env: { ...process.env, LEVELSET_STATE_DIR: stateDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let thirdOut = '';
    third.stdout?.on('data', (c: Buffer) => {
      thirdOut += c.toString();
    });
    const code = await new Promise((resolve) => third.once('close', resolve));
    assert.equal(code, 1, thirdOut);
    assert.match(thirdOut, /a local stack already runs \(pid \d+/);
    process.kill(second.sid, 'SIGTERM');
    await sessionEmptied(second.sid);
  });
});
