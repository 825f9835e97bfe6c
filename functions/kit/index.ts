/**
 * The Levelset controller kit: the public API for writing a controller (docs/writing-a-controller.md).
 * Import from here only; `functions/kit/testing.ts` holds the test helpers.
 *
 * - {@link defineController}: declare primary, spec schema, owned children, watches, reconcile.
 * - Children: applied with Levelset's field manager, controller reference set, never stolen
 *   (`ErrResourceExists`), pruned when no longer desired ({@link reconcileChildren}, {@link isSubset}).
 * - Finalizers: `finalize` releases what an object holds outside the cluster before it goes
 *   ({@link addFinalizer}, {@link removeFinalizer}).
 * - Google Cloud errors sorted as API errors are ({@link throwGoogleCloudError}).
 * - Status and conditions: `Ready` + `observedGeneration`, written only when changed.
 * - Map functions for watches: {@link mapToSelf}, {@link mapThroughControllers}.
 * - Built-in resource types ({@link deployments}, {@link pods}, …) and {@link customResource}.
 */
export type { Controller, Key, PolicyRule, ResourceType, Result } from '../controllers/types.ts';
export {
  type Condition,
  type ConditionInput,
  findCondition,
  isConditionTrue,
  parseConditions,
  setCondition,
} from '../runtime/conditions.ts';
export { FIELD_MANAGER } from '../runtime/custom-resource.ts';
export { TerminalError } from '../runtime/errors.ts';
export { controllerRefOf, isControlledBy, newControllerRef } from '../runtime/owner.ts';
export {
  type ChildChange,
  CONTROLLER_LABEL,
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
export {
  type ControllerDefinition,
  type Desired,
  defineController,
  deriveRbac,
  type FinalizeInput,
  type FinalizeResult,
  INVALID_SPEC,
  type PrimaryObject,
  READY,
  type ReadyInput,
  type ReconcileInput,
  type SecondaryWatch,
} from './define.ts';
export { addFinalizer, finalizerName, hasFinalizer, isBeingDeleted, removeFinalizer } from './finalizers.ts';
export {
  GRPC,
  grpcCodeOf,
  isGrpcAlreadyExists,
  isGrpcNotFound,
  throwGoogleCloudError,
} from './google-cloud.ts';
export { type MapFunction, mapThroughControllers, mapToSelf } from './map.ts';
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
