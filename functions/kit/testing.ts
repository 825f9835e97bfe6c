/**
 * Test helpers shipped with the kit (as functions-framework ships its testing module): reconcile a
 * controller once against an API server (the project's local one in a unit-sized test, or a real
 * cluster) and assert the API requests it made.
 *
 *   const cluster = await startTestCluster();            // TEST_KUBECONFIG's cluster, else a local API server
 *   const t = reconcilerForTest(icecream, cluster.kubeconfigPath);
 *   const run = await t.reconcile({ namespace, name });  // → { requests, result, error }
 *   assert.deepEqual(writesOf(run.requests), []);       // a converged reconcile only reads
 *   const runs = await t.converge({ namespace, name });  // reconcile until one writes nothing
 *
 * and which keys a watch event enqueues, as the relay computes them:
 *
 *   keysFor(icecream, { type: 'MODIFIED', object: deployment, oldObject: before }); // → [{ namespace, name }]
 *
 * and a spec against the schema's CEL rules, without a cluster:
 *
 *   checkRules(icecreamSpecSchema, spec, oldSpec); // → [{ field, reason, detail, message }]
 */
import type { KubernetesObject, RequestContext } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { ZodType } from 'zod';
import type {
  Controller,
  MapContext,
  ReconcileContext,
  ResourceType,
  Result,
  WatchEvent,
} from '../../core/contract/controller.ts';
import { DEFAULT_CLUSTER, type Key, keyString, type MappedKey, mappedKeys } from '../../core/contract/key.ts';
import {
  isPrimaryWatch,
  primaryEventPasses,
  statusEventPassesWith,
} from '../../core/contract/watch-predicates.ts';
import { TerminalError } from '../../core/k8s/errors.ts';
import { createEventRecorder } from '../../core/k8s/events.ts';
import type { Logger } from '../../core/log.ts';
import { PooledKubeConfig } from '../../core/pooled-kubeconfig.ts';
import { type RuleViolation, specRuleViolations } from './cel.ts';
import { resourceClient } from './client.ts';

export type { RuleViolation } from './cel.ts';
export {
  noReadyNodeSkip,
  secondClusterSkip,
  startSecondTestCluster,
  startTestCluster,
  type TestCluster,
  uniqueSuffix,
} from './test-cluster.ts';
export { type WaitOptions, waitFor } from './wait.ts';
export { type AdmitForTestInput, type AdmitForTestResult, admitForTest } from './webhook-testing.ts';

/**
 * The CEL rules and list types a zod schema declares (`celRule`, `listType`) checked
 * against a spec without a cluster, as the API server checks them on a write: with `old` (the stored
 * spec) transition rules run too, as on an update. The same evaluation the reconcile runs.
 * @example assert.deepEqual(checkRules(specSchema, { min: 3, max: 1 }).map((v) => v.message), ['min must not exceed max'])
 * @returns one {@link RuleViolation} per failed rule or duplicate item; `[]` when valid.
 */
export function checkRules(schema: ZodType, spec: unknown, old?: unknown): RuleViolation[] {
  return specRuleViolations(schema, spec, old);
}

/**
 * A KubeConfig that records every API request made through it, so a test can assert how many
 * requests a reconcile makes (and which). Works on the local API server and on a real cluster.
 */
export class CountingKubeConfig extends PooledKubeConfig {
  /** `METHOD path`, or `METHOD path?query` when constructed with `{ query: true }`; oldest first. */
  requests: string[] = [];
  readonly #query: boolean;

  constructor(options: { query?: boolean } = {}) {
    super();
    this.#query = options.query ?? false;
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    const url = new URL(context.getUrl());
    this.requests.push(`${context.getHttpMethod()} ${url.pathname}${this.#query ? url.search : ''}`);
    return super.applySecurityAuthentication(context);
  }
}

/** One reconcile's outcome, as the `reconcile` function would see it. */
export interface ReconcileRun {
  /** The API requests made (`METHOD path`, with `?query` when asked), the Events' included. */
  requests: string[];
  result?: Result | undefined;
  /** A {@link TerminalError} (its Warning Event recorded, as the runtime does); other errors are thrown. */
  error?: TerminalError;
}

/** The requests of `requests` (`METHOD path` strings, as {@link CountingKubeConfig} records them) that write: all but GETs. */
export function writesOf(requests: readonly string[]): string[] {
  return requests.filter((r) => !r.startsWith('GET '));
}

