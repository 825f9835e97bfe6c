/**
 * `node soak/render.ts DIR`: writes a soak run's `report.md` and `memory.svg` again from its
 * `results.json` (soak/run.ts), the memory slopes fitted again from every sample it holds, as the
 * current soak/memory.ts and soak/report.ts make them: a report whose format or fits changed after
 * the run reads the same samples. `latency.svg` is the run's own (results.json keeps no change list).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type MemorySample, slopeOf } from './memory.ts';
import { markdownReport, memoryChart, type SoakResults } from './report.ts';

const dir = process.argv[2];
if (!dir) {
  process.stderr.write('usage: node soak/render.ts DIR (a soak run’s output: its results.json)\n');
  process.exit(2);
}
const file = join(dir, 'results.json');
const results = JSON.parse(readFileSync(file, 'utf8')) as SoakResults & {
  memorySamples: Record<string, MemorySample[]>;
};
const t0 = Date.parse(results.startedAt);
// A run written before results.json held its warm-up's end: the warm-up's own formula (soak/run.ts),
// its seeding taking less than that.
const warmupEnd =
  results.warmupEndMs ?? t0 + Math.min(results.resyncIntervalMs, (results.minutes * 60_000) / 6);
const samples = new Map(Object.entries(results.memorySamples));
for (const [name, series] of samples)
  results.memory[name] = {
    slope: slopeOf(series, warmupEnd),
    peakRssMiB: series.length ? Math.max(...series.map((s) => s.rssMiB)) : undefined,
    lastRssMiB: series.at(-1)?.rssMiB,
  };
const command =
  results.command ??
  `npm run soak -- --minutes ${results.minutes} --seed ${results.seed}${results.cluster.startsWith('real') ? ' --kubeconfig …' : ''}`;
writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
writeFileSync(join(dir, 'memory.svg'), memoryChart('Soak: RSS over time', samples, t0));
writeFileSync(join(dir, 'report.md'), markdownReport(results, command));
process.stderr.write(`${join(dir, 'report.md')}\n`);
