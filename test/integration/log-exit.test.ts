// A process logging with Levelset's logger (core/log.ts) exits when it is told to, even when
// the reader of its stdout is gone (the local stack's child whose parent died). With pino's
// asynchronous destination, the flush in its exit hook retried EPIPE forever: the process hung in
// process.exit(), deaf to SIGTERM, until SIGKILL.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { waitFor } from '../support/wait.ts';

const logModule = new URL('../../core/log.ts', import.meta.url).href;

describe('core/log.ts: exit with the log reader gone', () => {
  it('a process that logs and exits on SIGTERM exits although its stdout has no reader', async () => {
    // It logs lines right before process.exit(), as a shutdown's last lines are.
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { createLogger } from ${JSON.stringify(logModule)};
const logger = createLogger('test');
process.on('SIGTERM', () => {
  logger.info('stopping');
  logger.info('stopped');
  process.exit(0);
});
logger.info('ready');
setInterval(() => {}, 60_000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    child.once('exit', (code, signal) => {
      exit = { code, signal };
    });
    try {
      await waitFor(() => out.includes('"message":"ready"'), { message: 'the child to log ready' });
      child.stdout.destroy(); // no reader: its next write fails with EPIPE
      child.kill('SIGTERM');
      await waitFor(() => exit !== undefined, { message: 'the child to exit after SIGTERM' });
    } finally {
      if (!exit) child.kill('SIGKILL');
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });
});
