/**
 * Writes a bench run's results: `results.json` (every figure, the sizes, the machine, each section's
 * wall time), `latency.svg` (the CDF chart) and `report.md` (bench/report.ts), into one directory.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CostRow } from './cost.ts';
import type { Sizes } from './environment.ts';
import {
  cdfChart,
  cloudPushEstimate,
  costTable,
  type Figure,
  markdownReport,
  type Series,
} from './report.ts';

/** What a run measured, as results.json holds it. */
export interface BenchResults {
  generatedAt: string;
  tiny: boolean;
  /** The whole run's wall time, ms. */
  durationMs: number;
  /** Each section that ran, in order, with its wall time (ms). */
  sectionMs: Record<string, number>;
  machine: Record<string, string | number>;
  sizes: Sizes;
  notes: string[];
  figures: Figure[];
  /** The cost section's per-controller table. */
  cost: CostRow[];
  /** The fleet section's two configurations. */
  fleet: Record<string, unknown> | undefined;
}

/** Writes results.json, latency.svg and report.md of `results` (with `chart`'s latency series) into `outDir`. */
export function writeResults(outDir: string, results: BenchResults, chart: readonly Series[]): void {
  writeFileSync(join(outDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(outDir, 'latency.svg'), cdfChart('Latency distributions (CDF, log scale)', chart));
  writeFileSync(
    join(outDir, 'report.md'),
    markdownReport({
      figures: results.figures,
      machine: results.machine,
      sizes: Object.fromEntries(
        Object.entries(results.sizes).filter(([, v]) => typeof v === 'number'),
      ) as Record<string, number>,
      durationMs: results.durationMs,
      sectionMs: results.sectionMs,
      tiny: results.tiny,
      chartFile: 'latency.svg',
      notes: results.notes,
      extra: {
        ...(results.cost.length ? { cost: costTable(results.cost) } : {}),
        breakdown: cloudPushEstimate(
          results.figures.find((f) => /emulator push subscription: isolated message/.test(f.name))?.value,
        ),
      },
    }),
  );
}
