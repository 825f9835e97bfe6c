/**
 * `secret-replicator`: copies every Secret of the source namespace into every selected namespace
 * (the TGIK "Building a Controller" series; semantics modelled on kubernetes-reflector), done
 * safely: copies are labelled as Levelset's, copies of deleted sources are pruned, and a Secret
 * Levelset did not create is never overwritten or deleted. See README.md in this folder.
 *
 * Written on the kit: the sources are the primaries (pinned to the source namespace), the copies
 * are children in other namespaces and clusters (owned `acrossClusters`, tracked by {@link COPIES}), and the
 * reconcile returns the copies the source should have. A converged reconcile makes 3 API requests
 * however many namespaces exist: GET the source, LIST namespaces, LIST copies by label (metadata only: the
 * content-hash annotation stands for their data).
 */
import type { KubernetesObject, V1Namespace, V1Secret } from '@kubernetes/client-node';
import {
  acrossClusters,
  type Controller,
  defineController,
  listPaged,
  type MappedKey,
  namespaces,
  type OtherClusterChildren,
  type ResourceType,
  type ResyncContext,
  secrets,
} from '../../kit/index.ts';
import { type SecretReplicatorConfig, secretReplicatorConfigFromEnv } from './config.ts';
import {
  COPIES,
  COPY_LABEL,
  desiredCopies,
  isReplicable,
  SERVICE_ACCOUNT_TOKEN_TYPE,
  selectClusters,
  sourceClusterOf,
  sourceKeyOf,
} from './plan.ts';

/** When a target cluster's namespaces could not be listed, the source's key comes back after this long. */
export const UNREACHABLE_CLUSTER_REQUEUE_MS = 30_000;

/** core/v1 Secrets and Namespaces (cluster-scoped), as the kit declares them. */
export const SECRETS: ResourceType = secrets;
export const NAMESPACES: ResourceType = namespaces;

/** Options of {@link createSecretReplicator}. */
export interface SecretReplicatorOptions {
  /** The configuration, or a function returning it (called at each use); default: from the environment, parsed once. */
  config?: SecretReplicatorConfig | (() => SecretReplicatorConfig);
}

/**
 * Builds the controller. Configuration is read lazily (first reconcile, listKeys, or read of the
 * primary watch's `namespace`), so importing the registry never fails on a bad environment.
 * @throws {Error} from its members, `invalid secret-replicator configuration: …` when the environment is invalid.
 */
