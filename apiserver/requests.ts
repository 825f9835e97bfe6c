/**
 * Measurement hook: every request the local API server answered, with its verb, resource, status and
 * latency, so tests and benchmarks can count "API requests per reconcile".
 */
import { matchesRequest, type RequestInfo, type RequestMatch } from './requestinfo.ts';

/** One answered request. */
export interface RequestLogEntry {
  /** When the request arrived (ms since the epoch). */
  time: number;
  method: string;
  /** RBAC verb (get, list, watch, create, update, patch, delete, deletecollection) or the HTTP method lowercased for non-resource paths. */
  verb: string;
  group: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  path: string;
  /** HTTP status code sent. */
  status: number;
  /** Time to the response headers, ms (for a watch: until the stream started). */
  latencyMs: number;
  /** Authenticated user name (after impersonation). */
  user: string;
}

/** A request-log filter: a {@link RequestMatch} plus status, or a predicate. */
export type RequestFilter =
  | (RequestMatch & { status?: number; resourceOnly?: boolean })
  | ((e: RequestLogEntry) => boolean);

function toInfo(e: RequestLogEntry): RequestInfo {
  return {
    isResource: e.resource !== '',
    verb: e.verb,
    apiGroup: e.group,
    apiVersion: '',
    resource: e.resource,
    subresource: e.subresource,
    namespace: e.namespace,
    name: e.name,
    path: e.path,
  };
}

function test(filter: RequestFilter | undefined, e: RequestLogEntry): boolean {
  if (!filter) return true;
  if (typeof filter === 'function') return filter(e);
  if (filter.status !== undefined && filter.status !== e.status) return false;
  if (filter.resourceOnly && !e.resource) return false;
  return matchesRequest(filter, toInfo(e));
}

/** The request log; keeps the last `maxEntries` entries (default 100 000), counters are unbounded. */
export class RequestLog {
  private log: RequestLogEntry[] = [];
  private readonly maxEntries: number;
  private verbCounts = new Map<string, number>();

  constructor(maxEntries = 100_000) {
    this.maxEntries = maxEntries;
  }

  /** @internal Appends an entry. */
  record(e: RequestLogEntry): void {
    this.log.push(e);
    if (this.log.length > this.maxEntries) this.log.splice(0, this.log.length - this.maxEntries);
    this.verbCounts.set(e.verb, (this.verbCounts.get(e.verb) ?? 0) + 1);
  }

  /** Entries in arrival order, optionally filtered. */
  entries(filter?: RequestFilter): RequestLogEntry[] {
    return this.log.filter((e) => test(filter, e));
  }

  /** How many kept entries match. */
  count(filter?: RequestFilter): number {
    let n = 0;
    for (const e of this.log) if (test(filter, e)) n++;
    return n;
  }

  /** Requests per verb since the last {@link RequestLog.clear}. */
  countsByVerb(): Record<string, number> {
    return Object.fromEntries(this.verbCounts);
  }

  /** Forgets all entries and counters. */
  clear(): void {
    this.log = [];
    this.verbCounts = new Map();
  }
}
