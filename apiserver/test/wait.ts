/**
 * Condition waits for the conformance tests: poll until a condition holds or a deadline passes.
 * The package's own (it imports nothing of Levelset, whose tests have test/support/wait.ts).
 * Never a fixed sleep: a test is as fast as the system it tests.
 */
import { setTimeout as delay } from 'node:timers/promises';

export interface WaitOptions {
  /** Deadline in ms; default 20 000 (`TEST_TIMEOUT_SCALE` multiplies it, e.g. for a slow real cluster). */
  timeoutMs?: number;
  /** Poll interval in ms; default 50. */
  intervalMs?: number;
  /** Describes the condition in the timeout error. */
  message?: string;
}

/**
 * Polls `probe` until it returns a value other than `undefined`/`false`, and returns that value.
 * Errors thrown by `probe` count as "not yet" (the last one is reported on timeout).
 * @throws {Error} `timed out after N ms waiting for <message>` when the deadline passes.
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  options: WaitOptions = {},
): Promise<T> {
  const scale = Number(process.env.TEST_TIMEOUT_SCALE ?? '1') || 1;
  const timeoutMs = (options.timeoutMs ?? 20_000) * scale;
  const intervalMs = options.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError
        ? ` (last error: ${lastError instanceof Error ? lastError.message : String(lastError)})`
        : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${options.message ?? 'condition'}${why}`);
    }
    await delay(intervalMs);
  }
}
