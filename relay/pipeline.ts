/**
 * From watch events to key messages: which controllers' watches an informer serves (shared like
 * client-go's SharedInformerFactory), the primary predicate, `Watch.map`, collapse, publish.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type {
  Controller,
  MapContext,
  ResourceType,
  Watch,
  WatchEvent,
} from '../functions/contract/controller.ts';
import {
  type ControllerKey,
  DEFAULT_CLUSTER,
  type Key,
  keyString,
  orderingKeyOf,
} from '../functions/contract/key.ts';
import type { Logger } from '../functions/log.ts';
import { type KeyMessage, keyMessageOf } from '../functions/message.ts';
import type { BackoffOptions } from './backoff.ts';
import { type CollapseMode, Collapser, systemTimers, type Timers } from './collapse.ts';
import { resourceName } from './metadata.ts';
import type { RelayMetrics } from './metrics.ts';
import { primaryEventPasses } from './predicate.ts';
import { DEFAULT_RETRY_BUFFER_KEYS, RetryBuffer } from './retry-buffer.ts';

/** One controller's watch served by an informer. */
export interface Route {
  controller: Controller;
  watch: Watch;
  /** The watch of the controller's primary resource: the generation-changed predicate applies. */
  primary: boolean;
}

/** One list+watch the relay runs, and the watches it serves. */
export interface InformerPlan {
  /** `v1/secrets`, plus `@namespace` and `?labelSelector` when set (equals {@link MetadataInformer.id}). */
  id: string;
  resource: ResourceType;
  namespace?: string;
  labelSelector?: string;
  routes: Route[];
}

/** Whether `watch` lists+watches the controller's primary resource (same group and plural). */
export function isPrimaryWatch(controller: Controller, watch: Watch): boolean {
  return (
    watch.resource.group === controller.primary.group && watch.resource.plural === controller.primary.plural
  );
}

/**
 * Groups every watch of every controller into informers: watches of the same group/version/plural,
 * namespace and label selector share one list+watch.
 */
export function planInformers(controllers: readonly Controller[]): InformerPlan[] {
  const plans = new Map<string, InformerPlan>();
  for (const controller of controllers) {
    for (const watch of controller.watches) {
      const id =
        resourceName(watch.resource) +
        (watch.namespace ? `@${watch.namespace}` : '') +
        (watch.labelSelector ? `?${watch.labelSelector}` : '');
      let plan = plans.get(id);
      if (!plan) {
        plan = { id, resource: watch.resource, routes: [] };
        if (watch.namespace) plan.namespace = watch.namespace;
        if (watch.labelSelector) plan.labelSelector = watch.labelSelector;
        plans.set(id, plan);
      }
      plan.routes.push({ controller, watch, primary: isPrimaryWatch(controller, watch) });
    }
  }
  return [...plans.values()];
}

export interface PipelineOptions {
  /** The id of the cluster the relay watches, named in every key it publishes; default `default`. */
  cluster?: string;
  /** Collapse window in ms. */
  collapseMs: number;
  /** Default `leading-trailing` (see `relay/collapse.ts`). */
  collapseMode?: CollapseMode;
  /** Publishes one key message; resolves with the message id. */
  publish(message: KeyMessage): Promise<string>;
  /** The primary keys in the relay's cache of a controller's primary resource ({@link MapContext.primaryKeys}). */
  primaryKeys(controller: string): Key[];
  /** The cached metadata of `key` in a controller's watch of `resource` ({@link MapContext.get}). */
  lookup?(
    controller: string,
    resource: Pick<ResourceType, 'group' | 'kind'>,
    key: Key,
  ): KubernetesObject | undefined;
  /** The primaries of a controller whose spec index has a value ({@link MapContext.byIndex}). */
  byIndex?(controller: string, index: string, value: string): Key[];
  logger: Logger;
  metrics?: RelayMetrics;
  timers?: Timers;
  /** Keys the publish retry buffer holds at most; default {@link DEFAULT_RETRY_BUFFER_KEYS}. */
  retryBufferKeys?: number;
  /** Backoff of the publish retry buffer (tests shorten it). */
  retryBackoff?: BackoffOptions;
}

/** Validates a key returned by a `Watch.map`: a non-empty name, a string namespace. */
function isKey(k: unknown): k is Key {
  const key = k as Partial<Key> | null;
  return (
    typeof key === 'object' &&
    key !== null &&
    typeof key.name === 'string' &&
    key.name.length > 0 &&
    typeof key.namespace === 'string'
  );
}

/**
 * The event → key → message flow. Events go in with {@link KeyPipeline.handle}; each affected key is
 * queued in the collapser: the first event of a quiet key is published at once, repeats within the
 * window after it as one trailing message at the window's end.
 */
export class KeyPipeline {
  readonly #options: PipelineOptions;
  readonly #collapser: Collapser<ControllerKey>;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #contexts = new Map<string, MapContext>();
  readonly #timers: Timers;
  readonly #retry: RetryBuffer<ControllerKey>;

