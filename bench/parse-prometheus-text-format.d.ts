/** Types of the npm package `parse-prometheus-text-format` (it ships none): what bench/sections/peer.ts reads. */
declare module 'parse-prometheus-text-format' {
  /** One metric family of the Prometheus text format, as prom2json writes it. */
  export interface MetricFamily {
    name: string;
    help: string;
    /** `COUNTER`, `GAUGE`, `HISTOGRAM`, `SUMMARY`, `UNTYPED`. */
    type: string;
    /** Counters and gauges: `value` as text; histograms and summaries carry buckets or quantiles instead. */
    metrics: { value?: string; labels?: Record<string, string> }[];
  }
  /** Parses a `/metrics` body. */
  export default function parsePrometheusTextFormat(text: string): MetricFamily[];
}
