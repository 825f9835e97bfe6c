/**
 * Kubernetes Events about the objects a controller reconciles, written and aggregated as client-go's
 * `tools/record` EventRecorder and EventCorrelator do (what controller-runtime's recorder uses):
 * core/v1 Events that `kubectl describe` and `kubectl get events` show, where a repeat of the same
 * (object, type, reason, message) increments the existing Event's `count` and moves its
 * `lastTimestamp` instead of creating a new Event.
 *
 * Why core/v1 and not events.k8s.io/v1: both are one storage in kube-apiserver; kubectl reads core/v1;
 * client-go's older recorder (and controller-runtime) write core/v1 with `count`, and that aggregation
 * needs no `series` bookkeeping (events.k8s.io's series requires eventTime as a MicroTime, a
 * reportingController/reportingInstance/action and its own isomorphic-key rules).
 *
 * Stateless instances: client-go keys its aggregation by an in-memory LRU cache, so it aggregates only
 * within one process. Here the Event's name is derived from the aggregation key (see
 * {@link eventName}), so a repeat from ANY instance finds the same Event: creating it answers
 * `409 AlreadyExists`, and the recorder then reads and patches it. Request cost per record:
 * first occurrence 1 (POST); a repeat this process recorded 1 (PATCH); a repeat first seen by this
 * process, or after another instance counted, 3 (POST 409 or PATCH 422, GET, PATCH).
 */
import { createHash } from 'node:crypto';
import {
  type CoreV1Event,
  HttpMethod,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import type { EventRecorder, EventType, PolicyRule, ResourceType } from '../contract/controller.ts';
import type { Logger } from '../log.ts';
import { metaTime } from './conditions.ts';
import { apiStatusOf } from './errors.ts';
import { jsonRequester, resourcePath } from './rest.ts';

/**
 * The RBAC the recorder needs: `create` (first occurrence), `get` (read the count of an Event another
 * instance wrote) and `patch` (count a repeat) on core `events`. Controllers list it in their `rbac`.
 */
export const EVENT_RECORDER_RULE: PolicyRule = {
  apiGroups: [''],
  resources: ['events'],
  verbs: ['create', 'get', 'patch'],
};

/** core/v1 Events, the resource the recorder writes. */
const CORE_EVENTS: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
  statusSubresource: false,
};

/** Entries kept by the per-process cache of Event counts (client-go's maxLruCacheEntries). */
export const EVENT_CACHE_ENTRIES = 4096;

/** Attempts of create / read / patch before an Event is given up (logged). */
const ATTEMPTS = 3;

/** Per process: the `count` this process last saw for an Event, by `<server> <namespace>/<name>`. */
const counts = new Map<string, number>();

/** Forgets every cached count, as a fresh process (function instance) starts: for tests. */
export function forgetEventCounts(): void {
  counts.clear();
}

function remember(key: string, count: number): void {
  counts.delete(key);
  counts.set(key, count);
  if (counts.size > EVENT_CACHE_ENTRIES) {
    const oldest = counts.keys().next().value;
    if (oldest !== undefined) counts.delete(oldest);
  }
}

/**
 * The Event name for an aggregation key: `<object name>.<16 hex of SHA-256>` of the component, the
 * object's apiVersion/kind/namespace/name/uid, the type, reason and message (client-go's
 * `getEventKey`, without `source.host`, so that every instance of a function aggregates into one
 * Event). The object name is cut to 200 characters (Event names are at most 253).
 */
export function eventName(
  component: string,
  object: KubernetesObject,
  type: EventType,
  reason: string,
  message: string,
): string {
  const md = object.metadata ?? {};
  const key = [
    component,
    object.apiVersion,
    object.kind,
    md.namespace,
    md.name,
    md.uid,
    type,
    reason,
    message,
  ]
    .map((p) => p ?? '')
    .join('\n');
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 16);
  return `${(md.name || 'object').slice(0, 200)}.${hash}`;
}

/**
 * An EventRecorder writing core/v1 Events with `source.component` and `reportingComponent` =
 * `levelset.dev/<controller>`, `reportingInstance` = the Cloud Run revision (or HOSTNAME), times as
 * metav1.Time (RFC 3339, whole seconds: {@link metaTime}).
 */
