/**
 * The relay's Prometheus metrics (prom-client), on a registry of its own so that several relays in
 * one process (tests) do not collide. Served at `/metrics` by {@link ./health.ts}.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export interface RelayMetrics {
  registry: Registry;
  /** Watch events received, by informer id (`v1/secrets`) and type (ADDED, MODIFIED, DELETED). */
  eventsReceived: Counter<'resource' | 'type'>;
  /** Primary events dropped by the generation-changed predicate, by controller. */
  eventsFiltered: Counter<'controller'>;
  /** Keys newly queued in the collapse window, by controller. */
  keysEnqueued: Counter<'controller'>;
  /** Keys that collapsed into one already queued, by controller. */
  keysCollapsed: Counter<'controller'>;
  /** Key messages accepted by Pub/Sub, by controller. */
  keysPublished: Counter<'controller'>;
  /** Key messages Pub/Sub refused (logged as `publish failed`), by controller. */
  publishErrors: Counter<'controller'>;
  /** Seconds from a key's first enqueue to Pub/Sub accepting its message (collapse window + publish). */
  enqueueToPublish: Histogram<'controller'>;
  /** Restarts of a list+watch after an error, by informer id. */
  informerRestarts: Counter<'resource'>;
  /** 1 once an informer's first LIST is in its cache, by informer id. */
  informerSynced: Gauge<'resource'>;
  /** 1 while an informer has a watch stream open (or its resource is not served), by informer id. */
  informerWatching: Gauge<'resource'>;
  /**
   * Unix time (s) of the last event or BOOKMARK on an informer's watch, or of its last successful
   * LIST, by informer id. A timestamp rather than an age (Prometheus instrumentation practice: export
   * when, not how long ago — it stays right between scrapes and when the process stalls); alert on
   * `time() - levelset_relay_watch_last_event_timestamp_seconds > 120`.
   */
  watchLastEventTimestamp: Gauge<'resource'>;
  /** Watches aborted because they stayed silent (no event, no bookmark) past the limit, by informer id. */
  watchSilenceRestarts: Counter<'resource'>;
  /** Keys waiting in the publish retry buffer (a publish failed; retried with backoff), all controllers. */
  retryBufferKeys: Gauge;
  /** Keys dropped from the full publish retry buffer (oldest first): the next resync reconciles them. */
  retryDropped: Counter<'controller'>;
  /** Keys taken from the retry buffer back into the pipeline, by controller. */
  keysRetried: Counter<'controller'>;
  /** Keys waiting in the collapse window now (read at scrape time from {@link RelayMetrics.trackPendingKeys}'s source). */
  keysPending: Gauge;
  /** Sets where {@link RelayMetrics.keysPending} reads the number of keys in the collapse window. */
  trackPendingKeys(source: () => number): void;
  /**
   * Key publishes waiting for one of the relay's `RELAY_MAX_IN_FLIGHT` publishes to settle (read at
   * scrape time from {@link RelayMetrics.trackWaitingPublishes}'s source), all controllers.
   */
  publishesWaiting: Gauge;
  /** Sets where {@link RelayMetrics.publishesWaiting} reads the number of publishes waiting. */
  trackWaitingPublishes(source: () => number): void;
}

/**
 * A registry holding prom-client's default process metrics (`process_resident_memory_bytes`,
 * `nodejs_heap_size_used_bytes`, …), for the relay process's `/metrics` (relay/main.ts), as a Go
 * controller's client_golang serves its own: its memory over time (`npm run soak` reads it).
 */
