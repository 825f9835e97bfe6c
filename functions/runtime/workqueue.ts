/**
 * A rate-limited workqueue with client-go's semantics (k8s.io/client-go/util/workqueue), for the
 * in-process mode (`functions/runtime/in-process.ts`):
 *
 * - {@link WorkQueue} — `workqueue.Type`: a FIFO of keys with a *dirty* set (keys waiting) and a
 *   *processing* set (keys a worker holds). A key added while it waits is not queued twice; a key
 *   added while it is processing is not handed to a second worker, and is queued again when the
 *   first calls {@link WorkQueue.done} — so a key is never reconciled twice at once, and a change
 *   seen during a reconcile is reconciled once more after it.
 * - Delays (`workqueue.DelayingInterface`): {@link WorkQueue.addAfter}; a key already waiting keeps
 *   the earlier of its ready times.
 * - Rate limiting (`workqueue.RateLimitingInterface`): {@link WorkQueue.addRateLimited},
 *   {@link WorkQueue.forget}, {@link WorkQueue.numRequeues}, through a {@link RateLimiter}: the
 *   in-process mode's is max(the per-key delay its retries carry, token bucket 10 qps / burst 100),
 *   client-go's `DefaultControllerRateLimiter` with the per-key half from functions/runtime/retry.ts.
 * - Priority (controller-runtime's priority queue, `AddWithOpts{Priority}`): a key added with
 *   `priority: 'low'` (the resync's) is handed out after every key of normal priority (live events),
 *   except that one handout in {@link LOW_PRIORITY_EVERY} goes to the oldest low-priority key while
 *   both wait, so a resync's backlog never starves either. A low key added again at normal priority
 *   is promoted.
 * - Metrics under client-go's names (`workqueue_depth`, `workqueue_adds_total`, …, label `name`).
 *
 * Keys are strings (items are compared by value, as client-go compares comparable items).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { systemTimers, type Timers } from '../../relay/collapse.ts';

/** client-go's `workqueue.TypedRateLimiter`: how long a key waits before its next try. */
export interface RateLimiter {
  /** Delay in ms before `key` is added again; records a failure where the limiter counts them. */
  when(key: string): number;
  /** Stops tracking `key` (its failures are forgotten). */
  forget(key: string): void;
  /** Failures recorded for `key`. */
  numRequeues(key: string): number;
}

/**
 * client-go's `BucketRateLimiter` (golang.org/x/time/rate `Limiter.Reserve().Delay()`): an overall
 * token bucket of `burst` tokens refilled at `qps` per second; each {@link when} takes a token and
 * waits for it when the bucket is empty. Not per key: `forget` and `numRequeues` do nothing.
 */
export class BucketRateLimiter implements RateLimiter {
  #tokens: number;
  #last: number;
  readonly qps: number;
  readonly burst: number;
  readonly now: () => number;
  /** @param now clock in ms; default `performance.now`. */
  constructor(qps: number, burst: number, now: () => number = () => performance.now()) {
    this.qps = qps;
    this.burst = burst;
    this.now = now;
    if (!(qps > 0 && burst >= 1)) throw new RangeError('qps must be > 0 and burst >= 1');
    this.#tokens = burst;
    this.#last = now();
  }
  when(_key: string): number {
    const now = this.now();
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
    this.#last = now;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : (-this.#tokens / this.qps) * 1000;
  }
  forget(_key: string): void {}
  numRequeues(_key: string): number {
    return 0;
  }
}

