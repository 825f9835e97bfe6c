/**
 * `levelset/kit/google`: controllers of Google Cloud resources (Config Connector's model, written on
 * the kit, docs/external-resources.md). {@link defineExternalResource} keeps a cloud resource per
 * object through an {@link ExternalClient} (observe, create, update, delete), with the owner mark
 * ({@link CLOUD_OWNER_LABEL}), deletion and adoption policies and per-object intervals; the Google
 * clients it needs ({@link pubsubClient}, {@link pubsubSubscriptions}, {@link googleCloudConfig})
 * and the sorting of their errors ({@link throwGoogleCloudError}, {@link observeGoogleResource});
 * and the cloud resources a controller owns, for drift seen in Cloud Audit Logs
 * ({@link AuditLogDeclaration}).
 */
export { type AuditLogDeclaration, resourceNameRegex } from './audit-log.ts';
export {
  ADOPTION_POLICY,
  CLOUD_OWNER_LABEL,
  DELETION_POLICY,
  type DesiredInput,
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
  RECONCILE_INTERVAL,
  RESOURCE_EXISTS,
  sameLabels,
  type Wanted,
} from './external.ts';
export {
  type GoogleCloudConfig,
  googleCloudConfig,
  pubsubClient,
  throwGoogleCloudError,
} from './google-cloud.ts';
export {
  type PubsubSubscriptionLive,
  type PubsubSubscriptionWanted,
  pubsubSubscriptions,
  TOPIC_DELETED,
} from './pubsub.ts';
