/**
 * Memory over time of the soak's processes: RSS and threads from `/proc/<pid>/status` (`VmRSS`,
 * `Threads`), and the V8 heap in use where a process serves prom-client's
 * `nodejs_heap_size_used_bytes` on its `/metrics`.
 * A process restarted by a fault is a new pid: its samples form a new segment, and the slope is
 * fitted per segment (least squares, simple-statistics) after the warm-up.
 */
import { readFileSync } from 'node:fs';
import { linearRegression } from 'simple-statistics';

/** One process to sample: its current pid (it changes at a restart) and how to read its heap, if it can be. */
export interface SampledProcess {
  name: string;
  pid(): number | undefined;
  /**
   * Its V8 heap in use and the memory of its Buffers outside the heap, MiB (e.g. {@link metricsMemory}
   * of its /metrics); undefined when not exposed.
   */
  memory?(): Promise<V8Memory | undefined>;
}

/**
 * A Node process's own memory figures, MiB: `heapUsed`, `heapTotal`, `external` and `arrayBuffers`
 * of `process.memoryUsage()` (or prom-client's `nodejs_heap_size_used_bytes`,
 * `nodejs_heap_size_total_bytes` and `nodejs_external_memory_bytes`: no `arrayBuffers` there).
 */
export interface V8Memory {
  heapMiB?: number;
  heapTotalMiB?: number;
  externalMiB?: number;
  arrayBuffersMiB?: number;
}

export interface MemorySample {
  /** ms since the epoch. */
  at: number;
  pid: number;
  rssMiB: number;
  /**
   * The process's threads (`Threads` of `/proc/<pid>/status`); undefined when not read. The Pub/Sub
   * emulator's grow with every ordering key it has seen (decision 68), a growth of its RSS no heap
   * figure shows.
   */
  threads?: number;
  /** MiB; undefined where the process does not expose it. */
  heapMiB?: number;
  /** MiB the V8 heap holds from the system (used or not); undefined where not exposed. */
  heapTotalMiB?: number;
  /** MiB of Buffers and ArrayBuffers outside the V8 heap; undefined where not exposed. */
  externalMiB?: number;
  /** MiB of that in ArrayBuffers (Buffers included); undefined where not exposed. */
  arrayBuffersMiB?: number;
}

/** `VmRSS` of `pid` in MiB, or undefined when the process is gone. */
export function rssMiB(pid: number): number | undefined {
  return procStatus(pid)?.rssMiB;
}

/**
 * `VmRSS` (MiB) and `Threads` of `pid` from `/proc/<pid>/status`, or undefined when the process is
 * gone (or is a zombie, which has no `VmRSS`).
 */
export function procStatus(pid: number): { rssMiB: number; threads?: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const rss = /VmRSS:\s+(\d+) kB/.exec(text);
  const threads = /^Threads:\s+(\d+)$/m.exec(text);
  if (!rss) return undefined;
  return { rssMiB: Number(rss[1]) / 1024, ...(threads ? { threads: Number(threads[1]) } : {}) };
}

/**
 * The deepest first descendant of `pid` (`/proc/<pid>/task/<pid>/children`): the Pub/Sub emulator's
 * Java process under its guard (local/guard.ts) and launcher; `pid` itself when it has no child,
 * undefined when it is gone.
 */
export function leafProcess(pid: number): number | undefined {
  let current = pid;
  for (let depth = 0; depth < 5; depth++) {
    let children: string;
    try {
      children = readFileSync(`/proc/${current}/task/${current}/children`, 'utf8').trim();
    } catch {
      return depth === 0 ? undefined : current;
    }
    const child = Number(children.split(/\s+/)[0]);
    if (!child) return current;
    current = child;
  }
  return current;
}

/** `nodejs_heap_size_used_bytes` of a Prometheus text page, in MiB, or undefined when absent. */
export function heapUsedMiB(text: string): number | undefined {
  const m = /^nodejs_heap_size_used_bytes(?:\{[^}]*\})? ([0-9.e+]+)$/m.exec(text);
  return m ? Number(m[1]) / (1024 * 1024) : undefined;
}

/** `nodejs_external_memory_bytes` of a Prometheus text page, in MiB, or undefined when absent. */
export function externalMiB(text: string): number | undefined {
  const m = /^nodejs_external_memory_bytes(?:\{[^}]*\})? ([0-9.e+]+)$/m.exec(text);
  return m ? Number(m[1]) / (1024 * 1024) : undefined;
}

/** `nodejs_heap_size_total_bytes` of a Prometheus text page, in MiB, or undefined when absent. */
export function heapTotalMiB(text: string): number | undefined {
  const m = /^nodejs_heap_size_total_bytes(?:\{[^}]*\})? ([0-9.e+]+)$/m.exec(text);
  return m ? Number(m[1]) / (1024 * 1024) : undefined;
}

