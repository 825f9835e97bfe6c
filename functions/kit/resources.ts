/**
 * The resource types a controller names: every built-in one (`resources`, generated from
 * client-node's API classes: builtins.gen.ts), those controllers most often own or watch by name
 * (`deployments`, …), custom resources ({@link customResource}); and which type an object is of.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ResourceType } from '../../core/contract/controller.ts';
import { apiVersionOf } from '../../core/k8s/rest.ts';
import { resources } from './builtins.gen.ts';
import type { PrimaryObject } from './types.ts';

export { resources };

/** `apps/v1` Deployments. */
export const deployments = resources.deployments;
/** `apps/v1` ReplicaSets (what a Deployment controls). */
export const replicasets = resources.replicasets;
/** Core `v1` Pods. */
export const pods = resources.pods;
/** Core `v1` Services. */
export const services = resources.services;
/** Core `v1` ConfigMaps. */
export const configmaps = resources.configmaps;
/** Core `v1` Secrets. */
export const secrets = resources.secrets;
/** Core `v1` Namespaces (cluster-scoped). */
export const namespaces = resources.namespaces;

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
