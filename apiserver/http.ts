/**
 * The HTTP front of the local API server (node:http): routing of kube-apiserver paths, request info,
 * authentication, impersonation and RBAC, fault injection, the request log, body decoding, content
 * negotiation, and `Status` responses for every failure.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import YAML from 'yaml';
import { apiGroup, apiGroupList, apiResourceList, apiVersions, VERSION_INFO } from './discovery.ts';
import type { FaultInjector } from './faults.ts';
import { negotiate, partialObjectMetadata, type Representation } from './negotiation.ts';
import { openapiV3 } from './openapi.ts';
import { decodeProtobuf } from './protobuf.ts';
import { type Authenticator, type Authorizer, serviceAccountUser, type UserInfo } from './rbac.ts';
import { type DeleteOptions, type ListOptions, now, type Registry, type WriteOptions } from './registry.ts';
import type { RequestInfo } from './requestinfo.ts';
import type { RequestLog } from './requests.ts';
import { groupVersion, type KubeObject, type ResourceType } from './resources.ts';
import {
  ApiError,
  badRequest,
  conflict,
  type FieldError,
  genericStatus,
  internalError,
  invalid,
  methodNotAllowed,
  OPTIMISTIC_LOCK_MESSAGE,
  pathNotFound,
  unauthorized,
} from './status.ts';
import { table, tableWatchRender } from './tables.ts';
import { bookmarkTypeOf, type WatchHub } from './watch.ts';
import { type AdmissionAttributes, type AdmissionWebhooks, applyWithWebhookFields } from './webhooks.ts';

/** Everything the HTTP layer dispatches to. */
export interface HttpContext {
  registry: Registry;
  /** The registered admission webhooks, called on every write (webhooks.ts). */
  admission: AdmissionWebhooks;
  watches: WatchHub;
  faults: FaultInjector;
  requests: RequestLog;
  authn: Authenticator;
  authz: Authorizer;
  /** `host:port` for `/api`'s serverAddressByClientCIDRs. */
  address(): string;
}

const MAX_BODY_BYTES = 3 * 1024 * 1024;

const TRUE_VALUES = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);

/** Parses the request path into kube-apiserver's RequestInfo (k8s.io/apiserver/pkg/endpoints/request). */
export function requestInfo(method: string, url: URL): RequestInfo {
  const path = url.pathname.replace(/\/+$/, '') || '/';
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  const info: RequestInfo = {
    isResource: false,
    verb: method.toLowerCase(),
    apiGroup: '',
    apiVersion: '',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
    path,
  };
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 3) {
    info.apiVersion = parts[1] as string;
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    info.apiGroup = parts[1] as string;
    info.apiVersion = parts[2] as string;
    rest = parts.slice(3);
  } else return info;
  info.isResource = true;
  let watchPath = false;
  if (rest[0] === 'watch') {
    watchPath = true;
    rest = rest.slice(1);
  }
  if (rest[0] === 'namespaces' && rest.length >= 2) {
    info.namespace = rest[1] as string;
    if (rest.length > 2 && rest[2] !== 'status' && rest[2] !== 'finalize') rest = rest.slice(2);
  }
  info.resource = rest[0] ?? '';
  info.name = rest[1] ?? '';
  info.subresource = rest[2] ?? '';
  if (rest.length > 3) info.subresource = rest.slice(2).join('/');
  const isWatch = watchPath || TRUE_VALUES.has(url.searchParams.get('watch') ?? '');
  switch (method) {
    case 'GET':
    case 'HEAD':
      info.verb = info.name ? 'get' : 'list';
      if (isWatch) info.verb = 'watch';
      break;
    case 'POST':
      info.verb = 'create';
      break;
    case 'PUT':
      info.verb = 'update';
      break;
    case 'PATCH':
      info.verb = 'patch';
      break;
    case 'DELETE':
      info.verb = info.name ? 'delete' : 'deletecollection';
      break;
  }
  return info;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) {
      throw new ApiError({
        message: `Request entity too large: limit is ${MAX_BODY_BYTES}`,
        reason: 'RequestEntityTooLarge',
        code: 413,
      });
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? 'application/json').split(';')[0]?.trim().toLowerCase() ?? '';
}