/**
 * The heap in use and the external memory that `url` (a Prometheus /metrics page) reports, MiB;
 * undefined figures when the page has none (a process that registers no default metrics); throws
 * when it does not answer in 2 s.
 */
export async function metricsMemory(url: string): Promise<V8Memory | undefined> {
  const r = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  if (!r.ok) return undefined;
  const text = await r.text();
  const heap = heapUsedMiB(text);
  const heapTotal = heapTotalMiB(text);
  const external = externalMiB(text);
  return {
    ...(heap !== undefined ? { heapMiB: heap } : {}),
    ...(heapTotal !== undefined ? { heapTotalMiB: heapTotal } : {}),
    ...(external !== undefined ? { externalMiB: external } : {}),
  };
}

/** The samples of each process by name. */
export class MemorySampler {
  readonly samples = new Map<string, MemorySample[]>();
  readonly #processes: SampledProcess[];

  constructor(processes: SampledProcess[]) {
    this.#processes = processes;
    for (const p of processes) this.samples.set(p.name, []);
  }

  /** Samples every process once (a process down now is skipped). */
  async sample(): Promise<void> {
    const at = Date.now();
    await Promise.all(
      this.#processes.map(async (p) => {
        const pid = p.pid();
        const status = pid ? procStatus(pid) : undefined;
        if (!pid || !status) return;
        const memory = await p.memory?.().catch(() => undefined);
        this.samples.get(p.name)?.push({ at, pid, ...status, ...memory });
      }),
    );
  }
}

/** One life (one pid) of a process after its warm-up, fitted on its own. */
export interface Life {
  pid: number;
  fromMs: number;
  toMs: number;
  samples: number;
  /** MiB per hour; undefined with fewer than 3 samples. */
  rssMiBPerHour?: number;
  /**
   * MiB per hour of the RSS's floor (the least RSS of each {@link FLOOR_WINDOW_MS}, as the heap's),
   * the figure judged against the limit ({@link judgeSlope}): the RSS rises and falls as the heap
   * grows between collections and the allocator returns pages; undefined with fewer than 3 windows.
   */
  rssFloorMiBPerHour?: number;
  /** The standard error of {@link rssFloorMiBPerHour}, MiB per hour; undefined with fewer than 3 windows. */
  rssFloorStdErr?: number;
  heapMiBPerHour?: number;
  /**
   * MiB per hour of the heap's floor: the least heap in use of each {@link FLOOR_WINDOW_MS} of the
   * life, fitted; undefined with fewer than 3 windows. The heap in use is sampled between
   * collections, garbage included, a sawtooth whose teeth say nothing of a leak; its floor is the
   * heap just after a collection, what a leak raises.
   */
  heapFloorMiBPerHour?: number;
  /** The standard error of {@link heapFloorMiBPerHour}, MiB per hour (from the fit's residuals); undefined with fewer than 3 windows. */
  heapFloorStdErr?: number;
  /** MiB at the life's first and last sample (after its warm-up). */
  rssMiB: [number, number];
  heapMiB?: [number, number];
  heapTotalMiB?: [number, number];
  externalMiB?: [number, number];
  arrayBuffersMiB?: [number, number];
  /** Threads at the life's first and last sample (after its warm-up); undefined when not read. */
  threads?: [number, number];
}

/** The longest life's fit (the figure of the report), and every life's. */
export interface Slope extends Life {
  /** Every segment's (every pid's) after the warm-up, for the report. */
  segments: number;
  /** Every life after the warm-up, each fitted on its own, in order (results.json). */
  lives: Life[];
}

/** The window of the heap's floor ({@link Life.heapFloorMiBPerHour}), ms: several major collections of a busy process. */
export const FLOOR_WINDOW_MS = 180_000;

/** The standard error of the least-squares slope of `points`, or undefined with fewer than 3. */
function stdErrOf(points: readonly [number, number][]): number | undefined {
  if (points.length < 3) return undefined;
  const { m, b } = linearRegression(points as [number, number][]);
  const meanX = points.reduce((a, p) => a + p[0], 0) / points.length;
  const sxx = points.reduce((a, p) => a + (p[0] - meanX) ** 2, 0);
  const sse = points.reduce((a, p) => a + (p[1] - (m * p[0] + b)) ** 2, 0);
  return sxx > 0 ? Math.sqrt(sse / (points.length - 2) / sxx) : undefined;
}

/** The memory slope the soak's issue allows after warm-up, MiB per hour (issue 45). */
export const SLOPE_LIMIT_MIB_PER_HOUR = 5;

/**
 * A slope judged against `limit` (MiB/h) with its standard error: `within` when slope + 2 × stdErr ≤
 * limit (the limit holds at about 95 % confidence), `above` when slope − 2 × stdErr > limit,
 * `undecided` when the interval spans the limit (a life too short or too noisy to tell) or no
 * figure is given.
 */
