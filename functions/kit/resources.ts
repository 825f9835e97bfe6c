/**
 * The built-in resource types controllers most often own or watch, declared once (group, version,
 * plural, kind, scope), so that a controller names them instead of spelling them out; and which
 * type an object is of.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ResourceType } from '../../core/contract/controller.ts';
import { apiVersionOf } from '../../core/k8s/rest.ts';
import type { PrimaryObject } from './types.ts';

/** `apps/v1` Deployments. */
export const deployments: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'deployments',
  kind: 'Deployment',
  namespaced: true,
};

/** `apps/v1` ReplicaSets (what a Deployment controls). */
export const replicasets: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'replicasets',
  kind: 'ReplicaSet',
  namespaced: true,
};

/** Core `v1` Pods. */
export const pods: ResourceType = { group: '', version: 'v1', plural: 'pods', kind: 'Pod', namespaced: true };

/** Core `v1` Services. */
export const services: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'services',
  kind: 'Service',
  namespaced: true,
};

/** Core `v1` ConfigMaps. */
export const configmaps: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
  statusSubresource: false,
};

/** Core `v1` Secrets. */
export const secrets: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'secrets',
  kind: 'Secret',
  namespaced: true,
  statusSubresource: false,
};

/** Core `v1` Namespaces (cluster-scoped). */
export const namespaces: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
};

/**
 * A custom resource type: `{group, version, kind, plural, scope}` as its CRD serves it.
 * @param plural default: the lower-cased kind plus `s` (check it against the CRD's `names.plural`)
 * @param scope the CRD's `spec.scope`; default `Namespaced`
 */
export function customResource(r: {
  group: string;
  version: string;
  kind: string;
  plural?: string;
  scope?: 'Namespaced' | 'Cluster';
}): ResourceType {
  return {
    group: r.group,
    version: r.version,
    kind: r.kind,
    plural: r.plural ?? `${r.kind.toLowerCase()}s`,
    namespaced: (r.scope ?? 'Namespaced') === 'Namespaced',
  };
}

/** Whether `object` is of `resource` (its apiVersion and kind). */
export function isOfType(object: KubernetesObject, resource: ResourceType): boolean {
  return object.apiVersion === apiVersionOf(resource) && object.kind === resource.kind;
}

/** An Event's `regarding`: apiVersion, kind and metadata, never the object's data or spec. */
export function regardingOf(object: PrimaryObject | KubernetesObject): KubernetesObject {
  return { apiVersion: object.apiVersion, kind: object.kind, metadata: object.metadata } as KubernetesObject;
}