function decode(raw: Buffer, type: string): unknown {
  if (type === 'application/vnd.kubernetes.protobuf') return raw.length ? decodeProtobuf(raw) : undefined;
  if (type !== '' && !type.includes('json') && !type.includes('yaml')) {
    throw new ApiError({
      message: `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`,
      reason: 'UnsupportedMediaType',
      code: 415,
    });
  }
  const text = raw.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    if (type.includes('yaml')) return YAML.parse(text);
    return JSON.parse(text);
  } catch (err) {
    throw badRequest(`error decoding body: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function writeOptions(url: URL, req: IncomingMessage, user?: UserInfo): WriteOptions {
  const dryRun = url.searchParams.getAll('dryRun');
  for (const d of dryRun)
    if (d !== 'All') throw badRequest(`Invalid dryRun value "${d}": supported values are "All"`);
  const fv = url.searchParams.get('fieldValidation') ?? 'Warn';
  if (!['Strict', 'Warn', 'Ignore'].includes(fv)) {
    throw badRequest(
      `fieldValidation parameter: Invalid value: "${fv}": fieldValidation must be one of "Ignore", "Warn", or "Strict"`,
    );
  }
  return {
    dryRun: dryRun.includes('All'),
    fieldManager: url.searchParams.get('fieldManager') ?? undefined,
    userAgent: req.headers['user-agent'] ?? '',
    force: url.searchParams.has('force') ? TRUE_VALUES.has(url.searchParams.get('force') ?? '') : undefined,
    fieldValidation: fv as WriteOptions['fieldValidation'],
    warnings: [],
    ...(user ? { user: { username: user.name, uid: user.uid, groups: user.groups } } : {}),
  };
}

function send(
  res: ServerResponse,
  code: number,
  body: unknown,
  rep: Representation = { as: 'object', yaml: false },
  warnings: string[] = [],
): void {
  if (res.headersSent) return;
  const text = rep.yaml ? YAML.stringify(body) : JSON.stringify(body);
  const headers: Record<string, string | string[]> = {
    'Content-Type': rep.yaml ? 'application/yaml' : 'application/json',
    'Cache-Control': 'no-cache, private',
  };
  if (warnings.length) headers.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  res.writeHead(code, headers);
  res.end(text);
}

function sendError(res: ServerResponse, err: ApiError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-cache, private',
  };
  if (err.status.details?.retryAfterSeconds !== undefined)
    headers['Retry-After'] = String(err.status.details.retryAfterSeconds);
  res.writeHead(err.code, headers);
  res.end(JSON.stringify(err.status));
}

function numberParam(url: URL, name: string): number | undefined {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw badRequest(`invalid value for ${name}: ${v}`);
  return Number(v);
}

/** Returns the request handler for a server. */
export function createHandler(ctx: HttpContext) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const started = Date.now();
    const url = new URL(req.url ?? '/', 'http://localhost');
    const info = requestInfo(req.method ?? 'GET', url);
    let user: UserInfo | undefined;
    let logged = false;
    const log = () => {
      if (logged) return;
      logged = true;
      ctx.requests.record({
        time: started,
        method: req.method ?? 'GET',
        verb: info.verb,
        group: info.apiGroup,
        resource: info.resource,
        subresource: info.subresource,
        namespace: info.namespace,
        name: info.name,
        path: info.path,
        status: res.statusCode,
        latencyMs: Date.now() - started,
        user: user?.name ?? '',
      });
    };
    res.on('finish', log);
    res.on('close', log);
    (async () => {
      await ctx.faults.waitWhilePaused();
      const delay = ctx.faults.latencyFor(info);
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      // A client gone meanwhile: kube-apiserver's handler sees its request's context cancelled and
      // does nothing more (nor takes an injected failure meant for a later request).
      if (req.socket.destroyed) return;
      const failure = ctx.faults.takeFailure(info);
      if (failure) {
        if ('reset' in failure) {
          req.socket.destroy();
          return;
        }
        if (failure.status === 409 && info.name) {
          throw conflict(
            { group: info.apiGroup, resource: info.resource },
            info.name,
            OPTIMISTIC_LOCK_MESSAGE,
          );
        }
        const retryAfter = failure.retryAfterSeconds ?? (failure.status === 429 ? 1 : undefined);
        throw genericStatus(failure.status, failure.retryAfterSeconds === null ? undefined : retryAfter);
      }
      user = ctx.authn.authenticate(req.headers.authorization);
      if (!user) throw unauthorized();
      user = impersonate(ctx, req, user);
      if (!ctx.authz.allowed(user, info)) throw ctx.authz.forbiddenError(user, info);
      await route(ctx, req, res, url, info, user, () => log());
    })().catch((err: unknown) => {
      if (err instanceof ApiError) sendError(res, err);
      else if (req.destroyed && (err as { code?: string }).code === 'ECONNRESET') {
        // The client went away while its request was read (e.g. a killed process): nothing to answer.
        res.destroy();
      } else {
        console.error('local apiserver: unexpected error', err);
        sendError(res, internalError(err instanceof Error ? err.message : String(err)));
      }
    });
  };
}

/** Applies `Impersonate-User`/`Impersonate-Group` headers (requires the `impersonate` verb). */
function impersonate(ctx: HttpContext, req: IncomingMessage, user: UserInfo): UserInfo {
  const target = req.headers['impersonate-user'];
  const groups = req.headersDistinct['impersonate-group'] ?? [];
  if (typeof target !== 'string' || !target) {
    if (groups.length) throw badRequest(`requested [${groups.join(' ')}] without impersonating a user`);
    return user;
  }
  const check = (resource: string, name: string, namespace = '', group = '') => {
    const info: RequestInfo = {
      isResource: true,
      verb: 'impersonate',
      apiGroup: group,
      apiVersion: 'v1',
      resource,
      subresource: '',
      namespace,
      name,
      path: '',
    };
    if (!ctx.authz.allowed(user, info)) throw ctx.authz.forbiddenError(user, info);
  };
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(target);
  let next: UserInfo;
  if (sa) {
    check('serviceaccounts', sa[2] as string, sa[1] as string);
    next = serviceAccountUser(sa[1] as string, sa[2] as string);
  } else {
    check('users', target);
    next = { name: target, groups: [] };
  }
  for (const g of groups) check('groups', g);
  next.groups = [
    ...new Set([
      ...(sa ? next.groups : []),
      ...groups,
      ...(target === 'system:anonymous' ? [] : ['system:authenticated']),
    ]),
  ];
  return next;
}

async function route(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  info: RequestInfo,
  user: UserInfo,
  onWatchStart: () => void,
): Promise<void> {
  const path = info.path;
  const method = req.method ?? 'GET';
  if (!info.isResource) {
    if (method !== 'GET' && method !== 'HEAD') throw pathNotFound();
    if (['/healthz', '/livez', '/readyz'].includes(path) || /^\/(healthz|livez|readyz)\//.test(path)) {
      res.writeHead(200, {
        'Content-Type': 'text/plain; charset=utf-8',
        'X-Content-Type-Options': 'nosniff',
      });
      res.end('ok');
      return;
    }
    if (path === '/version') return send(res, 200, VERSION_INFO);
    if (path === '/openapi/v3' || path.startsWith('/openapi/v3/')) {
      const doc = openapiV3(ctx.registry.resources, path);
      if (doc === undefined) throw pathNotFound();
      return send(res, 200, doc);
    }
    if (path === '/api') return send(res, 200, apiVersions(ctx.address()));
    if (path === '/api/v1') return send(res, 200, apiResourceList(ctx.registry.resources, '', 'v1'));
    if (path === '/apis') return send(res, 200, apiGroupList(ctx.registry.resources));
    const g = /^\/apis\/([^/]+)(?:\/([^/]+))?$/.exec(path);
    if (g) {
      const group = g[1] as string;
      const versions = ctx.registry.resources.versions(group);
      if (versions.length === 0 || (g[2] && !versions.includes(g[2]))) throw pathNotFound();
      if (!g[2])
        return send(res, 200, {
          kind: 'APIGroup',
          apiVersion: 'v1',
          ...apiGroup(ctx.registry.resources, group),
        });
      return send(res, 200, apiResourceList(ctx.registry.resources, group, g[2]));
    }
    throw pathNotFound();
  }

  // Resolve the resource: namespaced paths name a namespaced resource; `/namespaces/x/status` is the namespace's.
  const resources = ctx.registry.resources;
  const t = resources.byPlural(info.apiGroup, info.apiVersion, info.resource);
  if (!t) throw pathNotFound();
  const namespace = t.namespaced ? info.namespace || undefined : undefined;
  if (!t.namespaced && info.namespace && t.plural !== 'namespaces') throw pathNotFound();
  const name = info.name;
  const sub = info.subresource;
  if (sub && !(sub === 'status' && t.statusSubresource) && !t.subresources.includes(sub))
    throw pathNotFound();
  if (t.namespaced && !namespace && (name || info.verb === 'create' || info.verb === 'deletecollection')) {
    // Namespaced resources are served across namespaces for list and watch only.
    if (name) throw pathNotFound();
    throw methodNotAllowed();
  }
  if (t.virtual) return virtualCreate(ctx, req, res, t, info, user);
  // A verb the resource's storage does not implement has no route (kube-apiserver's installer
  // registers one per verb the storage serves): 405, as for a DELETE of the namespaces collection.
  if (!sub && t.verbs && !t.verbs.includes(info.verb)) throw methodNotAllowed();
  if (sub === 'token') return tokenRequest(ctx, req, res, t, namespace, name);
  if (sub === 'binding') return bindPod(ctx, req, res, t, namespace, name);
  if (sub === 'finalize' && info.verb !== 'update') throw methodNotAllowed();
  const rep = negotiate(req.headers.accept);
  const registry = ctx.registry;
  const render = (obj: KubeObject): unknown =>
    rep.as === 'metadata' ? partialObjectMetadata(obj, rep.version) : obj;
  // Writes go through the registered admission webhooks (webhooks.ts): the request's attributes, the
  // stored object, and a write's options as a dry run (its warnings dropped) or as asked.
  const admission = (
    opts: WriteOptions,
    operation: AdmissionAttributes['operation'],
    objectName: string,
    oldObject?: KubeObject,
    options?: Record<string, unknown>,
  ): AdmissionAttributes => ({
    t,
    operation,
    namespace,
    name: objectName,
    subresource: sub || undefined,
    user,
    dryRun: opts.dryRun ?? false,
    oldObject,
    options,
  });
  const stored = (): KubeObject | undefined => {
    if (!ctx.admission.registered()) return undefined; // no webhook: the write runs as before
    try {
      return registry.get(t, namespace, name);
    } catch {
      return undefined;
    }
  };
  const scratch = (opts: WriteOptions, dryRun: boolean): WriteOptions =>
    dryRun ? { ...opts, dryRun: true, warnings: [] } : opts;

  switch (info.verb) {
    case 'get': {
      const obj = registry.get(t, namespace, name, url.searchParams.get('resourceVersion') ?? undefined);
      if (rep.as === 'table')
        return send(
          res,
          200,
          table(
            t,
            [obj],
            { resourceVersion: obj.metadata.resourceVersion },
            rep.version,
            url.searchParams.get('includeObject'),
          ),
          rep,
        );
      return send(res, 200, render(obj), rep);
    }
    case 'list': {
      const opts: ListOptions = {
        labelSelector: url.searchParams.get('labelSelector') ?? undefined,
        fieldSelector: url.searchParams.get('fieldSelector') ?? undefined,
        limit: numberParam(url, 'limit'),
        continue: url.searchParams.get('continue') ?? undefined,
        resourceVersion: url.searchParams.get('resourceVersion') ?? undefined,
        resourceVersionMatch: url.searchParams.get('resourceVersionMatch') ?? undefined,
      };
      const result = registry.list(t, namespace, opts);
      const meta: Record<string, unknown> = { resourceVersion: result.resourceVersion };
      if (result.continue) meta.continue = result.continue;
      if (result.remainingItemCount !== undefined) meta.remainingItemCount = result.remainingItemCount;
      const items = result.items.map((o) => registry.toVersion(t, o));
      if (rep.as === 'table')
        return send(res, 200, table(t, items, meta, rep.version, url.searchParams.get('includeObject')), rep);
      if (rep.as === 'metadata') {
        return send(
          res,
          200,
          {
            kind: 'PartialObjectMetadataList',
            apiVersion: `meta.k8s.io/${rep.version}`,
            metadata: meta,
            items: items.map((o) => partialObjectMetadata(o, rep.version)),
          },
          rep,
        );
      }
      // Built-in list items carry no apiVersion/kind on the wire; custom resources' do.
      const wireItems = t.custom ? items : items.map(({ apiVersion: _a, kind: _k, ...o }) => o);
      return send(
        res,
        200,
        { kind: t.listKind, apiVersion: groupVersion(t), metadata: meta, items: wireItems },
        rep,
      );
    }
    case 'watch': {
      const rvParam = url.searchParams.get('resourceVersion') ?? undefined;
      const fieldSelector = [url.searchParams.get('fieldSelector'), name ? `metadata.name=${name}` : '']
        .filter(Boolean)
        .join(',');
      ctx.watches.serve(
        {
          type: t,
          namespace,
          labelSelector: url.searchParams.get('labelSelector') ?? undefined,
          fieldSelector: fieldSelector || undefined,
          resourceVersion: rvParam,
          allowWatchBookmarks: TRUE_VALUES.has(url.searchParams.get('allowWatchBookmarks') ?? ''),
          sendInitialEvents: TRUE_VALUES.has(url.searchParams.get('sendInitialEvents') ?? ''),
          timeoutSeconds: numberParam(url, 'timeoutSeconds'),
          render:
            rep.as === 'table'
              ? tableWatchRender(t, rep.version, url.searchParams.get('includeObject'))
              : render,
          bookmarkType:
            rep.as === 'metadata'
              ? { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${rep.version}` }
              : bookmarkTypeOf(t),
        },
        res,
      );
      onWatchStart();
      return;
    }
    case 'create': {
      if (name) throw methodNotAllowed();
      const opts = writeOptions(url, req, user);
      const body = decode(await readBody(req), mediaType(req)) as KubeObject;
      const obj = await ctx.admission.admit(
        admission(opts, 'CREATE', body?.metadata?.name ?? ''),
        body,
        (o, dryRun) => registry.create(t, namespace, dryRun ? structuredClone(o) : o, scratch(opts, dryRun)),
        (o) => o,
        opts.warnings ?? [],
      );
      return send(res, 201, render(obj), rep, opts.warnings);
    }
    case 'update': {
      const opts = writeOptions(url, req, user);
      const body = decode(await readBody(req), mediaType(req)) as KubeObject;
      const old = stored();
      const obj = await ctx.admission.admit(
        admission(opts, old ? 'UPDATE' : 'CREATE', name, old),
        body,
        (o, dryRun) =>
          registry.update(
            t,
            namespace,
            name,
            dryRun ? structuredClone(o) : o,
            scratch(opts, dryRun),
            sub || undefined,
          ),
        (o) => o,
        opts.warnings ?? [],
      );
      return send(res, 200, render(obj), rep, opts.warnings);
    }
    case 'patch': {
      const opts = writeOptions(url, req, user);
      const type = mediaType(req);
      const body = decode(await readBody(req), type);
      if (body === undefined)
        throw badRequest('the server rejected our request due to an error in our request');
      // The patched object is what mutating webhooks see; one they change is stored whole (webhooks.ts).
      const old = stored();
      const attributes = admission(opts, old ? 'UPDATE' : 'CREATE', name, old);
      const patch = (o: WriteOptions, given: unknown = body) =>
        registry.patch(t, namespace, name, type, given, o, sub || undefined);
      const patched = ctx.admission.mayMeet(attributes) ? patch(scratch(opts, true)).object : undefined;
      const { object, created } = await ctx.admission.admit(
        attributes,
        patched,
        (o, dryRun) => {
          if (o === patched || !o) return patch(scratch(opts, dryRun));
          const applied =
            type === 'application/apply-patch+yaml' && patched && applyWithWebhookFields(body, patched, o);
          if (applied) return patch(scratch(opts, dryRun), applied);
          const whole = structuredClone(o);
          if (!old)
            return { object: registry.create(t, namespace, whole, scratch(opts, dryRun)), created: true };
          return {
            object: registry.update(t, namespace, name, whole, scratch(opts, dryRun), sub || undefined),
            created: false,
          };
        },
        (r) => r.object,
        opts.warnings ?? [],
      );
      return send(res, created ? 201 : 200, render(object), rep, opts.warnings);
    }
    case 'delete': {
      const opts = writeOptions(url, req);
      const options = deleteOptions(url, decode(await readBody(req), mediaType(req)) as DeleteOptions);
      opts.dryRun = options.dryRun?.includes('All') ?? false;
      const result = await ctx.admission.admit(
        admission(opts, 'DELETE', name, stored(), options as Record<string, unknown>),
        undefined,
        (_, dryRun) => registry.delete(t, namespace, name, options, scratch(opts, dryRun)),
        (r) => r.object,
        opts.warnings ?? [],
      );
      if (result.object) return send(res, 200, render(result.object), rep);
      return send(res, 200, result.status, rep);
    }
    case 'deletecollection': {
      const opts = writeOptions(url, req);
      const options = deleteOptions(url, decode(await readBody(req), mediaType(req)) as DeleteOptions);
      const items = registry.deleteCollection(
        t,
        namespace,
        {
          labelSelector: url.searchParams.get('labelSelector') ?? undefined,
          fieldSelector: url.searchParams.get('fieldSelector') ?? undefined,
        },
        options,
        { ...opts, dryRun: options.dryRun?.includes('All') ?? false },
      );
      const wireItems = t.custom ? items : items.map(({ apiVersion: _a, kind: _k, ...o }) => o);
      return send(
        res,
        200,
        {
          kind: t.listKind,
          apiVersion: groupVersion(t),
          metadata: { resourceVersion: String(registry.store.currentRv()) },
          items: wireItems,
        },
        rep,
      );
    }
    default:
      throw methodNotAllowed();
  }
}

