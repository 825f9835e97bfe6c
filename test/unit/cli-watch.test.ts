/**
 * `levelset status --watch`'s arithmetic: the Prometheus text it reads (as prom-client writes it),
 * rates between two scrapes (a counter reset counts from zero), and quantiles of histogram buckets
 * interpolated as Prometheus's `histogram_quantile` does.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import {
  frameOf,
  parsePrometheusText,
  promNumber,
  quantile,
  readReconcileMetrics,
  type Scrape,
} from '../../cli/impl/watch.ts';

const empty = (at: number): Scrape => ({
  at,
  reconciles: new Map(),
  durationBuckets: new Map(),
  drift: new Map(),
  published: new Map(),
  notes: [],
});

describe('status --watch', () => {
  it('parses what prom-client writes: labels with escapes, histogram buckets with le first, +Inf', async () => {
    const registry = new Registry();
    const total = new Counter({
      name: 't_total',
      help: 'h',
      labelNames: ['controller', 'outcome'],
      registers: [registry],
    });
    const h = new Histogram({
      name: 'd_seconds',
      help: 'h',
      labelNames: ['controller'],
      buckets: [0.1, 1],
      registers: [registry],
    });
    total.inc({ controller: 'a "quoted" \\ one', outcome: 'success' }, 3);
    h.observe({ controller: 'foo' }, 0.5);
    const samples = parsePrometheusText(await registry.metrics());
    assert.deepEqual(
      samples.find((s) => s.name === 't_total'),
      {
        name: 't_total',
        labels: { controller: 'a "quoted" \\ one', outcome: 'success' },
        value: 3,
      },
    );
    assert.deepEqual(
      samples
        .filter((s) => s.name === 'd_seconds_bucket')
        .map((s) => [s.labels.le, s.labels.controller, s.value]),
      [
        ['0.1', 'foo', 0],
        ['1', 'foo', 1],
        ['+Inf', 'foo', 1],
      ],
    );
    assert.equal(promNumber('+Inf'), Number.POSITIVE_INFINITY);
    assert.equal(promNumber('-Inf'), Number.NEGATIVE_INFINITY);
    assert.equal(promNumber('1.5e-3'), 0.0015);
  });

  it('quantiles interpolate within the bucket, over the difference of two readings', () => {
    const then = new Map([
      [0.1, 10],
      [1, 10],
      [Number.POSITIVE_INFINITY, 10],
    ]);
    const now = new Map([
      [0.1, 10],
      [1, 20],
      [Number.POSITIVE_INFINITY, 20],
    ]);
    // The 10 new observations are all in (0.1, 1]: the median is half-way through that bucket.
    assert.equal(quantile(0.5, now, then), 0.55);
    assert.equal(quantile(0.5, then, then), undefined, 'nothing observed in between');
    // Since the start: half the observations are ≤ 0.1.
    assert.equal(quantile(0.5, now), 0.1);
    assert.equal(
      quantile(
        0.99,
        new Map([
          [1, 0],
          [Number.POSITIVE_INFINITY, 5],
        ]),
      ),
      1,
      'above the last bound: the last bound',
    );
  });

  it('rates are per second over the window; a counter that went down (restart) counts from zero', () => {
    const text = (success: number, error: number) => `# TYPE levelset_reconcile_total counter
levelset_reconcile_total{controller="foo",outcome="success"} ${success}
levelset_reconcile_total{controller="foo",outcome="error"} ${error}
levelset_drift_corrected_total{controller="foo"} 2
`;
    const then = empty(0);
    readReconcileMetrics(then, text(10, 4));
    const now = empty(5000);
    readReconcileMetrics(now, text(20, 1));
    const frame = frameOf(now, then);
    assert.equal(frame.windowSeconds, 5);
    const foo = frame.controllers.find((c) => c.controller === 'foo');
    assert.deepEqual(foo?.perSecond, { success: 2, error: 0.2 });
    assert.deepEqual(foo?.total, { success: 20, error: 1 });
    assert.equal(foo?.drift, 2);
    assert.equal(foo?.p50Ms, undefined, 'no duration observed');
    assert.deepEqual(
      frameOf(now, undefined).controllers[0]?.perSecond,
      { success: 0, error: 0 },
      'no window yet',
    );
  });
});
