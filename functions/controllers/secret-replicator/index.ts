/**
 * `secret-replicator`: copies every Secret of the source namespace into every selected namespace
 * (the TGIK "Building a Controller" series; semantics modelled on kubernetes-reflector), done
 * safely: copies are labelled as Levelset's, copies of deleted sources are pruned, and a Secret
 * Levelset did not create is never overwritten or deleted. See README.md in this folder.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { namespaces, secrets } from '../../kit/index.ts';
import { EVENT_RECORDER_RULE } from '../../runtime/events.ts';
import type { Controller, Key, PolicyRule, ResourceType, Watch } from '../types.ts';
import { type SecretReplicatorConfig, secretReplicatorConfigFromEnv } from './config.ts';
import { COPY_LABEL, sourceKeyOf } from './plan.ts';
import { listSourceKeys, reconcileSource } from './reconcile.ts';

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
  /** (2) A new Namespace needs every source: ADDED → every primary key; MODIFIED/DELETED dropped. */
  const namespaces: Watch = {
    resource: NAMESPACES,
    map: (event, ctx) => (event.type === 'ADDED' ? ctx.primaryKeys() : []),
  };
  /** (3) Copies (any namespace, by label): a tampered or deleted copy → its source's key (from metadata). */
  const copies: Watch = {
    resource: SECRETS,
    labelSelector: COPY_LABEL,
    map: (event) => {
      const key = sourceKeyOf(event.object.metadata);
      return key ? [key] : [];
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