export function createEventRecorder(kubeConfig: KubeConfig, controller: string, log: Logger): EventRecorder {
  // Levelset's own requester (core/k8s/rest.ts), as the kit's client: the generated CoreV1Api's
  // serializer and fetch cost a write about twice the CPU.
  const request = jsonRequester(kubeConfig);
  const component = `levelset.dev/${controller}`;
  const server = kubeConfig.getCurrentCluster()?.server ?? '';

  /** The Event's `count` on the server, or `undefined` when it does not exist. */
  async function readCount(namespace: string, name: string): Promise<number | undefined> {
    try {
      const { body } = await request(HttpMethod.GET, resourcePath(CORE_EVENTS, namespace, name));
      return (body as CoreV1Event).count ?? 1;
    } catch (err) {
      if (apiStatusOf(err) === 404) return undefined;
      throw err;
    }
  }

  return {
    async record(object, type, reason, message) {
      const md = object.metadata ?? {};
      const namespace = md.namespace || 'default';
      const name = eventName(component, object, type, reason, message);
      const cacheKey = `${server} ${namespace}/${name}`;
      const now = metaTime(new Date());
      let count = counts.get(cacheKey);
      try {
        for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
          if (count === undefined) {
            const body: CoreV1Event = {
              metadata: { name, namespace },
              involvedObject: {
                apiVersion: object.apiVersion,
                kind: object.kind,
                name: md.name,
                namespace: md.namespace,
                uid: md.uid,
                resourceVersion: md.resourceVersion,
              },
              type,
              reason,
              message,
              source: { component },
              reportingComponent: component,
              reportingInstance: process.env.K_REVISION ?? process.env.HOSTNAME ?? 'local',
              // metav1.Time strings in whole seconds, as client-go marshals them and kube-apiserver
              // stores them (client-node would send a Date's milliseconds; accepted, but truncated).
              firstTimestamp: now as unknown as Date,
              lastTimestamp: now as unknown as Date,
              count: 1,
            };
            try {
              await request(HttpMethod.POST, resourcePath(CORE_EVENTS, namespace), { body });
              remember(cacheKey, 1);
              log.debug({ reason, type, event: name }, 'recorded event');
              return;
            } catch (err) {
              if (apiStatusOf(err) !== 409) throw err;
              count = await readCount(namespace, name);
              continue;
            }
          }
          // A repeat: count + 1, guarded by a JSON patch `test` so concurrent instances do not lose counts.
          const ops = [
            { op: 'test', path: '/count', value: count },
            { op: 'replace', path: '/count', value: count + 1 },
            { op: 'replace', path: '/lastTimestamp', value: now },
          ];
          try {
            const { body: patched } = await request(
              HttpMethod.PATCH,
              resourcePath(CORE_EVENTS, namespace, name),
              {
                body: ops,
                contentType: 'application/json-patch+json',
              },
            );
            remember(cacheKey, (patched as CoreV1Event).count ?? count + 1);
            log.debug({ reason, type, event: name, count: count + 1 }, 'recorded repeated event');
            return;
          } catch (err) {
            const status = apiStatusOf(err);
            if (status === 404) count = undefined;
            else if (status === 422) count = await readCount(namespace, name);
            else throw err;
          }
        }
        counts.delete(cacheKey);
        log.warn({ reason, event: name }, 'could not record event: it kept changing');
      } catch (err) {
        counts.delete(cacheKey);
        log.warn({ err: String(err), reason }, 'could not record event');
      }
    },
  };
}

/** Events a {@link BackgroundEvents} holds, at most, before it drops new ones (client-go's broadcaster: 1000 queued). */
export const BACKGROUND_EVENTS_QUEUED = 1000;

/** Events a {@link BackgroundEvents} writes at once. */
const BACKGROUND_EVENTS_CONCURRENCY = 4;

/**
 * Events recorded in the background, as client-go's EventBroadcaster records them (what
 * sample-controller and controller-runtime use): `record` returns at once, the write is queued (at
 * most {@link BACKGROUND_EVENTS_QUEUED}; beyond, the Event is dropped and logged, as client-go drops
 * one when its channel is full) and made by a few writers; a failed write is logged by the recorder
 * after its few attempts, never retried further. For a long-lived process alone (the in-process
 * mode): a serverless instance's CPU is throttled once it has answered, so there each Event is
 * written before the response.
 */
export class BackgroundEvents {
  private readonly queue: (() => Promise<void>)[] = [];
  private running = 0;
  private readonly idle = new Set<() => void>();
  private dropped = 0;
  private closed = false;

  private readonly log: Logger;
  private readonly capacity: number;

  constructor(log: Logger, capacity = BACKGROUND_EVENTS_QUEUED) {
    this.log = log;
    this.capacity = capacity;
  }

  /** Events waiting or being written. */
  get pending(): number {
    return this.queue.length + this.running;
  }

  /** `recorder`, its records queued here: each returns at once. */
  wrap(recorder: EventRecorder): EventRecorder {
    return {
      record: (object, type, reason, message) => {
        this.enqueue(() => recorder.record(object, type, reason, message), reason);
        return Promise.resolve();
      },
    };
  }

  private enqueue(write: () => Promise<void>, reason: string): void {
    if (this.closed || this.queue.length >= this.capacity) {
      this.dropped++;
      this.log.warn(
        { reason, dropped: this.dropped },
        this.closed ? 'event dropped: shutting down' : 'event dropped: the event queue is full',
      );
      return;
    }
    this.queue.push(write);
    this.pump();
  }

  private pump(): void {
    while (this.running < BACKGROUND_EVENTS_CONCURRENCY && this.queue.length > 0) {
      const write = this.queue.shift() as () => Promise<void>;
      this.running++;
      void write()
        .catch((err) => this.log.warn({ err: String(err) }, 'could not record event'))
        .finally(() => {
          this.running--;
          this.pump();
          if (this.pending === 0) for (const resolve of this.idle) resolve();
        });
    }
  }

  /**
   * Stops taking Events and waits for the queued ones to be written, at most `deadlineMs`; what is
   * left then is dropped and logged (client-go's broadcaster `Shutdown` flushes the same way).
   * @returns whether every queued Event was written
   */
  async flush(deadlineMs: number): Promise<boolean> {
    this.closed = true;
    if (this.pending === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    let resolveIdle: (() => void) | undefined;
    const done = await Promise.race([
      new Promise<true>((resolve) => {
        resolveIdle = () => resolve(true);
        this.idle.add(resolveIdle);
      }),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), deadlineMs);
      }),
    ]);
    clearTimeout(timer);
    if (resolveIdle) this.idle.delete(resolveIdle);
    if (!done) {
      const left = this.queue.length;
      this.queue.length = 0;
      this.log.warn({ left, deadlineMs }, 'events not recorded by the shutdown deadline');
    }
    return done;
  }
}
