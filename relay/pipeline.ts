/**
 * From watch events to key messages: which controllers' watches an informer serves (shared like
 * client-go's SharedInformerFactory), the primary predicate, `Watch.map`, collapse, publish.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  type Attributes,
  context,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import pLimit, { type LimitFunction } from 'p-limit';
import {
  type Controller,
  listWatchId,
  type MapContext,
  type ResourceType,
  type Watch,
  type WatchEvent,
} from '../core/contract/controller.ts';
import {
  type ControllerKey,
  DEFAULT_CLUSTER,
  type Key,
  keyString,
  type MappedKey,
  mappedKeys,
  orderingKeyOf,
} from '../core/contract/key.ts';
import { isPrimaryWatch } from '../core/contract/watch-predicates.ts';
import { ATTR, SPAN, tracer } from '../core/k8s/tracing.ts';
import type { Logger } from '../core/log.ts';
import { type KeyMessage, keyMessageOf } from '../core/message.ts';
import { type CollapseEdge, type CollapseMode, Collapser, systemTimers, type Timers } from './collapse.ts';
import { resourceName } from './metadata.ts';
import type { RelayMetrics } from './metrics.ts';
import { primaryEventPasses, statusEventPasses } from './predicate.ts';
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

/**
 * Groups every watch of every controller into informers: watches of the same group/version/plural,
 * namespace and label selector share one list+watch.
 */
