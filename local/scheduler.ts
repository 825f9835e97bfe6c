/**
 * Cloud Scheduler's stand-in in the local stack (local/stack.ts): the resync timer, and its call of
 * the `resync` function.
 */
import type { ResyncReport } from '../functions/runtime/resync.ts';
import type { LocalService } from './composition.ts';

/**
 * The header functions-framework sets on the answer it gives a request in flight when its process
 * crashes or receives a signal (`X-Google-Status: crash`, body `Received SIGINT` for a signal).
 */
const FUNCTION_STATUS_HEADER = 'x-google-status';

/**
 * A resync whose function process was stopped by a signal while it ran (functions-framework then
 * answers `500 Received SIGINT`): Ctrl-C in a terminal signals every process of the group at once,
 * so the resync function may stop before `levelset dev` does. Not a failure of the resync.
 */
export class ResyncInterruptedError extends Error {
  override readonly name = 'ResyncInterruptedError';
}

/**
 * POSTs to the `resync` function at `url`, as Cloud Scheduler does.
 * @throws {ResyncInterruptedError} when a signal stopped the function meanwhile
 * @throws {Error} on a non-2xx answer or one that is not JSON
 */
export async function callResync(url: string): Promise<ResyncReport> {
  const res = await fetch(url, { method: 'POST' });
  const text = await res.text();
  if (res.headers.get(FUNCTION_STATUS_HEADER) === 'crash' && /^Received SIG[A-Z]+$/.test(text))
    throw new ResyncInterruptedError(text);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`resync answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
  }
  if (!res.ok) throw new Error(`resync answered ${res.status}: ${JSON.stringify(body)}`);
  return body as ResyncReport;
}

/**
 * The resync timer, Cloud Scheduler's stand-in: `runResync` every `intervalMs` (0: never), its report
 * or failure to `onResync`, except of a resync the stop or a signal interrupted.
 */
export function resyncTimer(
  intervalMs: number,
  runResync: () => Promise<ResyncReport>,
  onResync: ((report: ResyncReport | Error) => void) | undefined,
): LocalService {
  let timer: NodeJS.Timeout | undefined;
  let stopping = false;
  const report = (result: ResyncReport | Error) => {
    if (!stopping && !(result instanceof ResyncInterruptedError)) onResync?.(result);
  };
  return {
    start: async () => {
      if (intervalMs) timer = setInterval(() => void runResync().then(report, report), intervalMs).unref();
    },
    stop: async () => {
      stopping = true;
      clearInterval(timer);
    },
  };
}
