/**
 * The HTTP boundary of the functions: what `reconcile` and `resync` accept before any work is done
 * (method, body size, content type, an optional shared token), and the routing of requests that
 * functions-framework rejects before our handler runs.
 *
 * functions-framework (5.x, `build/src/server.js`) parses every body with body-parser before the
 * function: a body declared `application/json` that is not JSON, an unsupported charset or
 * `Content-Encoding` end in Express's final handler — `400`/`415` with an HTML page, and the error's
 * stack trace on stderr — never in our handler. Pub/Sub push would redeliver such a request until it
 * is dead-lettered. The framework offers no hook for it, so {@link routeFrameworkErrors} wraps
 * Express's `application.handle` (the one the framework's own `express()` copies at creation) to give
 * those errors to our handler instead, which answers them like any malformed request.
 */

import { timingSafeEqual } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import type { Request, Response } from '@google-cloud/functions-framework';
import * as z from 'zod';

/**
 * Largest request body either function accepts, in bytes. A push envelope of a key message is under
 * 2 KiB (names ≤ 253 characters); Cloud Scheduler's resync body is `{}`.
 */
export const MAX_BODY_BYTES = 64 * 1024;

/** Why a request was refused before any work; `status` is what a caller that may retry should get. */
export interface Rejection {
  status: 400 | 401 | 405 | 413 | 415;
  reason: string;
}

/** The error body-parser raised for this request, set by {@link routeFrameworkErrors}. */
const FRAMEWORK_ERROR = Symbol('levelset.frameworkError');
type WithFrameworkError = { [FRAMEWORK_ERROR]?: { status?: number; type?: string; message?: string } };

export interface RequestRules {
  /**
   * Shared token required as `Authorization: Bearer <token>` or `?token=<token>` (Pub/Sub push
   * endpoints can carry a token only in their URL); `undefined`: no check (Cloud Run's IAM
   * authenticates the caller).
   */
  token?: string;
  /** Accept a request without a body (and without a content type); default false. */
  allowEmptyBody?: boolean;
}

const httpEnvSchema = z.object({
  /**
   * Shared token both functions require, for deployments that expose them outside Cloud Run's IAM;
   * at least 32 characters. Unset (the default, and on Cloud Run): no token check.
   */
  LEVELSET_FUNCTIONS_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
});

/**
 * Reads the request rules from the environment (`LEVELSET_FUNCTIONS_TOKEN`).
 * @throws {Error} naming the invalid variable.
 */