/**
 * A DELETE's options: its body when it has one, else its query parameters, never both: kube-apiserver's
 * handlers (endpoints/handlers/delete.go DeleteResource, DeleteCollection) decode the body and read
 * the query only when the body is empty, so `?gracePeriodSeconds=0` beside a body is ignored.
 */
function deleteOptions(url: URL, body: DeleteOptions | undefined): DeleteOptions {
  if (body !== undefined) return body;
  const out: DeleteOptions = {};
  const policy = url.searchParams.get('propagationPolicy');
  if (policy) out.propagationPolicy = policy;
  const grace = url.searchParams.get('gracePeriodSeconds');
  if (grace) out.gracePeriodSeconds = Number(grace);
  const orphan = url.searchParams.get('orphanDependents');
  if (orphan) out.orphanDependents = TRUE_VALUES.has(orphan);
  const dryRun = url.searchParams.getAll('dryRun');
  if (dryRun.length > 0) out.dryRun = dryRun;
  return out;
}

/** POST …/serviceaccounts/{name}/token (TokenRequest). */
async function tokenRequest(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  t: ResourceType,
  namespace: string | undefined,
  name: string,
): Promise<void> {
  if (req.method !== 'POST') throw methodNotAllowed();
  const body = (decode(await readBody(req), mediaType(req)) ?? {}) as {
    spec?: { expirationSeconds?: number; audiences?: string[] };
  };
  const sa = ctx.registry.getStored(t, namespace, name);
  const expirationSeconds = body.spec?.expirationSeconds ?? 3600;
  if (expirationSeconds < 600) {
    throw new ApiError({
      message: `TokenRequest.authentication.k8s.io "${name}" is invalid: spec.expirationSeconds: Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes`,
      reason: 'Invalid',
      details: {
        name,
        group: 'authentication.k8s.io',
        kind: 'TokenRequest',
        causes: [
          {
            reason: 'FieldValueInvalid',
            message: `Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes`,
            field: 'spec.expirationSeconds',
          },
        ],
      },
      code: 422,
    });
  }
  const { token, expirationTimestamp } = ctx.authn.issueServiceAccountToken(
    namespace ?? '',
    name,
    sa.metadata.uid ?? '',
    expirationSeconds,
  );
  send(res, 201, {
    kind: 'TokenRequest',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { name, namespace, creationTimestamp: null },
    spec: {
      audiences: body.spec?.audiences ?? ['https://kubernetes.default.svc'],
      expirationSeconds,
      boundObjectRef: null,
    },
    status: { token, expirationTimestamp },
  });
}