/** client-go's `MaxOfRateLimiter`: the longest delay of its limiters; the most requeues. */
export class MaxOfRateLimiter implements RateLimiter {
  readonly #limiters: RateLimiter[];
  constructor(...limiters: RateLimiter[]) {
    this.#limiters = limiters;
  }
  when(key: string): number {
    let max = 0;
    for (const l of this.#limiters) max = Math.max(max, l.when(key));
    return max;
  }
  forget(key: string): void {
    for (const l of this.#limiters) l.forget(key);
  }
  numRequeues(key: string): number {
    let max = 0;
    for (const l of this.#limiters) max = Math.max(max, l.numRequeues(key));
    return max;
  }
}

/** The workqueue metrics client-go's `workqueue.MetricsProvider` exposes (component-base names), label `name`. */
export interface WorkQueueMetrics {
  depth: Gauge<'name'>;
  adds: Counter<'name'>;
  queueDuration: Histogram<'name'>;
  workDuration: Histogram<'name'>;
  retries: Counter<'name'>;
  unfinishedWork: Gauge<'name'>;
  longestRunningProcessor: Gauge<'name'>;
  /** Makes `queue` reported by the gauges computed at scrape time (unfinished work, longest processor). */
  track(queue: WorkQueue): void;
}

/** Seconds buckets of client-go's workqueue histograms: `ExponentialBuckets(10e-9, 10, 10)`. */
const DURATION_BUCKETS = Array.from({ length: 10 }, (_, i) => 10e-9 * 10 ** i);

/** Registers the workqueue metrics in `registry`; queues report into them by `name`. */
export function createWorkQueueMetrics(registry: Registry): WorkQueueMetrics {
  const registers = [registry];
  const queues = new Set<WorkQueue>();
  return {
    track: (queue) => void queues.add(queue),
    depth: new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name'],
      registers,
    }),
    adds: new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames: ['name'],
      registers,
    }),
    queueDuration: new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested.',
      labelNames: ['name'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    workDuration: new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes.',
      labelNames: ['name'],
      buckets: DURATION_BUCKETS,
      registers,
    }),
    retries: new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames: ['name'],
      registers,
    }),
    unfinishedWork: new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help: "How many seconds of work has done that is in progress and hasn't been observed by work_duration.",
      labelNames: ['name'],
      registers,
      collect() {
        for (const q of queues) this.set({ name: q.name }, q.unfinishedWorkSeconds());
      },
    }),
    longestRunningProcessor: new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running.',
      labelNames: ['name'],
      registers,
      collect() {
        for (const q of queues) this.set({ name: q.name }, q.longestRunningProcessorSeconds());
      },
    }),
  };
}

export interface WorkQueueOptions {
  /** The queue's name: the metrics' `name` label (controller-runtime names it after the controller). */
  name: string;
  /**
   * How long a key waits before its next try (`AddRateLimited`); the in-process mode's is the per-key
   * delay of functions/runtime/retry.ts `nextRetry` with client-go's bucket over every key.
   */
  rateLimiter: RateLimiter;
  metrics?: WorkQueueMetrics;
  timers?: Timers;
}

/** `normal`: live events; `low`: the resync's keys (see the module comment). */
export type Priority = 'normal' | 'low';

/**
 * While keys of both priorities wait, one handout in this many goes to a low-priority key: live keys
 * pass a resync's backlog, and the backlog still drains at ≥ 1/LOW_PRIORITY_EVERY of the workers.
 */
export const LOW_PRIORITY_EVERY = 10;

/** What {@link WorkQueue.get} resolves to: a key, or `shutdown: true` once the queue is shut down and empty. */
export type GetResult = { key: string; shutdown: false } | { key: undefined; shutdown: true };