export function readRequestRules(env: NodeJS.ProcessEnv = process.env): RequestRules {
  const parsed = httpEnvSchema.safeParse(env);
  if (!parsed.success)
    throw new Error(
      `invalid environment: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return { token: parsed.data.LEVELSET_FUNCTIONS_TOKEN };
}

function tokenMatches(expected: string, given: string | undefined): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

function presentedToken(req: Request): string | undefined {
  const auth = req.headers.authorization;
  const bearer = auth ? /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1] : undefined;
  if (bearer) return bearer;
  const q = req.query?.token;
  return typeof q === 'string' ? q : undefined;
}

/**
 * Checks a request against the functions' HTTP rules, in order: token (401), method `POST` (405),
 * body size ≤ {@link MAX_BODY_BYTES} (413), a body the framework could parse (400/415), content type
 * `application/json` (415).
 * @returns `undefined` when the request is acceptable, else why not. Never throws.
 */
export function rejectRequest(req: Request, rules: RequestRules = {}): Rejection | undefined {
  if (rules.token !== undefined && !tokenMatches(rules.token, presentedToken(req)))
    return { status: 401, reason: 'missing or wrong token' };
  if (req.method !== 'POST') return { status: 405, reason: `method ${req.method} not allowed` };
  const declared = Number(req.headers['content-length'] ?? 0);
  const size = Math.max(req.rawBody?.length ?? 0, Number.isFinite(declared) ? declared : 0);
  if (size > MAX_BODY_BYTES)
    return { status: 413, reason: `body of ${size} bytes exceeds ${MAX_BODY_BYTES} bytes` };
  const parseError = (req as WithFrameworkError)[FRAMEWORK_ERROR];
  if (parseError) {
    const status = parseError.status === 415 ? 415 : parseError.status === 413 ? 413 : 400;
    return { status, reason: `body not readable (${parseError.type ?? 'error'}): ${parseError.message}` };
  }
  if (size === 0 && rules.allowEmptyBody) return undefined;
  if (!req.is('application/json'))
    return { status: 415, reason: `content type ${req.headers['content-type'] ?? '(none)'} not accepted` };
  return undefined;
}

/** The stand-in {@link withoutRequestDomains} gives functions-framework for a request's domain. */
class RequestScope extends EventEmitter {
  /** Runs `fn` now, in the caller's context (a domain's `run`, without entering a domain). */
  run<T>(fn: () => T): T {
    return fn();
  }
}
const DOMAINS_REPLACED = Symbol('levelset.withoutRequestDomains');

/**
 * Makes functions-framework's per-request `node:domain` a stand-in that runs the request as it is.
 *
 * The framework (5.x, function_wrappers.js `wrapHttpFunction`) runs every HTTP request inside a
 * new domain. The first `domain.create()` of a process enables the domain module's async hook for
 * the rest of its life: from then on every promise, inside a domain or not, is created with destroy
 * tracking (Node's `promiseInitHookWithDestroyTracking`) and every async resource passes the hook's
 * `init`. Leaving the domain in the handler (decision 35) kept that cost: `--cpu-prof` of
 * `reconcile` under Foo pushes still spent about a tenth of its CPU in `registerDestroyHook`,
 * node:domain and async_hooks (docs/architecture.md decision 73). With this stand-in no domain is
 * ever created, so the hook is never enabled.
 *
 * The stand-in keeps what the wrapper uses of a domain: `on('error', …)` (never emitted) and
 * `run(fn)`. What changes is what decision 35 already accepted: a throw from a callback outside any
 * promise chain reaches functions-framework's `uncaughtException` handler, which stops the
 * instance, as an unhandled rejection does; a handler's own rejection is still answered 500 by the
 * framework. `http` functions only: the framework's `event` and `cloudevent` wrappers bind their
 * callbacks to `process.domain`, which is then unset. Applies to every `domain.create()` of the
 * process (node:domain is deprecated; nothing else Levelset loads creates one). Idempotent; call
 * before the first request.
 */
export function withoutRequestDomains(): void {
  const domain = createRequire(import.meta.url)('node:domain') as {
    create: () => unknown;
    [DOMAINS_REPLACED]?: true;
  };
  if (domain[DOMAINS_REPLACED]) return;
  domain.create = () => new RequestScope();
  domain[DOMAINS_REPLACED] = true;
}

/** The function target this process serves, read as functions-framework reads it (`--target`, then `FUNCTION_TARGET`). */
export function servedTarget(argv = process.argv.slice(2), env = process.env): string {
  const { values } = parseArgs({ args: argv, options: { target: { type: 'string' } }, strict: false });
  return typeof values.target === 'string' ? values.target : (env.FUNCTION_TARGET ?? 'function');
}

type ExpressApplication = {
  request: object;
  response: object;
  handle(req: IncomingMessage, res: ServerResponse, callback?: (err?: unknown) => void): void;
  [PATCHED]?: true;
};
const PATCHED = Symbol('levelset.routeFrameworkErrors');

/**
 * Makes the Express applications created from now on (the framework creates its own after loading
 * our module) hand a request whose body the framework could not read to `handler` — with the error
 * kept for {@link rejectRequest} and `req.body` unset — instead of Express's final handler. A request
 * declaring a body larger than {@link MAX_BODY_BYTES} goes to `handler` before it is read. Idempotent.
 */
export function routeFrameworkErrors(handler: (req: Request, res: Response) => unknown): void {
  const frameworkRequire = createRequire(import.meta.resolve('@google-cloud/functions-framework'));
  const application = (frameworkRequire('express') as { application: ExpressApplication }).application;
  if (application[PATCHED]) return;
  const original = application.handle;
  application.handle = function handle(req, res, callback) {
    if (callback) return original.call(this, req, res, callback);
    const toHandler = (err: unknown) => {
      // An error after the function answered is not a request to handle again.
      if (res.headersSent) {
        res.end();
        return;
      }
      const r = req as Request & WithFrameworkError;
      r[FRAMEWORK_ERROR] = err as WithFrameworkError[typeof FRAMEWORK_ERROR];
      r.body = undefined;
      // body-parser leaves an unread body on errors; drain it so the connection can be reused.
      req.resume();
      Promise.resolve(handler(r, res as Response)).catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    };
    if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) {
      // Refused unread (`rejectRequest` sees the declared length), with Express's request and
      // response prototypes in place as its `handle` would set them.
      Object.setPrototypeOf(req, this.request);
      Object.setPrototypeOf(res, this.response);
      Object.assign(req, { res });
      Object.assign(res, { req, locals: Object.create(null) });
      return toHandler(undefined);
    }
    return original.call(this, req, res, (err?: unknown) => {
      if (err) return toHandler(err);
      res.statusCode = 404;
      res.end();
    });
  };
  application[PATCHED] = true;
}
