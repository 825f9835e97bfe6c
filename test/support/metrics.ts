/**
 * Reading a process's Prometheus `/metrics` (text exposition format), for tests and the bench.
 */

/**
 * Sums the series of `metric` (a counter or gauge) in `text` whose label set contains `labels`,
 * e.g. `controller="foo"`; `''` matches every series, unlabelled ones too.
 */
export function sumSeries(text: string, metric: string, labels = ''): number {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${metric}(?:\\{([^}]*)\\})? (\\S+)`, 'gm'))) {
    if ((m[1] ?? '').includes(labels)) sum += Number(m[2]);
  }
  return sum;
}

/**
 * Fetches `url` (a `/metrics` endpoint) once and {@link sumSeries} of `metric` in it.
 * @throws what fetch throws when nothing answers
 */
export async function scrapeSum(url: string | URL, metric: string, labels = ''): Promise<number> {
  return sumSeries(await (await fetch(url)).text(), metric, labels);
}
