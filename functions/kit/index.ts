/**
 * The Levelset controller kit: the public API for writing a controller (docs/writing-a-controller.md).
 * Import from here only; `functions/kit/testing.ts` holds the test helpers.
 *
 * - {@link defineController}: declare primary, spec schema, owned children, watches, reconcile.
 * - Children: applied with Levelset's field manager, controller reference set, never stolen
 *   (`ErrResourceExists`), pruned when no longer desired ({@link reconcileChildren}, {@link isSubset}).
 * - Children in other namespaces, tracked by label and annotation (owned `inOtherNamespaces`:
 *   {@link CrossNamespaceTracking}, {@link planCrossNamespaceChildren}); and in other clusters of
 *   the deployment, with a `clusterAnnotation` ({@link Desired.otherClusters}, {@link ClustersInput}).
 * - Finalizers: `finalize` releases what an object holds outside the cluster before it goes
 *   ({@link addFinalizer}, {@link removeFinalizer}).
 * - Google Cloud errors sorted as API errors are ({@link throwGoogleCloudError}); the cloud
 *   resources a controller owns, for drift seen in Cloud Audit Logs ({@link AuditLogDeclaration}).
 * - Status and conditions: `Ready` + `observedGeneration`, written only when changed.
 * - Map functions for watches: {@link mapToSelf}, {@link mapThroughControllers}, and
 *   {@link mapByIndex} over a spec index the controller declares (`indexes`).
 * - Reads checked against the RBAC: `get`/`list` in any namespace, `patchMetadata` ({@link Reads}).
 * - Built-in resource types ({@link deployments}, {@link pods}, …) and {@link customResource}.
 */
export type {
  AuditLogSource,
  ClusterDirectory,
  Controller,
  PolicyRule,
  ReconcileContext,
  ResourceType,
  Result,
  ResyncContext,
  Watch,
  WatchEvent,
} from '../contract/controller.ts';
export { type Key, keyString, type MappedKey } from '../contract/key.ts';
export { dns1123Label, dns1123Subdomain, isDNS1123Label, isDNS1123Subdomain } from '../contract/names.ts';
export {
  type Condition,
  type ConditionInput,
  findCondition,
  isConditionTrue,
  parseConditions,
  setCondition,
} from '../k8s/conditions.ts';
export { FIELD_MANAGER } from '../k8s/custom-resource.ts';
export {
  apiStatusOf,
  type FailedWrite,
  FailedWritesError,
  isConflict,
  isNotFound,
  TerminalError,
} from '../k8s/errors.ts';
export { EVENT_RECORDER_RULE } from '../k8s/events.ts';
export { type ListPage, listPaged, METADATA_ONLY, paginate } from '../k8s/list.ts';
export { controllerRefOf, isControlledBy, newControllerRef } from '../k8s/owner.ts';
export {
  type AuditLogDeclaration,
  matchResourceName,
  type ResourceNameMatch,
  resourceNameRegex,
} from './audit-log.ts';
export {
  type ChildChange,
  CONTROLLER_LABEL,
  type CrossNamespaceTracking,
  ERR_RESOURCE_EXISTS,
  isSubset,
  messageResourceExists,
  OWNER_LABEL,
  type OwnedType,
  type Owner,
  reconcileChildren,
  selectorOf,
} from './children.ts';
export { type ResourceClient, resourceClient } from './client.ts';
export { forEachLimit } from './concurrency.ts';
export {
  type ChildStep,
  type CrossNamespacePlan,
  compareChild,
  isOwnedAcross,
  markedChild,
  planChild,
  planCrossNamespaceChildren,
  trackingInCluster,
} from './cross-namespace.ts';
export {
  type ControllerDefinition,
  defineController,
  deriveRbac,
  type SecondaryWatch,
} from './define.ts';
export { addFinalizer, finalizerName, hasFinalizer, isBeingDeleted, removeFinalizer } from './finalizers.ts';
export {
  GRPC,
  googleCloudClientOptions,
  grpcCodeOf,
  isGrpcAlreadyExists,
  isGrpcNotFound,
  throwGoogleCloudError,
} from './google-cloud.ts';
export {
  type IndexFunction,
  type IndexInput,
  mapByIndex,
  namespacedName,
} from './index-spec.ts';
export {
  type MapFunction,
  mapThroughControllers,
  mapToOwnerAnnotation,
  mapToSelf,
  ownerClusterOf,
} from './map.ts';
export { skipOwnCreates, writtenOnlyByLevelset } from './predicates.ts';
export { grants, type ListOptions, type MetadataPatch, type ReadOptions, type Reads } from './reads.ts';
export { readyFromDeployment } from './ready.ts';
export {
  configmaps,
  customResource,
  deployments,
  namespaces,
  pods,
  replicasets,
  secrets,
  services,
} from './resources.ts';
export {
  type ClustersInput,
  type Desired,
  type FinalizeInput,
  type FinalizeResult,
  INVALID_SPEC,
  type OtherClusterChildren,
  type PrimaryObject,
  READY,
  type ReadyInput,
  type ReconcileInput,
} from './steps.ts';