export function createSecretReplicator(options: SecretReplicatorOptions = {}): Controller {
  const given = options.config;
  const config = typeof given === 'function' ? given : given ? () => given : secretReplicatorConfigFromEnv;

  return defineController({
    name: 'secret-replicator',
    // Sources: the Secrets of the source namespace (a Secret has no spec and no status subresource:
    // the kit writes no status; Events report). A key `<namespace>/<source name>` in another
    // namespace converges that namespace's copy alone (`scope.namespace`).
    primary: SECRETS,
    namespace: () => config().sourceNamespace,
    owns: [
      acrossClusters(SECRETS, COPIES, {
        watchSelector: COPY_LABEL,
        /**
         * A modified (tampered) copy → its source's key, collapsed with the echo of the source
         * reconcile's own writes; a deleted copy → its own key, `<namespace>/<name>` (that namespace
         * alone, so a namespace deleted with its copies costs no reconcile of every copy of every
         * source); a created copy → nothing: it is the echo of the reconcile's own create, or of
         * the relay's initial LIST, whose sources' own keys converge every copy (one key per copy
         * there is 10 000 messages for 10 000 copies, each a reconcile); a copy of a source outside
         * the source namespace (the source namespace was changed) → always that source's key,
         * which prunes its copies.
         */
        map: (event, ctx) => {
          const source = sourceKeyOf(event.object.metadata);
          const namespace = event.object.metadata?.namespace;
          if (!source) return [];
          // A copy made here for a source of another cluster: a modified or deleted copy → the
          // source's key in the source's cluster, whose reconcile restores it; a created copy →
          // nothing (the echo of that reconcile's create, as below).
          const cluster = sourceClusterOf(event.object.metadata);
          if (cluster !== undefined && cluster !== ctx.cluster)
            return event.type === 'ADDED' ? [] : [{ ...source, cluster }];
          if (source.namespace !== config().sourceNamespace) return [source];
          if (event.type === 'ADDED') return [];
          return event.type === 'DELETED' && namespace ? [{ namespace, name: source.name }] : [source];
        },
      }),
    ],
    watches: [
      {
        resource: NAMESPACES,
        /**
         * A new Namespace needs a copy of every source: ADDED → the key of each copy it needs,
         * `<namespace>/<source name>`; MODIFIED/DELETED dropped (a deleted namespace takes its copies).
         */
        map: (event, ctx) => {
          const namespace = event.object.metadata?.name;
          if (event.type !== 'ADDED' || !namespace) return [];
          return ctx.primaryKeys().map((source) => ({ namespace, name: source.name }));
        },
      },
    ],
    synced: (changes) => {
      const count = (verb: string) => changes.filter((c) => c.startsWith(`${verb} `)).length;
      return `copies: ${count('created')} created, ${count('updated')} updated, ${count('pruned')} deleted`;
    },
    listKeys: (ctx) => listSourceKeys(ctx, config()),
    async reconcile({ key, object, scope, list, clusters, log }) {
      const source = object as V1Secret;
      // Being deleted, or a service-account token: no copies (the kit prunes them, reading their
      // metadata only, here and in every other cluster), and no namespace to list.
      if (!isReplicable(source)) return { children: [] };
      // One namespace (a namespace's own key): a LIST by name (the role lists namespaces; no get).
      const only = scope.namespace ? { fieldSelector: `metadata.name=${scope.namespace}` } : {};
      const listed = (await list(NAMESPACES, only)) as V1Namespace[];
      const inScope = listed.filter((n) => !scope.namespace || n.metadata?.name === scope.namespace);
      const here = desiredCopies(key, source, inScope, config());
      // Other clusters (none for a key naming one namespace, or a single cluster): copies in the
      // clusters `levelset.dev/replicate-to-clusters` matches, none in the others (pruned).
      if (clusters.others.length === 0) return here;
      const targets = new Set(selectClusters(source, clusters.others));
      const otherClusters: Record<string, OtherClusterChildren> = {};
      let unreachable = false;
      for (const id of clusters.others) {
        if (!targets.has(id)) {
          otherClusters[id] = { children: [] };
          continue;
        }
        try {
          const namespaces = (await clusters.reads(id).list(NAMESPACES)) as V1Namespace[];
          otherClusters[id] = desiredCopies(key, source, namespaces, config());
        } catch (err) {
          // Left as it is (absent from otherClusters); this cluster's copies still converge, and
          // the key comes back.
          unreachable = true;
          log.warn(
            { cluster: id, err: err instanceof Error ? err.message : String(err) },
            'namespaces of a target cluster not listed; its copies are left as they are',
          );
        }
      }
      return {
        ...here,
        otherClusters,
        ...(unreachable ? { requeueAfterMs: UNREACHABLE_CLUSTER_REQUEUE_MS } : {}),
      };
    },
  });
}

/**
 * Every key the resync publishes, deduplicated: each Secret in the source namespace (except
 * service-account tokens), then each source named by an existing copy (so copies of a source
 * deleted while the relay was down are still pruned), in the source's cluster for a copy of
 * another cluster's source (`levelset.dev/source-cluster`). Both LISTs are paginated (`limit`/`continue`).
 * @throws API errors from @kubernetes/client-node (e.g. `ApiException` 410 on an expired continue token).
 */
export async function* listSourceKeys(
  ctx: Pick<ResyncContext, 'kubeConfig'>,
  config: SecretReplicatorConfig,
): AsyncGenerator<MappedKey> {
  const seen = new Set<string>();
  const once = (key: MappedKey) => {
    const id = `${key.cluster ?? ''}|${key.namespace}/${key.name}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  };
  const namespace = config.sourceNamespace;
  for await (const s of listPaged<V1Secret>(ctx.kubeConfig, SECRETS, { namespace })) {
    const name = s.metadata?.name;
    if (name && s.type !== SERVICE_ACCOUNT_TOKEN_TYPE && once({ namespace, name })) yield { namespace, name };
  }
  for await (const copy of listPaged<KubernetesObject>(ctx.kubeConfig, SECRETS, {
    labelSelector: COPY_LABEL,
  })) {
    const source = sourceKeyOf(copy.metadata);
    // A copy made here for a source of another cluster: that cluster's key (its reconcile prunes
    // the copy when the source is gone, e.g. deleted while the functions were down).
    const cluster = sourceClusterOf(copy.metadata);
    const key = source && (cluster ? { ...source, cluster } : source);
    if (key && once(key)) yield key;
  }
}

/** The registered controller, configured from `LEVELSET_SOURCE_NAMESPACE` / `LEVELSET_EXCLUDE_NAMESPACES`. */
export const secretReplicator: Controller = createSecretReplicator();