export function planInformers(controllers: readonly Controller[]): InformerPlan[] {
  const plans = new Map<string, InformerPlan>();
  for (const controller of controllers) {
    for (const watch of controller.watches) {
      const id = listWatchId(watch);
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
  /**
   * Publishes one key message; resolves with the message id. `enqueue` is the context of the key's
   * `enqueue` span, recorded or not (the in-process mode continues it; a recorded span is also the
   * active one during the call). `resourceVersion`: the key's primary's, as
   * {@link resourceVersionOf} answers it when the publish starts.
   */
  publish(message: KeyMessage, enqueue?: SpanContext, resourceVersion?: string): Promise<string>;
  /**
   * The `resourceVersion` of a key's primary object in the relay's cache of the controller's primary
   * resource, `undefined` when not cached: published with the key (core/message.ts
   * `RESOURCE_VERSION_ATTRIBUTE`), so the reconcile reads the primary not older than it.
   */
  resourceVersionOf?(controller: string, key: Key): string | undefined;
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
  /**
   * Publishes pending at once at most (≥ 1); the next wait in FIFO order. Default
   * {@link DEFAULT_MAX_IN_FLIGHT}.
   */
  maxInFlight?: number;
}

/**
 * Default {@link PipelineOptions.maxInFlight}: without a bound, the keys of a relay's first LIST on
 * a large cluster ran it out of heap as pending publishes (docs/architecture.md, decision 34).
 */
export const DEFAULT_MAX_IN_FLIGHT = 1000;

/**
 * Why a key is enqueued, for its `enqueue` span: a watch event (with the resource it came from), a
 * changed spec-index value of a primary, or a publish retry.
 */
export type EnqueueCause =
  | { cause: 'watch'; event: WatchEvent; resource: ResourceType }
  | { cause: 'index'; object: KubernetesObject; resource?: ResourceType }
  | { cause: 'retry' };

/** The attributes of an enqueue's cause: for a watch event its resource, type and resourceVersion. */
function causeAttributes(c: EnqueueCause): Attributes {
  if (c.cause === 'watch')
    return {
      [ATTR.cause]: 'watch',
      [ATTR.resource]: resourceName(c.resource),
      [ATTR.eventType]: c.event.type,
      [ATTR.resourceVersion]: c.event.object.metadata?.resourceVersion ?? '',
    };
  if (c.cause === 'index')
    return {
      [ATTR.cause]: 'index',
      ...(c.resource ? { [ATTR.resource]: resourceName(c.resource) } : {}),
      [ATTR.resourceVersion]: c.object.metadata?.resourceVersion ?? '',
    };
  return { [ATTR.cause]: 'retry' };
}

/**
 * The key waiting for its trailing publish: its `enqueue` span, the events collapsed into it so far,
 * and the last of them (its cause and `performance.now()` ms), recorded as a span event at the publish.
 */
interface Waiting {
  span: Span;
  collapsed: number;
  lastCause?: EnqueueCause | undefined;
  lastAt?: number;
}

/** A key in the collapser, with the `enqueue` span that follows it until its publish settles. */
interface Queued extends ControllerKey {
  span: Span;
}

/**
 * The event → key → message flow. Events go in with {@link KeyPipeline.handle}; each affected key is
 * queued in the collapser: the first event of a quiet key is published at once, repeats within the
 * window after it as one trailing message at the window's end. At most
 * {@link PipelineOptions.maxInFlight} publishes are pending at once; the collapser's emits
 * beyond them wait in one FIFO, so publishes start in the order they were emitted, and the
 * publishes of one key (a leading edge and the trailing edge after it) reach the Pub/Sub client in
 * that order, as without the bound (its ordering key keeps them so).
 */
export class KeyPipeline {
  readonly #options: PipelineOptions;
  readonly #collapser: Collapser<Queued>;
  /** Ordering key → the key waiting for its trailing publish (collapsed events: its span's first and last). */
  readonly #waiting = new Map<string, Waiting>();
  /** Every publish not settled yet: pending in the Pub/Sub client, or waiting for {@link #limit}. */
  readonly #inFlight = new Set<Promise<void>>();
  /** Starts publishes in emit order, at most `maxInFlight` pending at once (p-limit: a FIFO). */
  readonly #limit: LimitFunction;
  readonly #contexts = new Map<string, MapContext>();
  readonly #timers: Timers;
  readonly #retry: RetryBuffer<ControllerKey>;
  /** The global provider's tracer, taken once (a proxy until an SDK registers: it then follows it). */
  readonly #tracer = tracer();

  /** @throws {RangeError} when `maxInFlight` is not an integer ≥ 1 (and as the collapser, retry buffer). */
  constructor(options: PipelineOptions) {
    this.#options = options;
    this.#timers = options.timers ?? systemTimers;
    const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    if (!(Number.isInteger(maxInFlight) && maxInFlight >= 1))
      throw new RangeError('maxInFlight must be an integer >= 1');
    // rejectOnClear: a publish that discard() drops before it started settles (its span ends).
    this.#limit = pLimit({ concurrency: maxInFlight, rejectOnClear: true });
    const { metrics, logger } = options;
    this.#retry = new RetryBuffer<ControllerKey>({
      capacity: options.retryBufferKeys ?? DEFAULT_RETRY_BUFFER_KEYS,
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
          this.enqueue(key.controller, key, { cause: 'retry' });
        }
      },
    });
    this.#collapser = new Collapser<Queued>({
      windowMs: options.collapseMs,
      mode: options.collapseMode,
      timers: this.#timers,
      emit: (_id, key, firstAddedAt, edge) => this.#publish(key, firstAddedAt, edge),
    });
  }

  /** Keys waiting in the collapse window for their trailing publish. */
  get pending(): number {
    return this.#collapser.size;
  }

  /** Publishes emitted but not started: waiting for one of the `maxInFlight` to settle. */
  get waitingPublishes(): number {
    return this.#limit.pendingCount;
  }

  #context(controller: string): MapContext {
    let ctx = this.#contexts.get(controller);
    if (!ctx) {
      ctx = {
        cluster: this.#options.cluster ?? DEFAULT_CLUSTER,
        primaryKeys: () => this.#options.primaryKeys(controller),
        get: (resource, key) => this.#options.lookup?.(controller, resource, key),
        byIndex: (index, value) => this.#options.byIndex?.(controller, index, value) ?? [],
      };
      this.#contexts.set(controller, ctx);
    }
    return ctx;
  }

  /**
   * The keys one route enqueues for an event: `[]` when the primary predicate drops it (or, for a
   * secondary watch declaring `readsStatus`, the status predicate), its own predicate does, or the map
   * returns nothing; invalid keys from the map are dropped and logged; duplicates are removed. A
   * key keeps the `cluster` its map named (a child in this cluster mapped to its owner in another:
   * published for that cluster, ordered and collapsed as that cluster's key); the relay's own
   * cluster is never written into it.
   */
  keysFor(route: Route, event: WatchEvent): MappedKey[] {
    const controller = route.controller.name;
    if (
      (route.primary && !primaryEventPasses(event)) ||
      (!route.primary && route.watch.readsStatus && !statusEventPasses(event)) ||
      !this.#passes(route, event)
    ) {
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
    return mappedKeys(mapped, this.#options.cluster ?? DEFAULT_CLUSTER, () =>
      this.#options.logger.error(
        { controller, resource: resourceName(route.watch.resource) },
        'watch map returned an invalid key',
      ),
    );
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
      for (const key of this.keysFor(route, event))
        this.enqueue(route.controller.name, key, { cause: 'watch', event, resource: route.watch.resource });
    }
  }

  /**
   * Queues one key (collapsing repeats inside the window). A key that is not waiting starts an
   * `enqueue` span (a new trace) with its cause's attributes; of the repeats that collapse into the
   * waiting publish, the first and the last become `collapsed` events of that span (the last one
   * when the key is published, with the time it was seen), and `levelset.collapsed` counts them all:
   * a burst costs a recording span two events, not one per repeat (the bench's `tracing` section). A
   * key naming a `cluster` is that cluster's key; without, the relay's own.
   */
  enqueue(controller: string, key: MappedKey, cause?: EnqueueCause): void {
    const cluster = key.cluster ?? this.#options.cluster ?? DEFAULT_CLUSTER;
    const id = orderingKeyOf({ cluster, controller, namespace: key.namespace, name: key.name });
    let waiting = this.#waiting.get(id);
    if (waiting) {
      // Attributes are built only for a recording span: with tracing off (or this key's trace not
      // sampled) this path costs a counter.
      if (++waiting.collapsed === 1) {
        if (waiting.span.isRecording())
          waiting.span.addEvent('collapsed', cause ? causeAttributes(cause) : {});
      } else if (waiting.span.isRecording()) {
        waiting.lastCause = cause;
        waiting.lastAt = performance.now();
      }
    } else {
      // A root: the explicit root context spares the active context's lookup `root: true` makes.
      const span = this.#tracer.startSpan(SPAN.enqueue, { kind: SpanKind.PRODUCER }, ROOT_CONTEXT);
      if (span.isRecording())
        span.setAttributes({
          [ATTR.controller]: controller,
          [ATTR.cluster]: cluster,
          [ATTR.key]: keyString(key),
          ...(cause ? causeAttributes(cause) : {}),
        });
      // Until its publish (#publish takes it out; at once on a leading edge).
      waiting = { span, collapsed: 0 };
      this.#waiting.set(id, waiting);
    }
    const queued: Queued = {
      cluster,
      controller,
      namespace: key.namespace,
      name: key.name,
      span: waiting.span,
    };
    if (this.#collapser.add(id, queued)) this.#options.metrics?.keysEnqueued.inc({ controller });
    else this.#options.metrics?.keysCollapsed.inc({ controller });
  }

  #publish(queued: Queued, firstAddedAt: number, edge: CollapseEdge): void {
    const { span, ...key } = queued;
    if (span.isRecording()) span.setAttribute(ATTR.edge, edge);
    const id = orderingKeyOf(key);
    const waiting = this.#waiting.get(id);
    if (waiting?.span === span) {
      this.#waiting.delete(id);
      if (waiting.collapsed > 0) span.setAttribute(ATTR.collapsed, waiting.collapsed);
      if (waiting.lastAt !== undefined)
        span.addEvent(
          'collapsed',
          waiting.lastCause ? causeAttributes(waiting.lastCause) : {},
          // The SDK reads a number up to performance.now() as performance time (ms).
          waiting.lastAt,
        );
    }
    const message = keyMessageOf(key, 'watch', new Date(firstAddedAt).toISOString());
    const { metrics, logger } = this.#options;
    const labels = { controller: key.controller };
    // Read when the publish starts: the newest version the relay holds, on a retry too.
    const ownCluster = key.cluster === (this.#options.cluster ?? DEFAULT_CLUSTER);
    const publish = () =>
      this.#options.publish(
        message,
        span.spanContext(),
        ownCluster ? this.#options.resourceVersionOf?.(key.controller, key) : undefined,
      );
    const run = async () => {
      try {
        // A recorded span: the publish runs under it, so the Pub/Sub client's publish span is its
        // child and carries the trace in the message (core/publish.ts). A span not recorded (its
        // trace outside the sample ratio, or tracing off) is no parent worth a context switch
        // (AsyncLocalStorage), which cost every unsampled key more than its span: the publish runs
        // in the root context, where the Pub/Sub client's span is a root the sampler does not record
        // (core/tracing-sdk.ts levelsetSampler; decision 59).
        const messageId = await (span.isRecording()
          ? context.with(trace.setSpan(ROOT_CONTEXT, span), publish)
          : trace.getSpan(context.active())
            ? context.with(ROOT_CONTEXT, publish)
            : publish());
        span.setAttribute(ATTR.messageId, messageId);
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
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: 'publish failed: the key waits in the retry buffer',
        });
        this.#retry.add(id, key);
      } finally {
        span.end();
      }
    };
    // Never rejects: `run` handles its own failure; a publish discard() dropped before it started
    // only ends its span.
    const p = this.#limit(run).catch(() => span.end());
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p));
  }

  /** Publishes every pending key now and waits until every publish (waiting ones too) has settled. */
  async flush(): Promise<void> {
    this.#collapser.flush();
    while (this.#inFlight.size) await Promise.allSettled([...this.#inFlight]);
  }

  /**
   * Keys not published yet: publishes not settled (pending in the Pub/Sub client or waiting for a
   * slot), keys in the retry buffer and in the collapse window.
   */
  get unpublished(): number {
    return this.#inFlight.size + this.#retry.size + this.#collapser.size;
  }

  /**
   * Drops pending keys (collapse window, publishes waiting for a slot, retry buffer) without
   * publishing them; publishes already started run on.
   */
  discard(): void {
    this.#limit.clearQueue();
    for (const { span } of this.#waiting.values()) span.end();
    this.#waiting.clear();
    this.#collapser.clear();
    this.#retry.clear();
  }
}
