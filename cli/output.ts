/**
 * Output helpers: tables (cli-table3), plain on a pipe, and lines on stdout.
 */
import Table from 'cli-table3';

/** Writes one line to stdout. */
export function say(line = ''): void {
  process.stdout.write(`${line}\n`);
}

/** Renders rows as a table (no colours: the output is the same on a terminal and in a pipe). */
export function table(head: string[], rows: (string | number)[][]): string {
  const t = new Table({ head, style: { head: [], border: [] }, wordWrap: true });
  t.push(...rows.map((r) => r.map(String)));
  return t.toString();
}

/** `1.2 s`, `340 ms`, `3 min 5 s`, `2 h 10 min` for a duration in ms. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
}