  constructor(options: PipelineOptions) {
    this.#options = options;
    this.#timers = options.timers ?? systemTimers;
    const { metrics, logger } = options;
    this.#retry = new RetryBuffer<ControllerKey>({
      capacity: options.retryBufferKeys ?? DEFAULT_RETRY_BUFFER_KEYS,
      backoff: options.retryBackoff,
      timers: this.#timers,
      onSize: (size) => metrics?.retryBufferKeys.set(size),
      onDrop: (key) => {
        metrics?.retryDropped.inc({ controller: key.controller });
        logger.warn(
          { controller: key.controller, key: keyString(key) },
          'publish retry buffer full: oldest key dropped (the next resync reconciles it)',
        );
      },
      retry: (keys) => {
        logger.info({ keys: keys.length }, 'retrying keys whose publish failed');
        for (const key of keys) {
          metrics?.keysRetried.inc({ controller: key.controller });
          this.enqueue(key.controller, key);
        }
      },
    });
    this.#collapser = new Collapser<ControllerKey>({
      windowMs: options.collapseMs,
      mode: options.collapseMode,
      timers: this.#timers,
      emit: (_id, key, firstAddedAt) => this.#publish(key, firstAddedAt),
    });
  }

  /** Keys waiting in the collapse window for their trailing publish. */
  get pending(): number {
    return this.#collapser.size;
  }

  #context(controller: string): MapContext {
    let ctx = this.#contexts.get(controller);
    if (!ctx) {
      ctx = {
        primaryKeys: () => this.#options.primaryKeys(controller),
        get: (resource, key) => this.#options.lookup?.(controller, resource, key),
        byIndex: (index, value) => this.#options.byIndex?.(controller, index, value) ?? [],
      };
      this.#contexts.set(controller, ctx);
    }
    return ctx;
  }

  /**
   * The keys one route enqueues for an event: `[]` when the primary predicate drops it or the map
   * returns nothing; invalid keys from the map are dropped and logged; duplicates are removed.
   */
  keysFor(route: Route, event: WatchEvent): Key[] {
    const controller = route.controller.name;
    if ((route.primary && !primaryEventPasses(event)) || !this.#passes(route, event)) {
      this.#options.metrics?.eventsFiltered.inc({ controller });
      return [];
    }
    let mapped: unknown;
    try {
      mapped = route.watch.map(event, this.#context(controller));
    } catch (err) {
      this.#options.logger.error(
        { err, controller, resource: resourceName(route.watch.resource) },
        'watch map threw: event dropped',
      );
      return [];
    }
    if (!Array.isArray(mapped)) return [];
    const seen = new Map<string, Key>();
    for (const k of mapped) {
      if (!isKey(k)) {
        this.#options.logger.error(
          { controller, resource: resourceName(route.watch.resource) },
          'watch map returned an invalid key',
        );
        continue;
      }
      seen.set(keyString(k), { namespace: k.namespace, name: k.name });
    }
    return [...seen.values()];
  }

  /** The watch's own predicate (`Watch.predicate`); one that throws drops the event, logged. */
  #passes(route: Route, event: WatchEvent): boolean {
    if (!route.watch.predicate) return true;
    try {
      return route.watch.predicate(event);
    } catch (err) {
      this.#options.logger.error(
        { err, controller: route.controller.name, resource: resourceName(route.watch.resource) },
        'watch predicate threw: event dropped',
      );
      return false;
    }
  }

  /** Routes one informer event to every watch it serves. */
  handle(routes: readonly Route[], event: WatchEvent): void {
    for (const route of routes) {
      for (const key of this.keysFor(route, event)) this.enqueue(route.controller.name, key);
    }
  }

  /** Queues one key (collapsing repeats inside the window). */
  enqueue(controller: string, key: Key): void {
    const queued: ControllerKey = {
      cluster: this.#options.cluster ?? DEFAULT_CLUSTER,
      controller,
      namespace: key.namespace,
      name: key.name,
    };
    if (this.#collapser.add(orderingKeyOf(queued), queued))
      this.#options.metrics?.keysEnqueued.inc({ controller });
    else this.#options.metrics?.keysCollapsed.inc({ controller });
  }

  #publish(key: ControllerKey, firstAddedAt: number): void {
    const message = keyMessageOf(key, 'watch', new Date(firstAddedAt).toISOString());
    const { metrics, logger } = this.#options;
    const labels = { controller: key.controller };
    const p = (async () => {
      try {
        const messageId = await this.#options.publish(message);
        metrics?.keysPublished.inc(labels);
        metrics?.enqueueToPublish.observe(labels, (this.#timers.now() - firstAddedAt) / 1000);
        logger.debug({ controller: key.controller, key: keyString(key), messageId }, 'published');
        this.#retry.succeeded();
      } catch (err) {
        metrics?.publishErrors.inc(labels);
        // Terraform's log-based alert matches this exact message. The key waits in the bounded
        // retry buffer and is published again after a backoff; the periodic resync covers a key
        // the full buffer dropped.
        logger.error({ err, controller: key.controller, key: keyString(key) }, 'publish failed');
        this.#retry.add(orderingKeyOf(key), key);
      }
    })();
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p));
  }

  /** Publishes every pending key now and waits until every publish has settled. */
  async flush(): Promise<void> {
    this.#collapser.flush();
    while (this.#inFlight.size) await Promise.allSettled([...this.#inFlight]);
  }

  /** Keys whose publish failed, waiting in the retry buffer. */
  get retrying(): number {
    return this.#retry.size;
  }

  /** Drops pending keys (collapse window and retry buffer) without publishing them. */
  discard(): void {
    this.#collapser.clear();
    this.#retry.clear();
  }
}