export interface ReconcilerForTest {
  /** Reconciles `key` once; throws what a retry would answer (anything but a TerminalError). */
  reconcile(key: Key): Promise<ReconcileRun>;
  /**
   * Reconciles `key` until a reconcile makes no write (a converged reconcile only reads), at most
   * `tries` times (default 5): on a real cluster other writers (the Deployment controller, kubelet)
   * move what a reconcile reads after the first one, and each move is one more reconcile that writes.
   * @returns every run, oldest first; the last one made no write
   * @throws {Error} when a run ends in a TerminalError, or when all `tries` runs wrote (the last one's
   *   requests named); and what {@link ReconcilerForTest.reconcile} throws
   */
  converge(key: Key, tries?: number): Promise<ReconcileRun[]>;
  /**
   * Deletes every primary of the controller in `namespace` and reconciles each until it is gone
   * (its finalizer run and removed), at most `tries` times (default 5): a test's teardown, since
   * an object left with the controller's finalizer keeps its namespace `Terminating` on a real
   * cluster once no controller runs.
   * @throws {Error} naming what is left after `tries` reconciles (a delete held by referrers, a
   *   failing `finalize`); and what {@link ReconcilerForTest.reconcile} throws
   */
  deleteAll(namespace: string, tries?: number): Promise<void>;
  kubeConfig: CountingKubeConfig;
  /**
   * With `options.otherClusters`: each other cluster's request-recording KubeConfig, by id (its
   * `requests` are reset at each {@link ReconcilerForTest.reconcile}, as the own cluster's are).
   */
  otherKubeConfigs: ReadonlyMap<string, CountingKubeConfig>;
  ctx: ReconcileContext;
}

/**
 * Runs `controller`'s reconcile with a request-recording KubeConfig loaded from `kubeconfigPath`.
 * @param options.query record query strings too (e.g. to assert a LIST's `labelSelector`)
 * @param options.log a logger (default silent)
 * @param options.cluster the reconcile's cluster id (default `default`)
 * @param options.otherClusters other clusters of the deployment, id → kubeconfig file: the
 *   reconcile gets them as the runtime's registry (`ctx.clusters`), for children in other clusters
 */
export function reconcilerForTest(
  controller: Controller,
  kubeconfigPath: string,
  options: {
    query?: boolean;
    log?: Logger;
    cluster?: string;
    otherClusters?: Readonly<Record<string, string>>;
  } = {},
): ReconcilerForTest {
  const counting = (path: string) => {
    const kc = new CountingKubeConfig({ query: options.query ?? false });
    kc.loadFromFile(path);
    return kc;
  };
  const kubeConfig = counting(kubeconfigPath);
  const others = new Map(
    Object.entries(options.otherClusters ?? {}).map(([id, path]) => [id, counting(path)]),
  );
  const cluster = options.cluster ?? DEFAULT_CLUSTER;
  const log = options.log ?? pino({ level: 'silent' });
  const ctx: ReconcileContext = {
    cluster,
    kubeConfig,
    log,
    events: createEventRecorder(kubeConfig, controller.name, log),
    ...(options.otherClusters
      ? {
          clusters: {
            ids: [cluster, ...others.keys()],
            kubeConfig: (id: string) => (id === cluster ? kubeConfig : others.get(id)),
          },
        }
      : {}),
  };
  const reconcile = async (key: Key): Promise<ReconcileRun> => {
    kubeConfig.requests = [];
    for (const kc of others.values()) kc.requests = [];
    try {
      const result = await controller.reconcile(key, ctx);
      return { requests: kubeConfig.requests, result };
    } catch (err) {
      if (!(err instanceof TerminalError)) throw err;
      if (err.object) await ctx.events.record(err.object, 'Warning', err.reason, err.message);
      return { requests: kubeConfig.requests, error: err };
    }
  };
  return {
    kubeConfig,
    otherKubeConfigs: others,
    ctx,
    reconcile,
    async converge(key, tries = 5) {
      const runs: ReconcileRun[] = [];
      for (let i = 0; i < tries; i++) {
        const run = await reconcile(key);
        runs.push(run);
        if (run.error) throw new Error(`${keyString(key)}: reconcile ${i + 1} failed: ${run.error.message}`);
        const writes = [
          ...writesOf(run.requests),
          ...[...others.values()].flatMap((kc) => writesOf(kc.requests)),
        ];
        if (writes.length === 0) return runs;
      }
      const last = runs.at(-1)?.requests ?? [];
      throw new Error(`${keyString(key)}: still writing after ${tries} reconciles: ${last.join(', ')}`);
    },
    async deleteAll(namespace, tries = 5) {
      const client = resourceClient(kubeConfig);
      const objects = await client.list(controller.primary, namespace);
      const left = new Set(objects.map((o) => o.metadata?.name ?? ''));
      await Promise.all(objects.map((o) => client.delete(controller.primary, o)));
      for (let i = 0; i < tries && left.size > 0; i++)
        for (const name of [...left]) {
          await reconcile({ namespace, name });
          const gone = await client.get(controller.primary, namespace, name).then(
            () => false,
            (err: unknown) => (err as { code?: number }).code === 404,
          );
          if (gone) left.delete(name);
        }
      if (left.size > 0)
        throw new Error(`${controller.name}: still there after ${tries} reconciles: ${[...left].join(', ')}`);
    },
  };
}

