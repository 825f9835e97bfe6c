/**
 * Fault injection for tests and `npm start`: drop watches (now or periodically), silence open watches
 * (connection open, nothing sent), compact the history
 * (old resourceVersions → 410), fail the next N matching requests with a status or a reset connection,
 * add latency, pause and resume the server.
 */
import { matchesRequest, type RequestInfo, type RequestMatch } from './requestinfo.ts';
import type { WatchEventMatch } from './watch.ts';

/**
 * How a matched request fails: an HTTP status (e.g. 409, 429 with Retry-After, 500, 503), or a reset
 * connection. A 429 says `Retry-After: 1` unless told (kube-apiserver's max-in-flight filter);
 * `retryAfterSeconds: null` sends none (a rate limit that names no delay).
 */
export type Failure = { status: number; retryAfterSeconds?: number | null } | { reset: true };

interface FailRule {
  match: RequestMatch;
  remaining: number;
  failure: Failure;
}

interface LatencyRule {
  match: RequestMatch;
  ms: number;
}

/** What the fault injector acts on (wired by the server). */
export interface FaultTargets {
  dropWatches(mode: 'close' | 'reset'): number;
  silenceWatches(): number;
  dropNextWatchEvents(match: WatchEventMatch, count: number): () => void;
  compact(): number;
}

export class FaultInjector {
  private failRules: FailRule[] = [];
  private latencyRules: LatencyRule[] = [];
  private dropTimer: NodeJS.Timeout | undefined;
  private pausedWaiters: (() => void)[] | undefined;
  private readonly targets: FaultTargets;

  constructor(targets: FaultTargets) {
    this.targets = targets;
  }

  /** Ends every open watch now; `reset` destroys the connections instead of ending the streams. @returns watches dropped */
  dropWatches(mode: 'close' | 'reset' = 'close'): number {
    return this.targets.dropWatches(mode);
  }

  /**
   * Silences every open watch: the connection stays open but sends nothing more (no event, no
   * BOOKMARK, no close at its timeout) — the stuck watch behind "replication silently stopped".
   * Watches opened afterwards are served normally. @returns watches silenced
   */
  silenceWatches(): number {
    return this.targets.silenceWatches();
  }

  /**
   * Loses the next `count` watch events of the objects `match` names on every open watch, which
   * stays open and healthy (later events and BOOKMARKs flow): the event a watch silently missed.
   * The change is stored. @returns a function removing the rule
   */
  dropNextWatchEvents(match: WatchEventMatch, count = 1): () => void {
    return this.targets.dropNextWatchEvents(match, count);
  }

  /** Drops every open watch every `intervalMs` ms; `0` stops. @returns a function that stops it */
  dropWatchesEvery(intervalMs: number): () => void {
    if (this.dropTimer) clearInterval(this.dropTimer);
    this.dropTimer = undefined;
    if (intervalMs > 0) {
      this.dropTimer = setInterval(() => this.targets.dropWatches('close'), intervalMs);
      this.dropTimer.unref();
    }
    return () => this.dropWatchesEvery(0);
  }

  /** Compacts the event history: a watch or continue token from any older resourceVersion now gets 410 Expired. @returns the compaction resourceVersion */
  compactHistory(): number {
    return this.targets.compact();
  }

  /** Fails the next `count` requests matching `match` with `failure`. @returns a function removing the rule */
  failNext(match: RequestMatch, count: number, failure: Failure): () => void {
    const rule = { match, remaining: count, failure };
    this.failRules.push(rule);
    return () => {
      this.failRules = this.failRules.filter((r) => r !== rule);
    };
  }

  /** Delays matching requests by `ms` ms before they are handled. @returns a function removing the rule */
  addLatency(match: RequestMatch, ms: number): () => void {
    const rule = { match, ms };
    this.latencyRules.push(rule);
    return () => {
      this.latencyRules = this.latencyRules.filter((r) => r !== rule);
    };
  }

  /** Holds every new request (no answer) until {@link FaultInjector.resume}; open watches stay open. */
  pause(): void {
    this.pausedWaiters ??= [];
  }

  resume(): void {
    const waiters = this.pausedWaiters ?? [];
    this.pausedWaiters = undefined;
    for (const w of waiters) w();
  }

  get paused(): boolean {
    return this.pausedWaiters !== undefined;
  }

  /** Removes every rule, stops periodic drops and resumes. */
  clear(): void {
    this.failRules = [];
    this.latencyRules = [];
    this.dropWatchesEvery(0);
    this.resume();
  }

  /** @internal Waits while paused. */
  async waitWhilePaused(): Promise<void> {
    while (this.pausedWaiters) {
      const waiters = this.pausedWaiters;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  }

  /** @internal The added latency for a request, ms. */
  latencyFor(info: RequestInfo): number {
    return this.latencyRules.filter((r) => matchesRequest(r.match, info)).reduce((sum, r) => sum + r.ms, 0);
  }

  /** @internal Consumes and returns the failure for a request, if any rule matches. */
  takeFailure(info: RequestInfo): Failure | undefined {
    const rule = this.failRules.find((r) => r.remaining > 0 && matchesRequest(r.match, info));
    if (!rule) return undefined;
    rule.remaining--;
    if (rule.remaining <= 0) this.failRules = this.failRules.filter((r) => r !== rule);
    return rule.failure;
  }
}

/**
 * Faults from the environment or main.ts flags, for `npm start`:
 * `LOCAL_APISERVER_DROP_WATCHES_EVERY` (seconds), `LOCAL_APISERVER_LATENCY_MS` (every request),
 * `LOCAL_APISERVER_FAIL` (`verb:resource:status:count`, comma-separated).
 */
export interface FaultConfig {
  dropWatchesEverySeconds?: number;
  latencyMs?: number;
  fail?: string;
}

export function faultConfigFromEnv(env: NodeJS.ProcessEnv): FaultConfig {
  const num = (v: string | undefined) =>
    v !== undefined && v !== '' && Number.isFinite(Number(v)) ? Number(v) : undefined;
  return {
    dropWatchesEverySeconds: num(env.LOCAL_APISERVER_DROP_WATCHES_EVERY),
    latencyMs: num(env.LOCAL_APISERVER_LATENCY_MS),
    fail: env.LOCAL_APISERVER_FAIL || undefined,
  };
}

/**
 * Applies a {@link FaultConfig}.
 * @throws Error for a malformed `fail` spec.
 */
export function applyFaultConfig(faults: FaultInjector, config: FaultConfig): void {
  if (config.dropWatchesEverySeconds) faults.dropWatchesEvery(config.dropWatchesEverySeconds * 1000);
  if (config.latencyMs) faults.addLatency({}, config.latencyMs);
  for (const spec of (config.fail ?? '').split(',').filter(Boolean)) {
    const [verb, resource, status, count] = spec.split(':');
    const code = Number(status);
    if (!status || !(code >= 400 || status === 'reset'))
      throw new Error(`bad fault spec "${spec}": want verb:resource:status:count`);
    faults.failNext(
      { ...(verb && verb !== '*' ? { verb } : {}), ...(resource && resource !== '*' ? { resource } : {}) },
      count ? Number(count) : Number.POSITIVE_INFINITY,
      status === 'reset'
        ? { reset: true }
        : { status: code, ...(code === 429 ? { retryAfterSeconds: 1 } : {}) },
    );
  }
}
