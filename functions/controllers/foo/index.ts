/**
 * `foo`: kubernetes/sample-controller's Foo controller as a stateless reconcile.
 *
 * A Foo (`samplecontroller.k8s.io/v1alpha1`) asks for a Deployment named `spec.deploymentName`
 * running nginx with `spec.replicas` replicas. The reconcile reads the Foo and the Deployment from
 * the API server (no informer cache), creates the Deployment with a controller reference to the
 * Foo, keeps its replicas equal to the Foo's, copies `status.availableReplicas` back through the
 * `status` subresource with a `Ready` condition, and records a `Synced` Event when it changed
 * something. A Deployment of that name that the Foo does not control is never touched
 * (`ErrResourceExists`). Deployment events map to their controlling Foo (upstream `handleObject`).
 */
import {
  AppsV1Api,
  type KubeConfig,
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
} from '@kubernetes/client-node';
import { keyString } from '../../message.ts';
import type { ConditionInput } from '../../runtime/conditions.ts';
import { FIELD_MANAGER, getCustomObject, writeCustomObjectStatus } from '../../runtime/custom-resource.ts';
import { isNotFound, TerminalError } from '../../runtime/errors.ts';
import { EVENT_RECORDER_RULE } from '../../runtime/events.ts';
import { controllerKeysOf, isControlledBy } from '../../runtime/owner.ts';
import type { Controller, Key, ReconcileContext, Result } from '../types.ts';
import {
  deploymentResource,
  ERR_RESOURCE_EXISTS,
  type Foo,
  fooResource,
  fooSchema,
  fooSpecSchema,
  GROUP,
  INVALID_SPEC,
  KIND,
  MESSAGE_RESOURCE_SYNCED,
  messageResourceExists,
  SUCCESS_SYNCED,
} from './api.ts';
import { desiredStatus, newDeployment, notReady, readyFromDeployment } from './desired.ts';

/** Label values are at most 63 characters (apimachinery `validation.IsValidLabelValue`). */
const MAX_LABEL_VALUE = 63;

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * Writes a `Ready=False` condition saying why, then throws the {@link TerminalError} that makes the
 * runtime acknowledge the key (no retry) and record a Warning Event on the Foo.
 */
async function fail(kubeConfig: KubeConfig, foo: Foo, reason: string, message: string): Promise<never> {
  await writeCustomObjectStatus(
    kubeConfig,
    fooResource,
    foo,
    desiredStatus(foo, notReady(foo, reason, message)),
  );
  throw new TerminalError(reason, message, { object: foo as KubernetesObject });
}

/**
 * Converges one Foo (sample-controller's `syncHandler`). API requests: 2 GETs in the steady state;
 * + 1 create or 1 patch of the Deployment, + 1 status patch and + 1 Event when something changed.
 * @throws {TerminalError} `InvalidSpec` (spec fails validation or lacks `deploymentName`),
 *   `ErrResourceExists` (the Deployment exists and is not controlled by this Foo); other API
 *   errors as thrown by the client (retried).
 */
export async function reconcileFoo(key: Key, ctx: ReconcileContext): Promise<Result> {
  const kubeConfig = ctx.kubeConfig;
  const apps = ctx.kubeConfig.makeApiClient(AppsV1Api);

  const raw = await getCustomObject(ctx.kubeConfig, fooResource, key);
  if (raw === undefined) {
    // Deleted: garbage collection removes its Deployment through the owner reference.
    ctx.log.debug('foo no longer exists');
    return {};
  }
  const parsedFoo = fooSchema.safeParse(raw);
  if (!parsedFoo.success) {
    throw new TerminalError('InvalidObject', `${keyString(key)}: not a Foo: ${parsedFoo.error.message}`);
  }
  const foo = parsedFoo.data;
  if (foo.metadata.deletionTimestamp) return {};

  const spec = fooSpecSchema.safeParse(foo.spec ?? {});
  if (!spec.success) {
    const issues = spec.error.issues.map((i) => `spec.${i.path.join('.')}: ${i.message}`).join('; ');
    return fail(kubeConfig, foo, INVALID_SPEC, `${keyString(key)}: invalid spec: ${issues}`);
  }
  const { deploymentName, replicas } = spec.data;
  if (!deploymentName) {
    // Upstream absorbs this error rather than requeue: the next update of the Foo brings it back.
    return fail(kubeConfig, foo, INVALID_SPEC, `${keyString(key)}: deployment name must be specified`);
  }
  if (foo.metadata.name.length > MAX_LABEL_VALUE) {
    return fail(
      kubeConfig,
      foo,
      INVALID_SPEC,
      `${keyString(key)}: the Foo's name is longer than ${MAX_LABEL_VALUE} characters and cannot label its Deployment`,
    );
  }

  let wrote = false;
  let deployment: V1Deployment;
  try {
    deployment = await apps.readNamespacedDeployment({
      name: deploymentName,
      namespace: foo.metadata.namespace,
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    // A concurrent create answers 409 AlreadyExists: transient, the retry reads it.
    deployment = await apps.createNamespacedDeployment({
      namespace: foo.metadata.namespace,
      body: newDeployment(foo, { deploymentName, replicas }),
      fieldManager: FIELD_MANAGER,
    });
    ctx.log.info({ deployment: deploymentName }, 'created deployment');
    wrote = true;
  }

  if (!isControlledBy(deployment, foo)) {
    return fail(kubeConfig, foo, ERR_RESOURCE_EXISTS, messageResourceExists(deploymentName));
  }

  if (replicas !== undefined && replicas !== deployment.spec?.replicas) {
    ctx.log.info(
      { deployment: deploymentName, from: deployment.spec?.replicas, to: replicas },
      'scaling deployment',
    );
    // resourceVersion makes the patch conditional (optimistic concurrency): a 409 is retried.
    deployment = await apps.patchNamespacedDeployment(
      {
        name: deploymentName,
        namespace: foo.metadata.namespace,
        body: { metadata: { resourceVersion: deployment.metadata?.resourceVersion }, spec: { replicas } },
        fieldManager: FIELD_MANAGER,
      },
      mergePatch,
    );
    wrote = true;
  }

  const available = deployment.status?.availableReplicas ?? 0;
  const ready: ConditionInput = readyFromDeployment(
    foo,
    available,
    replicas ?? deployment.spec?.replicas ?? 1,
  );
  if (await writeCustomObjectStatus(kubeConfig, fooResource, foo, desiredStatus(foo, ready, available)))
    wrote = true;
  if (wrote)
    await ctx.events.record(foo as KubernetesObject, 'Normal', SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED);
  return {};
}

/** The `foo` controller module (registered in `functions/controllers/index.ts`). */
export const fooController: Controller = {
  name: 'foo',
  primary: fooResource,
  watches: [
    {
      resource: fooResource,
      map: ({ object }) =>
        object.metadata?.name
          ? [{ namespace: object.metadata.namespace ?? '', name: object.metadata.name }]
          : [],
    },
    {
      // Every Deployment event, mapped to its controlling Foo (sample-controller's handleObject).
      resource: deploymentResource,
      map: ({ object }) => controllerKeysOf(object, { group: GROUP, kind: KIND }),
    },
  ],
  rbac: [
    { apiGroup: GROUP, resources: ['foos'], verbs: ['get', 'list'] },
    { apiGroup: GROUP, resources: ['foos/status'], verbs: ['patch'] },
    { apiGroup: 'apps', resources: ['deployments'], verbs: ['get', 'create', 'patch'] },
    EVENT_RECORDER_RULE,
  ],
  reconcile: reconcileFoo,
};
