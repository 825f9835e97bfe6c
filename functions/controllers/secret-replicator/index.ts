/**
 * `secret-replicator`: copies every Secret of the source namespace into every selected namespace
 * (the TGIK "Building a Controller" series; semantics modelled on kubernetes-reflector), done
 * safely: copies are labelled as Levelset's, copies of deleted sources are pruned, and a Secret
 * Levelset did not create is never overwritten or deleted. See README.md in this folder.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  type Controller,
  EVENT_RECORDER_RULE,
  type Key,
  namespaces,
  type PolicyRule,
  type ResourceType,
  secrets,
  type Watch,
} from '../../kit/index.ts';
import { type SecretReplicatorConfig, secretReplicatorConfigFromEnv } from './config.ts';
import { COPY_LABEL, sourceKeyOf } from './plan.ts';
import { listSourceKeys, reconcileSource } from './replicate.ts';

/** core/v1 Secrets and Namespaces (cluster-scoped), as the kit declares them. */
export const SECRETS: ResourceType = secrets;
export const NAMESPACES: ResourceType = namespaces;

/**
 * The RBAC rules of reconcile and listKeys, exactly: Secrets get (source; re-read after 409),
 * list (sources, copies), create/update/delete (copies); Namespaces list; Events create/get/patch
 * (the recorder's {@link EVENT_RECORDER_RULE}: Warning `ErrResourceExists` and Normal `Replicated`
 * on the source, repeats counted).
 */
export const SECRET_REPLICATOR_RBAC: PolicyRule[] = [
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
  { apiGroups: [''], resources: ['namespaces'], verbs: ['list'] },
  EVENT_RECORDER_RULE,
];

function keyOf(object: KubernetesObject): Key[] {
  const { namespace, name } = object.metadata ?? {};
  return namespace && name ? [{ namespace, name }] : [];
}

/** Options of {@link createSecretReplicator}. */
export interface SecretReplicatorOptions {
  /** The configuration, or a function returning it (called at each use); default: from the environment, parsed once. */
  config?: SecretReplicatorConfig | (() => SecretReplicatorConfig);
}

/**
 * Builds the controller. Configuration is read lazily (first reconcile, listKeys, or read of the
 * first watch's `namespace`), so importing the registry never fails on a bad environment.
 * @throws {Error} from its members, `invalid secret-replicator configuration: …` when the environment is invalid.
 */
export function createSecretReplicator(options: SecretReplicatorOptions = {}): Controller {
  const given = options.config;
  const config = typeof given === 'function' ? given : given ? () => given : secretReplicatorConfigFromEnv;

  /** (1) Sources: Secrets in the source namespace → their own key. */
  const sources: Watch = {
    resource: SECRETS,
    get namespace() {
      return config().sourceNamespace;
    },
    map: (event) =>
      event.object.metadata?.namespace === config().sourceNamespace ? keyOf(event.object) : [],
  };
  /**
   * (2) A new Namespace needs a copy of every source: ADDED → the key of each copy it needs,
   * `<namespace>/<source name>` (reconcile.ts converges that namespace alone, so churn of other
   * namespaces costs it nothing); MODIFIED/DELETED dropped (a deleted namespace takes its copies).
   */
  const namespaces: Watch = {
    resource: NAMESPACES,
    map: (event, ctx) => {
      const namespace = event.object.metadata?.name;
      if (event.type !== 'ADDED' || !namespace) return [];
      return ctx.primaryKeys().map((source) => ({ namespace, name: source.name }));
    },
  };
  /**
   * (3) Copies (any namespace, by label): a modified (tampered) copy → its source's key, collapsed
   * with the echo of the source reconcile's own updates; a created or deleted copy → its own key,
   * `<namespace>/<name>` (reconcile.ts converges that namespace alone, so a namespace created or
   * deleted with its copies costs no reconcile of every copy of every source); a copy of a source
   * outside the source namespace (the source namespace was changed) → always that source's key,
   * whose reconcile prunes its copies.
   */
  const copies: Watch = {
    resource: SECRETS,
    labelSelector: COPY_LABEL,
    map: (event) => {
      const source = sourceKeyOf(event.object.metadata);
      const namespace = event.object.metadata?.namespace;
      if (!source) return [];
      return event.type !== 'MODIFIED' && source.namespace === config().sourceNamespace && namespace
        ? [{ namespace, name: source.name }]
        : [source];
    },
  };

  return {
    name: 'secret-replicator',
    primary: SECRETS,
    watches: [sources, namespaces, copies],
    rbac: SECRET_REPLICATOR_RBAC,
    listKeys: (ctx) => listSourceKeys(ctx, config()),
    reconcile: (key, ctx) => reconcileSource(key, ctx, config()),
  };
}

/** The registered controller, configured from `LEVELSET_SOURCE_NAMESPACE` / `LEVELSET_EXCLUDE_NAMESPACES`. */
export const secretReplicator: Controller = createSecretReplicator();
