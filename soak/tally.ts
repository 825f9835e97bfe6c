/**
 * The soak's figures kept as aggregates, so that its own memory does not grow with the changes it
 * makes, the audits it runs and the resyncs it sees (issue 45): change→converged latencies in HDR
 * histograms (node:perf_hooks `createHistogram`: a fixed number of buckets, three significant
 * digits), counts by kind, and the latest resyncs only.
 */
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import type { Change } from './workload.ts';

/** Latency figures of a set of changes, ms; undefined fields when none converged. */
export interface LatencyFigures {
  n: number;
  p50?: number;
  p99?: number;
  max?: number;
}

/** The highest latency recorded as itself, ms (a day); a longer one is recorded as this. */
const HIGHEST_MS = 24 * 3_600_000;

/** Latencies of a group of changes (or durations of audits), ms, in bounded memory. */
export class LatencyTally {
  readonly #h: RecordableHistogram = createHistogram({ lowest: 1, highest: HIGHEST_MS, figures: 3 });

  /** Records `ms` (rounded, at least 1 ms, at most {@link HIGHEST_MS}). */
  record(ms: number): void {
    this.#h.record(Math.min(HIGHEST_MS, Math.max(1, Math.round(ms))));
  }

  get count(): number {
    return this.#h.count;
  }

  /** n, p50, p99 and max (to three significant digits). */
  figures(): LatencyFigures {
    const n = this.#h.count;
    if (n === 0) return { n: 0 };
    return { n, p50: this.#h.percentile(50), p99: this.#h.percentile(99), max: this.#h.max };
  }

  /** The latency at each of `points` evenly spaced quantiles: a CDF's points (bench/report.ts `cdfChart`). */
  cdfValues(points = 200): number[] {
    if (this.#h.count === 0) return [];
    return Array.from({ length: points }, (_, i) =>
      this.#h.percentile(Math.min(100, ((i + 0.5) / points) * 100)),
    );
  }
}

/** Tallies keyed by a name (a fault kind, a cause), created on first use. */
export class Tallies {
  readonly #byName = new Map<string, LatencyTally>();

  of(name: string): LatencyTally {
    const t = this.#byName.get(name) ?? new LatencyTally();
    this.#byName.set(name, t);
    return t;
  }

  figures(names: readonly string[]): Record<string, LatencyFigures> {
    return Object.fromEntries(names.map((n) => [n, this.#byName.get(n)?.figures() ?? { n: 0 }]));
  }
}

/** `counts[key]++`. */
export function count(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

/** The controller of an auditor key (`<controller>:<namespace>/<name>`). */
export const controllerOfKey = (key: string) => key.slice(0, key.indexOf(':'));

/**
 * Why a change converged only at a resync: a key of its controllers dead-lettered while it was
 * pending, its key not in flight at some audit (never published or lost), or in flight all along (a
 * backlog; the resync may only have coincided). See report.ts `RESYNC_CAUSES`.
 */
export function resyncCause(
  change: Pick<Change, 'notInFlightAt' | 'deadLetteredAtFirstAudit' | 'keys'>,
  deadLetteredByController: Record<string, number>,
): 'dead-lettered' | 'not in flight' | 'in flight' {
  const controllers = new Set(change.keys.map(controllerOfKey));
  const deadLettered = [...controllers].reduce((n, c) => n + (deadLetteredByController[c] ?? 0), 0);
  if (change.deadLetteredAtFirstAudit !== undefined && deadLettered > change.deadLetteredAtFirstAudit)
    return 'dead-lettered';
  return change.notInFlightAt !== undefined ? 'not in flight' : 'in flight';
}
