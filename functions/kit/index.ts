/**
 * The Levelset controller kit: the public API for writing a controller of Kubernetes objects
 * (docs/writing-a-controller.md). Import from here only; `levelset/kit/google` holds the
 * controllers of Google Cloud resources (`defineExternalResource`, the Google clients, the audit
 * log), `levelset/kit/testing` the test helpers. The public surface of each is recorded in
 * `functions/kit/api/*.api.md` (API Extractor), which `npm run check:api` compares: a change to it
 * is deliberate (`npm run update:api`, reviewed in the diff). Tests of the kit's internals import its
 * module files.
 *
 * - {@link defineController}: declare primary, spec schema, owned kinds, watches, reconcile.
 * - Owned kinds, each with its strategy: in the primary's namespace (a resource type: applied with
 *   Levelset's field manager, controller reference set, never stolen: `ErrResourceExists`, pruned
 *   when no longer desired), {@link acrossNamespaces} and {@link acrossClusters} (tracked by label
 *   and annotation: {@link CrossNamespaceTracking}).
 * - Finalizers: `finalize` releases what an object holds outside the cluster before it goes.
 * - Status and conditions: `Ready` + `observedGeneration`, written only when changed.
 * - Map functions for watches: {@link mapThroughControllers}, and {@link mapByIndex} over a spec
 *   index the controller declares (`indexes`).
 * - Reads checked against the RBAC: `get`/`list` in any namespace, `patchMetadata` ({@link Reads}).
 * - Every built-in resource type, typed with its client-node model ({@link resources}: `owned(resources.resourcequotas)`
 *   is a `V1ResourceQuota[]`; the most used also by name: {@link deployments}, {@link pods}, …), and
 *   {@link customResource}.
 * - Admission webhooks served as a function: {@link defineValidatingWebhook} (allow or deny) and
 *   {@link defineMutatingWebhook} (return the changed object; the kit computes the JSON Patch).
 */
export type {
  AdmissionContext,
  AdmissionOperation,
  AdmissionPolicy,
  AdmissionRequest,
  AdmissionResponse,
  AdmissionStatus,
  AdmissionUserInfo,
  AdmissionWebhook,
  LabelSelector,
  WebhookRule,
} from '../../core/contract/admission.ts';
export type {
  Controller,
  PolicyRule,
  ResourceType,
  ResyncContext,
  WatchEvent,
} from '../../core/contract/controller.ts';
export { type Key, keyString, type MappedKey } from '../../core/contract/key.ts';
export {
  dns1123Label,
  dns1123Subdomain,
  isDNS1123Label,
  isDNS1123Subdomain,
} from '../../core/contract/names.ts';
export { findCondition, isConditionTrue, parseConditions } from '../../core/k8s/conditions.ts';
export { FIELD_MANAGER } from '../../core/k8s/custom-resource.ts';
export { isConflict, isNotFound, TerminalError } from '../../core/k8s/errors.ts';
export { listPaged } from '../../core/k8s/list.ts';
export { isControlledBy, newControllerRef } from '../../core/k8s/owner.ts';
export {
  celRule,
  type ListType,
  listType,
  type RuleViolation,
  type ValidationRule,
} from './cel.ts';
export { acrossClusters, acrossNamespaces } from './child-sets.ts';
export { messageResourceExists } from './children.ts';
export { type ResourceClient, resourceClient } from './client.ts';
export { type CrossNamespaceTracking, ownerClusterOf } from './cross-namespace.ts';
export { type ControllerDefinition, defineController } from './define.ts';
export { mapByIndex } from './index-spec.ts';
export { type MapFunction, mapThroughControllers } from './map.ts';
export {
  definePolicy,
  type PolicyDeclaration,
  type PolicyLabelSelector,
  type PolicyValidation,
} from './policy.ts';
export { skipOwnCreates, skipOwnWrites } from './predicates.ts';
export { canonicalQuantity } from './quantity.ts';
export type { Reads } from './reads.ts';
export { isReady, readyFromDeployment } from './ready.ts';
export {
  configmaps,
  customResource,
  deployments,
  namespaces,
  pods,
  replicasets,
  resources,
  secrets,
  services,
} from './resources.ts';
export { INVALID_SPEC, READY } from './steps.ts';
export type {
  Desired,
  FinalizeInput,
  OtherClusterChildren,
  PrimaryObject,
  ReadyInput,
  ReconcileInput,
} from './types.ts';
export {
  defineMutatingWebhook,
  defineValidatingWebhook,
  type MutatingWebhookDefinition,
  type MutationResult,
  type ValidatingWebhookDefinition,
  type ValidationResult,
  type WebhookDefinitionBase,
  type WebhookRuleDefinition,
} from './webhooks.ts';
