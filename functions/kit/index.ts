/**
 * The Levelset controller kit: the public API for writing a controller (docs/writing-a-controller.md).
 * Import from here only; `functions/kit/testing.ts` holds the test helpers. The public surface
 * of both is recorded in `functions/kit/api/*.api.md` (API Extractor), which `npm run check:api`
 * compares: a change to it is deliberate (`npm run update:api`, reviewed in the diff).
 *
 * - {@link defineController}: declare primary, spec schema, owned children, watches, reconcile.
 * - Children: applied with Levelset's field manager, controller reference set, never stolen
 *   (`ErrResourceExists`), pruned when no longer desired; compared as a subset of the live object.
 * - Children in other namespaces, tracked by label and annotation ({@link acrossNamespaces},
 *   {@link CrossNamespaceTracking}); and in other clusters of the deployment too
 *   ({@link acrossClusters}, {@link Desired.otherClusters}, {@link ClustersInput}).
 * - Finalizers: `finalize` releases what an object holds outside the cluster before it goes
 *   ({@link addFinalizer}, {@link removeFinalizer}).
 * - Google Cloud errors sorted as API errors are ({@link throwGoogleCloudError}); quota and rate
 *   limits requeued after their delay ({@link rateLimitOf}).
 * - Controllers of cloud resources ({@link defineExternalResource}): observe/create/update/delete,
 *   the owner mark, deletion and adoption policies, per-object intervals (external.ts); one client
 *   of Pub/Sub subscriptions for every controller of them ({@link pubsubSubscriptions}).
 * - The cloud resources a controller owns, for drift seen in Cloud Audit Logs ({@link AuditLogDeclaration}).
 * - Status and conditions: `Ready` + `observedGeneration`, written only when changed.
 * - Map functions for watches: {@link mapThroughControllers}, {@link mapToOwnerAnnotation}, and
 *   {@link mapByIndex} over a spec index the controller declares (`indexes`).
 * - Reads checked against the RBAC: `get`/`list` in any namespace, `patchMetadata` ({@link Reads}).
 * - Built-in resource types ({@link deployments}, {@link pods}, …) and {@link customResource}.
 */
export type {
  AuditLogSource,
  ClusterDirectory,
  Controller,
  ExternalChange,
  PolicyRule,
  ReconcileContext,
  Referrer,
  ResourceType,
  Result,
  ResyncContext,
  Watch,
  WatchEvent,
} from '../../core/contract/controller.ts';
export { type Key, keyString, type MappedKey } from '../../core/contract/key.ts';
export {
  dns1123Label,
  dns1123Subdomain,
  isDNS1123Label,
  isDNS1123Subdomain,
} from '../../core/contract/names.ts';
export {
  type Condition,
  type ConditionInput,
  findCondition,
  isConditionTrue,
  parseConditions,
  setCondition,
} from '../../core/k8s/conditions.ts';
export { FIELD_MANAGER } from '../../core/k8s/custom-resource.ts';
export {
  apiStatusOf,
  type FailedWrite,
  FailedWritesError,
  isConflict,
  isNotFound,
  TerminalError,
} from '../../core/k8s/errors.ts';
export { type ListPage, listPaged } from '../../core/k8s/list.ts';
export { controllerRefOf, isControlledBy, newControllerRef } from '../../core/k8s/owner.ts';
export {
  type AuditLogDeclaration,
  matchResourceName,
  type ResourceNameMatch,
  resourceNameRegex,
} from './audit-log.ts';
export { acrossClusters, acrossNamespaces, type OwnedWatch, type TrackedType } from './child-sets.ts';
export { messageResourceExists, OWNER_LABEL } from './children.ts';
export { type ResourceClient, resourceClient } from './client.ts';
export {
  type CrossNamespacePlan,
  type CrossNamespaceTracking,
  isOwnedAcross,
  mapToOwnerAnnotation,
  ownerClusterOf,
  planCrossNamespaceChildren,
} from './cross-namespace.ts';
export {
  type ControllerDefinition,
  defineController,
  type SecondaryWatch,
} from './define.ts';
export {
  ADOPTION_POLICY,
  CLOUD_OWNER_LABEL,
  DELETION_POLICY,
  type DesiredInput,
  type DesiredOf,
  defineExternalResource,
  EXTERNAL_CALL_DEADLINE_MS,
  type ExternalClient,
  type ExternalKind,
  type ExternalResourceDefinition,
  INVALID_POLICY,
  type Labels,
  MANAGEMENT_CONFLICT,
  NOT_FOUND,
  type Observation,
  observeGoogleResource,
  type Policies,
  parseGoDuration,
  policiesOf,
  RECONCILE_INTERVAL,
  RESOURCE_EXISTS,
  sameLabels,
  type Waiting,
  type Wanted,
  type WantedResource,
} from './external.ts';
export { addFinalizer, finalizerName, hasFinalizer, removeFinalizer } from './finalizers.ts';
export {
  apiLimiter,
  EMULATOR_PROJECT,
  type GoogleCloudConfig,
  GRPC,
  googleCloudClientOptions,
  googleCloudConfig,
  isGrpcAlreadyExists,
  isGrpcNotFound,
  pubsubClient,
  throwGoogleCloudError,
} from './google-cloud.ts';
export {
  type IndexFunction,
  type IndexInput,
  mapByIndex,
} from './index-spec.ts';
export { type MapFunction, mapThroughControllers } from './map.ts';
export { skipOwnCreates } from './predicates.ts';
export {
  type PubsubSubscriptionLive,
  type PubsubSubscriptionWanted,
  pubsubSubscriptions,
  TOPIC_DELETED,
} from './pubsub.ts';
export { type RateLimit, rateLimitOf } from './rate-limits.ts';
export { grants, type ListOptions, type MetadataPatch, type ReadOptions, type Reads } from './reads.ts';
export { isReady, readyFromDeployment } from './ready.ts';
export { type ReferencedBy, STILL_REFERENCED } from './references.ts';
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
export { INVALID_SPEC, READY } from './steps.ts';
export type {
  ChildChange,
  ChildContext,
  ChildListing,
  ChildSet,
  ChildStrategy,
  ClustersInput,
  Converged,
  Desired,
  FinalizeInput,
  FinalizeResult,
  OtherClusterChildren,
  OwnedType,
  Owner,
  PrimaryObject,
  ReadyInput,
  ReconcileInput,
  Scope,
} from './types.ts';
