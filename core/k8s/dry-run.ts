/**
 * Server-side dry-run of every write (`dryRun=All`, Kubernetes API concepts "Dry-run"): the API
 * server runs admission, defaulting, the patch or apply and validation, and answers the object it
 * would store, without storing it. {@link dryRunKubeConfig} wraps a KubeConfig so that every
 * POST/PUT/PATCH/DELETE any client makes with it (client-node's generated APIs, KubernetesObjectApi,
 * the kit's ResourceClient, the Event recorder) carries `dryRun=All` (a DELETE with a body in its
 * `DeleteOptions` as well, where kube-apiserver reads it then) and is logged: what
 * `levelset plan` needs, and nothing a reconcile writes through it can persist.
 *
 * The kit's ResourceClient (functions/kit/client.ts) adds to each of its writes the object as it was
 * (`before`, one GET) and as the API server answered (`after`), so that the diff of each write is
 * known; a write made through another client is logged as sent (method, path, body).
 */
import { KubeConfig, type KubernetesObject, type RequestContext } from '@kubernetes/client-node';

/** One write sent as a dry-run. */
export interface DryRunWrite {
  /** `POST`, `PUT`, `PATCH` or `DELETE`. */
  method: string;
  /** The request path, e.g. `/apis/apps/v1/namespaces/team-a/deployments/web` (no query). */
  path: string;
  /** `Content-Type` of the body (e.g. `application/apply-patch+yaml`); `undefined` without a body. */
  contentType?: string;
  /** The body as sent (decoded JSON when it is JSON). */
  body?: unknown;
  /** The kit's writes: the live object before the write; `undefined` when it did not exist (a create). */
  before?: KubernetesObject;
  /** The kit's writes: the API server's answer, the object as the write would leave it (not for DELETE). */
  after?: KubernetesObject;
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const logs = new WeakMap<KubeConfig, DryRunWrite[]>();
const requests = new WeakMap<RequestContext, DryRunWrite>();

function decodeBody(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

/**
 * A KubeConfig like `kubeConfig` (same clusters, users, authentication, connection pool) whose every
 * write carries `dryRun=All`, and the log of those writes, in order.
 */
export function dryRunKubeConfig(kubeConfig: KubeConfig): { kubeConfig: KubeConfig; writes: DryRunWrite[] } {
  const writes: DryRunWrite[] = [];
  // A view of the instance: every member is read through to `kubeConfig` (its private state
  // included, as its own methods run on it), only authentication is extended.
  const view = Object.create(kubeConfig) as KubeConfig;
  view.applySecurityAuthentication = async (context: RequestContext) => {
    await kubeConfig.applySecurityAuthentication(context);
    const method = String(context.getHttpMethod());
    if (!WRITE_METHODS.has(method)) return;
    context.setQueryParam('dryRun', 'All');
    const contentType = context.getHeaders()['Content-Type'];
    let body = context.getBody();
    if (method === 'DELETE' && body !== undefined && body !== '') {
      // kube-apiserver reads a DELETE's options from its body when it has one and ignores the query
      // then (endpoints/handlers/delete.go DeleteResource): the dry-run must be in the body too, or
      // the object is deleted for real.
      const options = decodeBody(body);
      if (options === null || typeof options !== 'object')
        throw new Error(`a DELETE's body is not DeleteOptions: ${String(body).slice(0, 100)}`);
      body = JSON.stringify({ ...options, dryRun: ['All'] });
      context.setBody(body);
    }
    const write: DryRunWrite = {
      method,
      path: new URL(context.getUrl()).pathname,
      ...(contentType ? { contentType } : {}),
      ...(body !== undefined && body !== '' ? { body: decodeBody(body) } : {}),
    };
    writes.push(write);
    requests.set(context, write);
  };
  if (!(view instanceof KubeConfig)) throw new Error('not a KubeConfig');
  logs.set(view, writes);
  return { kubeConfig: view, writes };
}

/** `true` when `kubeConfig` came from {@link dryRunKubeConfig}: its writes are not persisted. */
export function isDryRun(kubeConfig: KubeConfig): boolean {
  return logs.has(kubeConfig);
}

/** The logged write of a request made through a {@link dryRunKubeConfig}, to add `before`/`after` to. */
export function dryRunWriteOf(context: RequestContext): DryRunWrite | undefined {
  return requests.get(context);
}
