/**
 * Cloud Scheduler's stand-in in the local stack (local/stack.ts): the resync timer, and its call of
 * the `resync` function.
 */
import { request } from 'node:http';
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
  const res = await post(url);
  const text = res.text;
  if (res.headers[FUNCTION_STATUS_HEADER] === 'crash' && /^Received SIG[A-Z]+$/.test(text))
    throw new ResyncInterruptedError(text);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`resync answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
  }
  if (res.status < 200 || res.status > 299)
    throw new Error(`resync answered ${res.status}: ${JSON.stringify(body)}`);
  return body as ResyncReport;
}

/**
 * POSTs to `url` (http) and reads the whole answer, with no deadline of its own: a paced resync
 * answers only when it is done (Cloud Scheduler waits up to the job's attempt deadline,
 * `resync_timeout_seconds`), where `fetch` (undici) gives up after 300 s without the answer's headers.
 * @throws {Error} when the connection fails
 */
function post(url: string): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
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
