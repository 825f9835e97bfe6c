/**
 * Shared helpers for the API server tests: raw HTTP requests sent the way @kubernetes/client-node sends
 * them (its RequestContext, credentials and TLS dispatcher, so they work on a real cluster too),
 * `Status` bodies out of client-node errors, and a collector for watch streams.
 */
import {
  type HttpMethod,
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  RequestContext,
} from '@kubernetes/client-node';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  json: any;
}

async function send(
  kc: KubeConfig,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
  signal?: AbortSignal,
) {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no cluster configured');
  const ctx = new RequestContext(cluster.server + path, method as HttpMethod);
  if (body !== undefined) {
    ctx.setHeaderParam('Content-Type', 'application/json');
    ctx.setBody(typeof body === 'string' ? body : JSON.stringify(body));
  }
  await kc.applySecurityAuthentication(ctx);
  for (const [k, v] of Object.entries(headers)) ctx.setHeaderParam(k, v);
  if (signal) ctx.setSignal(signal);
  return new IsomorphicFetchHttpLibrary().send(ctx).toPromise();
}

/** Sends one request to the cluster of `kc` with its credentials and returns status, headers and body. */
export async function raw(
  kc: KubeConfig,
  method: keyof typeof HttpMethod | string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  const res = await send(kc, method, path, body, headers);
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.httpStatusCode, headers: res.headers, text, json };
}

/** The `Status` body of a failed client-node call. */
// biome-ignore lint/suspicious/noExplicitAny: Status JSON
export function statusOf(err: unknown): any {
  const e = err as { code?: number; body?: unknown };
  if (typeof e.body === 'string') {
    try {
      return JSON.parse(e.body);
    } catch {
      return { code: e.code, message: e.body };
    }
  }
  return e.body ?? { code: e.code, message: String(err) };
}

/** Expects `fn` to fail with a client-node ApiException; returns its Status body. */
// biome-ignore lint/suspicious/noExplicitAny: Status JSON
export async function expectStatus(fn: () => Promise<unknown>): Promise<any> {
  try {
    await fn();
  } catch (err) {
    return statusOf(err);
  }
  throw new Error('expected the request to fail');
}

export interface WatchEventLine {
  type: string;
  // biome-ignore lint/suspicious/noExplicitAny: watch objects
  object: any;
}

export interface OpenWatch {
  status: number;
  headers: Record<string, string>;
  /** Events received so far, in order. */
  events: WatchEventLine[];
  /** Resolves when the server ends the stream (or it is closed). */
  done: Promise<void>;
  close(): void;
}

/** Opens a raw watch (a GET with `watch=1` in `path`) and collects its newline-delimited JSON events. */
export async function openWatch(
  kc: KubeConfig,
  path: string,
  headers: Record<string, string> = {},
): Promise<OpenWatch> {
  const controller = new AbortController();
  const res = await send(kc, 'GET', path, undefined, headers, controller.signal);
  const events: WatchEventLine[] = [];
  const stream = res.body.stream() as ReadableStream<Uint8Array> | null;
  const done = (async () => {
    if (!stream) return;
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (line) events.push(JSON.parse(line));
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  return { status: res.httpStatusCode, headers: res.headers, events, done, close: () => controller.abort() };
}