export function processMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Creates the relay's metrics in `registry` (default: a new one). */
export function createRelayMetrics(registry: Registry = new Registry()): RelayMetrics {
  const registers = [registry];
  let pendingKeys = (): number => 0;
  let waitingPublishes = (): number => 0;
  return {
    trackPendingKeys: (source) => {
      pendingKeys = source;
    },
    trackWaitingPublishes: (source) => {
      waitingPublishes = source;
    },
    publishesWaiting: new Gauge({
      name: 'levelset_relay_publishes_waiting',
      help: 'Key publishes waiting for one of the publishes in flight (RELAY_MAX_IN_FLIGHT) to settle.',
      registers,
      collect() {
        this.set(waitingPublishes());
      },
    }),
    keysPending: new Gauge({
      name: 'levelset_relay_keys_pending',
      help: 'Keys waiting in the collapse window.',
      registers,
      collect() {
        this.set(pendingKeys());
      },
    }),
    registry,
    eventsReceived: new Counter({
      name: 'levelset_relay_events_received_total',
      help: 'Watch events received, by informer and event type.',
      labelNames: ['resource', 'type'],
      registers,
    }),
    eventsFiltered: new Counter({
      name: 'levelset_relay_events_filtered_total',
      help: 'Primary events dropped because only status changed (generation-changed predicate).',
      labelNames: ['controller'],
      registers,
    }),
    keysEnqueued: new Counter({
      name: 'levelset_relay_keys_enqueued_total',
      help: 'Keys newly queued in the collapse window.',
      labelNames: ['controller'],
      registers,
    }),
    keysCollapsed: new Counter({
      name: 'levelset_relay_keys_collapsed_total',
      help: 'Keys that collapsed into one already queued.',
      labelNames: ['controller'],
      registers,
    }),
    keysPublished: new Counter({
      name: 'levelset_relay_keys_published_total',
      help: 'Key messages accepted by Pub/Sub.',
      labelNames: ['controller'],
      registers,
    }),
    publishErrors: new Counter({
      name: 'levelset_relay_publish_errors_total',
      help: 'Key messages Pub/Sub refused.',
      labelNames: ['controller'],
      registers,
    }),
    enqueueToPublish: new Histogram({
      name: 'levelset_relay_enqueue_to_publish_seconds',
      help: "Seconds from a key's first enqueue to Pub/Sub accepting its message.",
      labelNames: ['controller'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.3, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    informerRestarts: new Counter({
      name: 'levelset_relay_informer_restarts_total',
      help: 'Restarts of a list+watch after an error.',
      labelNames: ['resource'],
      registers,
    }),
    informerSynced: new Gauge({
      name: 'levelset_relay_informer_synced',
      help: "1 once an informer's first list is in its cache and while its resource is served (0 while it waits for a CRD).",
      labelNames: ['resource'],
      registers,
    }),
    informerWatching: new Gauge({
      name: 'levelset_relay_informer_watching',
      help: 'Whether an informer has a watch stream open (1) or cannot watch now (0).',
      labelNames: ['resource'],
      registers,
    }),
    watchLastEventTimestamp: new Gauge({
      name: 'levelset_relay_watch_last_event_timestamp_seconds',
      help: "Unix time of the last event or bookmark on an informer's watch (or of its last list).",
      labelNames: ['resource'],
      registers,
    }),
    watchSilenceRestarts: new Counter({
      name: 'levelset_relay_watch_silence_restarts_total',
      help: 'Watches aborted and watched again because they stayed silent (no event, no bookmark) too long.',
      labelNames: ['resource'],
      registers,
    }),
    retryBufferKeys: new Gauge({
      name: 'levelset_relay_retry_buffer_keys',
      help: 'Keys whose publish failed, waiting to be retried.',
      registers,
    }),
    retryDropped: new Counter({
      name: 'levelset_relay_retry_dropped_total',
      help: 'Keys dropped from the full publish retry buffer (oldest first); the next resync covers them.',
      labelNames: ['controller'],
      registers,
    }),
    keysRetried: new Counter({
      name: 'levelset_relay_keys_retried_total',
      help: 'Keys taken from the publish retry buffer back into the pipeline.',
      labelNames: ['controller'],
      registers,
    }),
  };
}
