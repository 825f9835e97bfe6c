/**
 * Paginated LIST (`limit`/`continue`), as client-go's `pager.ListPager`: memory stays bounded by one
 * page however large the collection.
 */
import {
  type ConfigurationOptions,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  Observable,
} from '@kubernetes/client-node';
import type { ResourceType } from '../contract/controller.ts';

/**
 * Request options of a generated client-node API call (e.g. `CoreV1Api.listNamespacedSecret`) asking
 * for a `PartialObjectMetadataList` instead of whole objects (Kubernetes API concepts: "Receiving
 * resources as Tables or metadata only"; client-go's metadata client): the items keep their metadata
 * only, so a LIST of Secrets carries no data.
 */
export const METADATA_ONLY: ConfigurationOptions = {
  middleware: [
    {
      pre: (context) => {
        context.setHeaderParam('Accept', 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1');
        return new Observable(Promise.resolve(context));
      },
      post: (response) => new Observable(Promise.resolve(response)),
    },
  ],
  middlewareMergeStrategy: 'append',
};

/** One page of a LIST: its items and the `continue` token of the next page (absent or `""` on the last). */
export interface ListPage<T> {
  items: T[];
  metadata?: { _continue?: string };
}

/**
 * Yields every item of a paginated LIST, page after page (`limit`/`continue`), as client-go's
 * `pager.ListPager` over a list function: `fetchPage` is called with the previous page's `continue`
 * token (`undefined` for the first), once per page.
 * @throws what `fetchPage` throws (e.g. 410 Gone for an expired `continue` token)
 */
export async function* paginate<T>(
  fetchPage: (continueToken: string | undefined) => Promise<ListPage<T>>,
): AsyncGenerator<T> {
  let continueToken: string | undefined;
  do {
    const page = await fetchPage(continueToken);
    yield* page.items;
    continueToken = page.metadata?._continue || undefined;
  } while (continueToken);
}

/** `group/version`, or `version` for the core group. */
export function apiVersionOf(resource: Pick<ResourceType, 'group' | 'version'>): string {
  return resource.group ? `${resource.group}/${resource.version}` : resource.version;
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
 * Yields every object of `resource` page by page.
 * @throws the API server's error (e.g. `ApiException` 410 when a continue token expired; the caller retries).
 */
export async function* listPaged<T extends KubernetesObject = KubernetesObject>(
  kubeConfig: KubeConfig,
  resource: ResourceType,
  options: ListOptions = {},
): AsyncGenerator<T> {
  const api = KubernetesObjectApi.makeApiClient(kubeConfig);
  yield* paginate((continueToken) =>
    api.list<T>(
      apiVersionOf(resource),
      resource.kind,
      options.namespace,
      undefined,
      undefined,
      undefined,
      options.fieldSelector,
      options.labelSelector,
      options.limit ?? 500,
      continueToken,
    ),
  );
}