/** A rate-limiting, delaying workqueue of string keys with client-go's semantics (see the module comment). */
export class WorkQueue {
  readonly name: string;
  readonly #rateLimiter: RateLimiter;
  readonly #metrics: WorkQueueMetrics | undefined;
  readonly #timers: Timers;
  /** FIFO of keys of normal priority ready to hand out (each also in #dirty). */
  #queue: string[] = [];
  #head = 0;
  /** FIFO of low-priority keys; an entry counts only while its key is in #lowQueued (promotion leaves it stale). */
  #low: string[] = [];
  #lowHead = 0;
  readonly #lowQueued = new Set<string>();
  /** Dirty keys added with low priority only (a key re-queued by {@link done} keeps its priority). */
  readonly #dirtyLow = new Set<string>();
  /** Normal-priority handouts since the last low-priority one. */
  #sinceLow = 0;
  readonly #dirty = new Set<string>();
  /** Keys handed to a worker and not done yet, with the time they were handed out (ms). */
  readonly #processing = new Map<string, number>();
  /** When each key in the queue was added (ms), for `workqueue_queue_duration_seconds`. */
  readonly #addedAt = new Map<string, number>();
  /** Keys waiting for {@link addAfter}: ready time (ms) and timer. */
  readonly #waiting = new Map<string, { readyAt: number; handle: unknown }>();
  readonly #getters: ((r: GetResult) => void)[] = [];
  readonly #drained: (() => void)[] = [];
  #shuttingDown = false;

  constructor(options: WorkQueueOptions) {
    this.name = options.name;
    this.#timers = options.timers ?? systemTimers;
    this.#rateLimiter = options.rateLimiter;
    this.#metrics = options.metrics;
    this.#metrics?.track(this);
    this.#metrics?.depth.set({ name: this.name }, 0);
  }

  /** Keys ready and not yet handed out (`Len()`), of both priorities. */
  get length(): number {
    return this.#queue.length - this.#head + this.#lowQueued.size;
  }

  /** Keys a worker holds. */
  get processing(): number {
    return this.#processing.size;
  }

  /** Keys waiting for a delay (`addAfter`, `addRateLimited`). */
  get waiting(): number {
    return this.#waiting.size;
  }

