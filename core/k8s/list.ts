/**
 * Paginated LIST (`limit`/`continue`), as client-go's `pager.ListPager`: memory stays bounded by one
 * page however large the collection.
 */
import { ApiException, HttpMethod, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { itemExponentialBackoffMs } from '../backoff.ts';
import type { ResourceType } from '../contract/controller.ts';
import { apiStatusOf, retryAfterMsOf } from './errors.ts';
import { jsonRequester, METADATA_LIST_ACCEPT, resourcePath } from './rest.ts';

/** One page of a LIST: its items and the `continue` token of the next page (absent or `""` on the last). */
export interface ListPage<T> {
  items: T[];
  metadata?: { _continue?: string };
}

/** Attempts of one page before its error is thrown, when the API server answers 429 or 5xx. */
export const PAGE_ATTEMPTS = 5;
/** The wait before a page's next attempt without a `Retry-After`: 100 ms doubling (ms). */
const PAGE_RETRY_BASE_MS = 100;
/** The longest wait before a page's next attempt, `Retry-After` included (ms). */
const PAGE_RETRY_MAX_MS = 10_000;

/**
 * One page, attempted again (up to {@link PAGE_ATTEMPTS} in all) while the API server answers 429
 * or 5xx: after its `Retry-After` when it gives one, else after 100 ms doubling, at most 10 s. As
 * client-go's rest client retries a request that asks to wait, so that one rate-limited page does
 * not cost a whole enumeration (the resync's: every key of a controller, until the next resync).
 * @throws the last error, or at once an error that is no 429 or 5xx (e.g. 410 Gone for an expired `continue` token)
 */
async function fetchWithRetries<T>(
  fetchPage: (continueToken: string | undefined) => Promise<ListPage<T>>,
  continueToken: string | undefined,
): Promise<ListPage<T>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetchPage(continueToken);
    } catch (err) {
      const status = apiStatusOf(err);
      const retryable = status !== undefined && (status === 429 || status >= 500);
      if (!retryable || attempt >= PAGE_ATTEMPTS) throw err;
      const waitMs =
        retryAfterMsOf(err) ?? itemExponentialBackoffMs(attempt, PAGE_RETRY_BASE_MS, PAGE_RETRY_MAX_MS);
      await new Promise((resolve) => setTimeout(resolve, Math.min(waitMs, PAGE_RETRY_MAX_MS)));
    }
  }
}

/**
 * A LIST's answer as the API server sends it (plain JSON, which spells the token `continue`) as a
 * {@link ListPage} (client-node's deserialised type says `_continue`).
 */
function pageOf<T>(body: unknown): ListPage<T> {
  const page = body as { items?: T[]; metadata?: { continue?: string } };
  return { items: page.items ?? [], metadata: { _continue: page.metadata?.continue } };
}

/**
 * Yields every item of a paginated LIST, page after page (`limit`/`continue`), as client-go's
 * `pager.ListPager` over a list function: `fetchPage` is called with the previous page's `continue`
 * token (`undefined` for the first), once per page, again when the API server answers 429 or 5xx
 * (up to {@link PAGE_ATTEMPTS} attempts, after its `Retry-After` or a backoff).
 * @throws what `fetchPage` throws last (e.g. 410 Gone for an expired `continue` token, at once)
 */
export async function* paginate<T>(
  fetchPage: (continueToken: string | undefined) => Promise<ListPage<T>>,
): AsyncGenerator<T> {
  let continueToken: string | undefined;
  do {
    const page = await fetchWithRetries(fetchPage, continueToken);
    yield* page.items;
    continueToken = page.metadata?._continue || undefined;
  } while (continueToken);
}

export interface ListOptions {
  /** One namespace; omitted: all namespaces (or cluster-scoped). */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Page size; default 500 (client-go's pager default). */
  limit?: number;
}

/**
 * Yields every object of `resource` page by page, `limit` a page, as plain JSON as the API server
 * sends it (timestamps are RFC 3339 strings), as the kit's reads give objects
 * (functions/kit/client.ts): Levelset's own request (core/k8s/rest.ts), by the resource's path, so
 * no discovery request and no client-node model class (decision 80).
 * @throws {ApiException} the API server's error (e.g. 410 when a continue token expired; the caller
 *   retries), after {@link paginate}'s retries of 429 and 5xx
 */
export async function* listPaged<T extends KubernetesObject = KubernetesObject>(
  kubeConfig: KubeConfig,
  resource: ResourceType,
  options: ListOptions = {},
): AsyncGenerator<T> {
  const request = jsonRequester(kubeConfig);
  const path = resourcePath(resource, options.namespace);
  yield* paginate(async (continueToken) => {
    const { body } = await request(HttpMethod.GET, path, {
      query: {
        fieldSelector: options.fieldSelector,
        labelSelector: options.labelSelector,
        limit: String(options.limit ?? 500),
        continue: continueToken,
      },
    });
    return pageOf<T>(body);
  });
}

/** The continue token a `410 Expired` answer to a continued LIST carries for the rest of the list, if any. */
export function continueOfExpired(err: unknown): string | undefined {
  if (!(err instanceof ApiException) || err.code !== 410) return undefined;
  try {
    const status = JSON.parse(String(err.body)) as { metadata?: { continue?: unknown } };
    return typeof status.metadata?.continue === 'string' && status.metadata.continue
      ? status.metadata.continue
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Yields the metadata of every object of `resource` (all namespaces), 500 a page, from metadata-only LISTs
 * (`PartialObjectMetadataList`, client-go's metadata client) parsed as plain JSON: no object body
 * (no Secret data) crosses the wire, and no page goes through client-node's model classes. For
 * what needs names only (the resync's keys). A continue token that expired between two pages (410)
 * is replaced by the one the server's answer carries ({@link continueOfExpired}): the rest of the
 * list, read at the current resourceVersion.
 * @throws {ApiException} on a non-2xx answer (e.g. 404 when the resource is not served, 410 when a
 *   continue token expired and the answer carried none for the rest); {@link Error} without a current cluster
 */
export async function* listMetadataPaged(
  kubeConfig: KubeConfig,
  resource: ResourceType,
): AsyncGenerator<{ metadata?: { namespace?: string; name?: string; resourceVersion?: string } }> {
  const request = jsonRequester(kubeConfig);
  const path = resourcePath(resource, undefined);
  const fetch = (continueToken: string | undefined) =>
    request(HttpMethod.GET, path, {
      accept: METADATA_LIST_ACCEPT,
      query: { limit: '500', continue: continueToken },
    });
  yield* paginate(async (continueToken) => {
    let body: unknown;
    try {
      ({ body } = await fetch(continueToken));
    } catch (err) {
      // A paced resync reads a page every few minutes, and etcd's compaction (every 5 minutes by
      // default) expires a continue token: the server's 410 carries one for the rest, read at the
      // current resourceVersion (not a consistent snapshot with the earlier pages, which a level-driven
      // resync needs not be: a key changed meanwhile has its own watch event).
      const resumed = continueToken !== undefined ? continueOfExpired(err) : undefined;
      if (resumed === undefined) throw err;
      ({ body } = await fetch(resumed));
    }
    return pageOf<{ metadata?: { namespace?: string; name?: string; resourceVersion?: string } }>(body);
  });
}