/**
 * The keys a watch event enqueues for `controller`, as the relay computes them (relay/pipeline.ts
 * `KeyPipeline.keysFor`), for each of the controller's watches of the event's resource: the
 * primary predicate on a watch of the primary resource, or the status predicate on a secondary
 * watch that declares `readsStatus` (core/contract/watch-predicates.ts), then the watch's own
 * `predicate`, then its `map`; duplicates removed, and a key's `cluster` kept only when it names
 * another cluster than the context's.
 *
 * Differences from the relay, for a test: the event's objects are whole objects (the relay's
 * informer reads `readsStatus` from the whole object and hands on metadata), and each watch's
 * `readsStatus` is compared alone (the relay combines those of the watches an informer serves); a
 * predicate or map that throws, or an invalid key, throws here (the relay logs it and drops the
 * event or key), so that the test sees the defect.
 * @param options.resource the watched resource, by group and plural; default: the controller's
 *   watched resource whose group and kind are `event.object`'s `apiVersion` and `kind`
 * @param options.context the relay's caches as a map reads them ({@link MapContext}); default: an
 *   empty cache of the `default` cluster
 * @returns the keys, `[]` when the event enqueues nothing
 * @throws {Error} when no watch of the controller matches the resource, and as above
 */
export function keysFor(
  controller: Controller,
  event: WatchEvent,
  options: { resource?: Pick<ResourceType, 'group' | 'plural'>; context?: Partial<MapContext> } = {},
): MappedKey[] {
  const [group, version] = (event.object.apiVersion ?? '').includes('/')
    ? (event.object.apiVersion ?? '').split('/')
    : ['', event.object.apiVersion];
  const watches = controller.watches.filter((w) =>
    options.resource
      ? w.resource.group === options.resource.group && w.resource.plural === options.resource.plural
      : w.resource.group === group && w.resource.kind === event.object.kind,
  );
  if (watches.length === 0)
    throw new Error(
      `controller ${controller.name} watches no ${options.resource ? `${options.resource.plural}.${options.resource.group}` : `${event.object.kind} of ${group}/${version}`}`,
    );
  const cluster = options.context?.cluster ?? DEFAULT_CLUSTER;
  const context: MapContext = {
    cluster,
    primaryKeys: () => [],
    get: () => undefined,
    byIndex: () => [],
    ...options.context,
  };
  const keys: MappedKey[] = [];
  for (const watch of watches) {
    const readOf = (object: KubernetesObject) => {
      try {
        return JSON.stringify(watch.readsStatus?.(object)) ?? 'undefined';
      } catch {
        return undefined; // as the relay: a readsStatus that throws lets every event pass
      }
    };
    const passes = isPrimaryWatch(controller, watch)
      ? primaryEventPasses(event)
      : !watch.readsStatus || statusEventPassesWith(event, readOf);
    if (!passes || (watch.predicate && !watch.predicate(event))) continue;
    keys.push(
      ...mappedKeys(watch.map(event, context), cluster, (k) => {
        throw new Error(
          `controller ${controller.name}: its map returned an invalid key ${JSON.stringify(k)}`,
        );
      }),
    );
  }
  return mappedKeys(keys, cluster, () => {});
}