  /**
   * Marks `key` as needing processing (`Add`). No-op when it already waits, or after shutdown; a key
   * being processed is queued again only when its worker calls {@link done}.
   */
  add(key: string, priority: Priority = 'normal'): void {
    if (this.#shuttingDown) return;
    if (this.#dirty.has(key)) {
      // Promotion: a live event for a key the resync queued moves it ahead.
      if (priority === 'normal' && this.#dirtyLow.delete(key) && this.#lowQueued.delete(key))
        this.#queue.push(key);
      return;
    }
    this.#metrics?.adds.inc({ name: this.name });
    this.#dirty.add(key);
    if (priority === 'low') this.#dirtyLow.add(key);
    if (this.#processing.has(key)) return;
    this.#push(key);
  }

  #push(key: string): void {
    this.#addedAt.set(key, this.#timers.now());
    const getter = this.#getters.shift();
    if (getter) {
      this.#handOut(key, getter);
      return;
    }
    if (this.#dirtyLow.has(key)) {
      this.#low.push(key);
      this.#lowQueued.add(key);
    } else this.#queue.push(key);
    this.#metrics?.depth.inc({ name: this.name });
  }

  /** The next key to hand out, by priority (see the module comment), removed from its FIFO. */
  #next(): string {
    const normal = this.#queue.length - this.#head;
    if (this.#lowQueued.size > 0 && (normal === 0 || this.#sinceLow >= LOW_PRIORITY_EVERY - 1)) {
      this.#sinceLow = 0;
      for (;;) {
        const key = this.#low[this.#lowHead++] as string;
        if (this.#lowHead > 1024 && this.#lowHead * 2 > this.#low.length) {
          this.#low = this.#low.slice(this.#lowHead);
          this.#lowHead = 0;
        }
        if (this.#lowQueued.delete(key)) return key; // else promoted since: a stale entry
      }
    }
    this.#sinceLow++;
    const key = this.#queue[this.#head++] as string;
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    return key;
  }

  #handOut(key: string, to: (r: GetResult) => void): void {
    const now = this.#timers.now();
    const addedAt = this.#addedAt.get(key);
    this.#addedAt.delete(key);
    if (addedAt !== undefined)
      this.#metrics?.queueDuration.observe({ name: this.name }, (now - addedAt) / 1000);
    this.#processing.set(key, now);
    this.#dirty.delete(key);
    this.#dirtyLow.delete(key);
    to({ key, shutdown: false });
  }

  /**
   * Waits for the next key (`Get`); the caller must call {@link done} with it when finished.
   * Resolves `{shutdown: true}` once the queue is shut down and has nothing left to hand out.
   */
  get(): Promise<GetResult> {
    return new Promise((resolve) => {
      if (this.length > 0) {
        const key = this.#next();
        this.#metrics?.depth.dec({ name: this.name });
        this.#handOut(key, resolve);
      } else if (this.#shuttingDown) resolve({ key: undefined, shutdown: true });
      else this.#getters.push(resolve);
    });
  }

  /** Marks `key` as done (`Done`): re-queues it if it was added while processing. */
  done(key: string): void {
    const started = this.#processing.get(key);
    if (started === undefined) return;
    this.#processing.delete(key);
    this.#metrics?.workDuration.observe({ name: this.name }, (this.#timers.now() - started) / 1000);
    if (this.#dirty.has(key)) this.#push(key);
    else if (this.#processing.size === 0) for (const d of this.#drained.splice(0)) d();
  }

  /** Adds `key` after `delayMs` (`AddAfter`); a key already waiting keeps the earlier ready time. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (!(delayMs > 0)) {
      this.add(key);
      return;
    }
    const readyAt = this.#timers.now() + delayMs;
    const existing = this.#waiting.get(key);
    if (existing) {
      if (existing.readyAt <= readyAt) return;
      this.#timers.clearTimeout(existing.handle);
    }
    const handle = this.#timers.setTimeout(() => {
      this.#waiting.delete(key);
      this.add(key);
    }, delayMs);
    this.#waiting.set(key, { readyAt, handle });
  }

  /**
   * Adds `key` after the rate limiter's delay (`AddRateLimited`), or after `atLeastMs` (ms) when longer (a
   * failure's `Retry-After`); counts a retry.
   */
  addRateLimited(key: string, atLeastMs = 0): void {
    this.#metrics?.retries.inc({ name: this.name });
    this.addAfter(key, Math.max(this.#rateLimiter.when(key), atLeastMs));
  }

  /** Stops rate-limit tracking of `key` (`Forget`): its next failure starts from the base delay. */
  forget(key: string): void {
    this.#rateLimiter.forget(key);
  }

  /** Failures recorded for `key` by the rate limiter (`NumRequeues`). */
  numRequeues(key: string): number {
    return this.#rateLimiter.numRequeues(key);
  }

  /** Whether {@link shutDown} was called (`ShuttingDown`). */
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /**
   * Stops accepting keys (`ShutDown`): delayed keys are dropped, waiting workers get
   * `{shutdown: true}`; keys already queued are still handed out.
   */
  shutDown(): void {
    this.#shuttingDown = true;
    for (const w of this.#waiting.values()) this.#timers.clearTimeout(w.handle);
    this.#waiting.clear();
    for (const g of this.#getters.splice(0)) g({ key: undefined, shutdown: true });
  }

  /** {@link shutDown}, then resolves once no key is being processed (`ShutDownWithDrain`). */
  async shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.#processing.size === 0) return;
    await new Promise<void>((resolve) => this.#drained.push(resolve));
  }

  /** Seconds of work in progress (sum over processing keys), for `workqueue_unfinished_work_seconds`. */
  unfinishedWorkSeconds(): number {
    const now = this.#timers.now();
    let total = 0;
    for (const started of this.#processing.values()) total += now - started;
    return total / 1000;
  }

  /** Seconds the longest-running key has been processing. */
  longestRunningProcessorSeconds(): number {
    const now = this.#timers.now();
    let longest = 0;
    for (const started of this.#processing.values()) longest = Math.max(longest, now - started);
    return longest / 1000;
  }
}