/**
 * `POST pods/NAME/binding`, the scheduler's write (pkg/registry/core/pod/storage BindingREST.Create →
 * setPodNodeAndMetadata): sets `spec.nodeName`, the Binding's annotations and `PodScheduled=True`;
 * answers `201` with a Success Status. A pod already on a node: `409` (`pod NAME is already assigned
 * to node "N"`); a Binding without `target.name`: `422`.
 */
async function bindPod(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  t: ResourceType,
  namespace: string | undefined,
  name: string,
): Promise<void> {
  if (req.method !== 'POST') throw methodNotAllowed();
  const url = new URL(req.url ?? '/', 'http://localhost');
  const binding = (decode(await readBody(req), mediaType(req)) ?? {}) as {
    metadata?: { name?: string; annotations?: Record<string, string> };
    target?: { kind?: string; name?: string };
  };
  if (binding.metadata?.name !== name) throw badRequest('name in URL does not match name in Binding object');
  const errs: FieldError[] = [];
  if (binding.target?.kind && binding.target.kind !== 'Node')
    errs.push({
      type: 'FieldValueNotSupported',
      field: 'target.kind',
      detail: `Unsupported value: "${binding.target.kind}": supported values: "Node"`,
    });
  if (!binding.target?.name)
    errs.push({ type: 'FieldValueRequired', field: 'target.name', detail: 'Required value' });
  if (errs.length) throw invalid('Binding', '', name, errs);
  const pod = structuredClone(ctx.registry.get(t, namespace, name)) as KubeObject & {
    spec: { nodeName?: string };
    status?: { conditions?: Record<string, unknown>[] };
  };
  if (pod.spec.nodeName)
    throw conflict(
      { group: '', resource: 'pods/binding' },
      name,
      `pod ${name} is already assigned to node "${pod.spec.nodeName}"`,
    );
  pod.spec.nodeName = binding.target?.name;
  if (binding.metadata?.annotations)
    pod.metadata.annotations = { ...pod.metadata.annotations, ...binding.metadata.annotations };
  const conditions = (pod.status?.conditions ?? []).filter((c) => c.type !== 'PodScheduled');
  const was = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  conditions.push({
    type: 'PodScheduled',
    status: 'True',
    lastProbeTime: null,
    lastTransitionTime: was?.status === 'True' ? was.lastTransitionTime : now(),
  });
  pod.status = { ...pod.status, conditions };
  const opts = writeOptions(url, req);
  ctx.registry.update(t, namespace, name, pod, opts, 'binding');
  send(res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
}

/**
 * Create-only review resources, answered and not stored (pkg/registry/authorization and
 * authentication's REST): SelfSubjectReview (the requester's user), SelfSubjectAccessReview (may
 * the requester …), SubjectAccessReview and LocalSubjectAccessReview (may `spec.user`/`spec.groups`
 * …, the local one within its namespace), decided by the RBAC authorizer.
 */
async function virtualCreate(
  ctx: HttpContext,
  req: IncomingMessage,
  res: ServerResponse,
  t: ResourceType,
  info: RequestInfo,
  user: UserInfo,
): Promise<void> {
  if (info.verb !== 'create') throw methodNotAllowed();
  const body = (decode(await readBody(req), mediaType(req)) ?? {}) as {
    spec?: Record<string, Record<string, string> | undefined> & {
      user?: string;
      groups?: string[];
      uid?: string;
    };
  };
  const head = { kind: t.kind, apiVersion: groupVersion(t), metadata: { creationTimestamp: null } };
  if (t.kind === 'SelfSubjectReview') {
    const userInfo = { username: user.name, ...(user.uid ? { uid: user.uid } : {}), groups: user.groups };
    return send(res, 201, { ...head, status: { userInfo } });
  }
  const spec = body.spec ?? {};
  const invalid = (field: string, detail: string) =>
    new ApiError({
      message: `${t.kind}.authorization.k8s.io "" is invalid: ${field}: ${detail}`,
      reason: 'Invalid',
      details: {
        group: 'authorization.k8s.io',
        kind: t.kind,
        causes: [{ reason: 'FieldValueInvalid', message: detail, field }],
      },
      code: 422,
    });
  const subject =
    t.kind === 'SelfSubjectAccessReview' ? user : { name: spec.user ?? '', groups: spec.groups ?? [] };
  if (t.kind !== 'SelfSubjectAccessReview' && !subject.name && subject.groups.length === 0)
    throw invalid('spec.user', 'Invalid value: "": at least one of user or group must be specified');
  const ra = spec.resourceAttributes;
  const nra = spec.nonResourceAttributes;
  if (!ra && !nra)
    throw invalid(
      'spec.resourceAttributes',
      'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified',
    );
  if (t.kind === 'LocalSubjectAccessReview' && (ra?.namespace ?? '') !== info.namespace)
    throw badRequest(`spec.resourceAttributes.namespace must match namespace: ${info.namespace}`);
  const attrs: RequestInfo = ra
    ? {
        isResource: true,
        verb: ra.verb ?? '',
        apiGroup: ra.group ?? '',
        apiVersion: ra.version ?? '',
        resource: ra.resource ?? '',
        subresource: ra.subresource ?? '',
        namespace: ra.namespace ?? '',
        name: ra.name ?? '',
        path: '',
      }
    : {
        isResource: false,
        verb: nra?.verb ?? '',
        apiGroup: '',
        apiVersion: '',
        resource: '',
        subresource: '',
        namespace: '',
        name: '',
        path: nra?.path ?? '',
      };
  const allowed = ctx.authz.allowed(subject, attrs);
  const metadata =
    t.kind === 'LocalSubjectAccessReview' ? { ...head.metadata, namespace: info.namespace } : head.metadata;
  send(res, 201, {
    ...head,
    metadata,
    spec,
    status: allowed ? { allowed: true, reason: 'RBAC: allowed' } : { allowed: false },
  });
}
