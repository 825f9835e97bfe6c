/**
 * A custom resource's objects in one namespace, for tests of the controllers that own them: the
 * accessors (get, create, merge-patch the spec, delete) and the `Ready` condition each test used to
 * write for itself, through client-node's CustomObjectsApi as a user's client would.
 */
import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { type Condition, findCondition, parseConditions } from '../../core/k8s/conditions.ts';

/** The request option of a JSON merge patch (RFC 7386), for client-node's patch calls. */
export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** A custom resource: its API group, version, plural and kind. */
export interface CustomResource {
  group: string;
  version: string;
  plural: string;
  kind: string;
}

/** One namespace's objects of a {@link CustomResource}; every call throws client-node's ApiException on a non-2xx answer. */
export interface CustomObjects {
  // biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
  get(name: string): Promise<any>;
  // biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
  create(name: string, spec: object): Promise<any>;
  /** Merge-patches `spec` (fields given replace, `null` deletes). */
  // biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
  patchSpec(name: string, spec: object): Promise<any>;
  delete(name: string): Promise<unknown>;
}

/** The objects of `resource` in `namespace`, as the cluster admin of `kubeConfig`. */
export function customObjects(
  kubeConfig: KubeConfig,
  resource: CustomResource,
  namespace: string,
): CustomObjects {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const { group, version, plural, kind } = resource;
  return {
    get: (name) => custom.getNamespacedCustomObject({ group, version, plural, namespace, name }),
    create: (name, spec) =>
      custom.createNamespacedCustomObject({
        group,
        version,
        plural,
        namespace,
        body: { apiVersion: `${group}/${version}`, kind, metadata: { name }, spec },
      }),
    patchSpec: (name, spec) =>
      custom.patchNamespacedCustomObject(
        { group, version, plural, namespace, name, body: { spec } },
        mergePatch,
      ),
    delete: (name) => custom.deleteNamespacedCustomObject({ group, version, plural, namespace, name }),
  };
}

/** The `Ready` condition of an object's `status.conditions` (malformed entries skipped), if any. */
export function readyCondition(
  object: { status?: { conditions?: unknown } } | undefined,
): Condition | undefined {
  return findCondition(parseConditions(object?.status?.conditions), 'Ready');
}
