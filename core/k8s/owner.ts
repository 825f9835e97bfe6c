/**
 * Controller references: the one owner reference with `controller: true` that says which object
 * manages another (apimachinery `metav1.GetControllerOf`, `metav1.IsControlledBy`,
 * `metav1.NewControllerRef`). Garbage collection deletes a dependent when its owner is gone; the
 * controller reference is how a controller recognises what it may touch and how a dependent's
 * events map back to its owner's key (sample-controller's `handleObject`).
 */
import type { V1ObjectMeta, V1OwnerReference } from '@kubernetes/client-node';

/** Anything with object metadata: a full object or a metadata-only one (PartialObjectMetadata). */
export interface HasMetadata {
  metadata?: Pick<V1ObjectMeta, 'name' | 'namespace' | 'uid' | 'ownerReferences'>;
}

/** An owner's group/version/kind, as `apiVersion` (`group/version`, or `version` for core) and `kind`. */
export interface GroupVersionKind {
  apiVersion: string;
  kind: string;
}

/**
 * A controller reference to `owner` (apimachinery `metav1.NewControllerRef`): `controller: true`
 * and `blockOwnerDeletion: true`, so foreground deletion of the owner waits for the dependent.
 * @throws {Error} when `owner` has no `metadata.name` or `metadata.uid` (it was never persisted).
 */
export function newControllerRef(owner: HasMetadata, gvk: GroupVersionKind): V1OwnerReference {
  const name = owner.metadata?.name;
  const uid = owner.metadata?.uid;
  if (!name || !uid) throw new Error('newControllerRef: owner needs metadata.name and metadata.uid');
  return {
    apiVersion: gvk.apiVersion,
    kind: gvk.kind,
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The controller reference of `object`, or `undefined` (apimachinery `metav1.GetControllerOf`). */
export function controllerRefOf(object: HasMetadata): V1OwnerReference | undefined {
  return object.metadata?.ownerReferences?.find((ref) => ref.controller === true);
}

/**
 * True when `object`'s controller reference points at `owner`, compared by UID as apimachinery's
 * `metav1.IsControlledBy` does (a deleted and re-created owner of the same name is another owner).
 */
export function isControlledBy(object: HasMetadata, owner: HasMetadata): boolean {
  const ref = controllerRefOf(object);
  const uid = owner.metadata?.uid;
  return ref !== undefined && uid !== undefined && uid !== '' && ref.uid === uid;
}

/** The API group of an `apiVersion`: `""` for core (`v1`), else the part before `/`. */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}