export function judgeSlope(
  slope: number | undefined,
  stdErr: number | undefined,
  limit = SLOPE_LIMIT_MIB_PER_HOUR,
): 'within' | 'above' | 'undecided' {
  if (slope === undefined || stdErr === undefined) return 'undecided';
  if (slope + 2 * stdErr <= limit) return 'within';
  if (slope - 2 * stdErr > limit) return 'above';
  return 'undecided';
}

/** The least point of each {@link FLOOR_WINDOW_MS} window (time in hours from the first point; a short last window left out). */
export function floorOf(points: readonly [number, number][]): [number, number][] {
  const windowHours = FLOOR_WINDOW_MS / 3_600_000;
  const least = new Map<number, [number, number]>();
  for (const p of points) {
    const w = Math.floor(p[0] / windowHours);
    const seen = least.get(w);
    if (!seen || p[1] < seen[1]) least.set(w, p);
  }
  // A last window shorter than half of one holds too few collections to show its floor.
  const last = points.at(-1);
  if (last && last[0] - Math.floor(last[0] / windowHours) * windowHours < windowHours / 2)
    least.delete(Math.floor(last[0] / windowHours));
  return [...least.values()];
}

/**
 * The first three minutes of each process's life (a restart's included) are its warm-up, left out
 * of its slope, ms: a started `reconcile`'s heap floor rises for about that long (the 30-minute
 * local run of 2026-11-29: 64 MiB in the first window after one minute, 74–78 MiB from the third on).
 */
export const LIFE_WARMUP_MS = 180_000;

/**
 * The slope of `samples` after `warmupEndMs` (ms since the epoch) and after the first
 * {@link LIFE_WARMUP_MS} of each pid's life, fitted on the longest segment of one pid; undefined
 * when no sample is left.
 */
export function slopeOf(samples: readonly MemorySample[], warmupEndMs: number): Slope | undefined {
  // A process a fault restarted warms up again: its first minutes are left out too.
  const born = new Map<number, number>();
  for (const s of samples) if (!born.has(s.pid)) born.set(s.pid, s.at);
  const after = samples.filter((s) => s.at >= Math.max(warmupEndMs, (born.get(s.pid) ?? 0) + LIFE_WARMUP_MS));
  const byPid = new Map<number, MemorySample[]>();
  for (const s of after) byPid.set(s.pid, [...(byPid.get(s.pid) ?? []), s]);
  const fit = (points: [number, number][]) => (points.length >= 3 ? linearRegression(points).m : undefined);
  const lifeOf = (segment: MemorySample[]): Life => {
    const first = segment[0] as MemorySample;
    const hours = (s: MemorySample) => (s.at - first.at) / 3_600_000;
    const heap = segment
      .filter((s) => s.heapMiB !== undefined)
      .map((s): [number, number] => [hours(s), s.heapMiB as number]);
    const rss = segment.map((s): [number, number] => [hours(s), s.rssMiB]);
    const range = (pick: (s: MemorySample) => number | undefined): { range?: [number, number] } => {
      const values = segment.flatMap((s) => (pick(s) !== undefined ? [pick(s) as number] : []));
      return values.length ? { range: [values[0] as number, values.at(-1) as number] } : {};
    };
    const external = range((s) => s.externalMiB).range;
    const heapTotal = range((s) => s.heapTotalMiB).range;
    const arrayBuffers = range((s) => s.arrayBuffersMiB).range;
    const threads = range((s) => s.threads).range;
    const heapFloorStdErr = stdErrOf(floorOf(heap));
    const rssFloorStdErr = stdErrOf(floorOf(rss));
    const rssFloor = fit(floorOf(rss));
    return {
      pid: first.pid,
      fromMs: first.at,
      toMs: (segment.at(-1) as MemorySample).at,
      samples: segment.length,
      rssMiBPerHour: fit(rss),
      ...(rssFloor !== undefined ? { rssFloorMiBPerHour: rssFloor } : {}),
      ...(rssFloorStdErr !== undefined ? { rssFloorStdErr } : {}),
      heapMiBPerHour: fit(heap),
      rssMiB: [first.rssMiB, (segment.at(-1) as MemorySample).rssMiB],
      ...(heap.length
        ? { heapMiB: [(heap[0] as [number, number])[1], (heap.at(-1) as [number, number])[1]] }
        : {}),
      heapFloorMiBPerHour: fit(floorOf(heap)),
      ...(heapFloorStdErr !== undefined ? { heapFloorStdErr } : {}),
      ...(external ? { externalMiB: external } : {}),
      ...(heapTotal ? { heapTotalMiB: heapTotal } : {}),
      ...(arrayBuffers ? { arrayBuffersMiB: arrayBuffers } : {}),
      ...(threads ? { threads } : {}),
    };
  };
  const lives = [...byPid.values()].map(lifeOf);
  const longest = [...lives].sort((a, b) => b.toMs - b.fromMs - (a.toMs - a.fromMs))[0];
  if (!longest) return undefined;
  return { ...longest, segments: byPid.size, lives };
}
