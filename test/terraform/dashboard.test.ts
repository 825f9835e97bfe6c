/**
 * The operator's view, checked without a provider (none can be downloaded here): the dashboard
 * template (terraform/dashboard.json.tftpl) renders to JSON that the Monitoring API's `Dashboard`
 * resource accepts (a zod schema of the fields and enums of its v1 REST reference: projects.dashboards),
 * every chart names a metric that exists — a log-based metric of this module, or a built-in metric
 * of Pub/Sub, Cloud Run or GKE as Google's metrics lists spell it — with labels and an aggregation
 * that metric has, and the SLOs and their burn-rate alerts read those metrics and the variables.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import * as z from 'zod';
import { REPO_ROOT } from '../../cli/build/generate-manifests.ts';
import { block, loadModule, type Module, resolveDefault, resource, resourcesOf } from './hcl.ts';

/** A Terraform expression as hcl2json writes it: `${...}`. */
const ref = (expr: string): string => `\${${expr}}`;

const TF_DIR = join(REPO_ROOT, 'terraform');
const TEMPLATE = join(TF_DIR, 'dashboard.json.tftpl');

// --- The Dashboard resource (Monitoring API v1), the fields this module may use ------------------

/** `Aggregation.Aligner`. */
const aligner = z.enum([
  'ALIGN_NONE',
  'ALIGN_DELTA',
  'ALIGN_RATE',
  'ALIGN_INTERPOLATE',
  'ALIGN_NEXT_OLDER',
  'ALIGN_MIN',
  'ALIGN_MAX',
  'ALIGN_MEAN',
  'ALIGN_COUNT',
  'ALIGN_SUM',
  'ALIGN_STDDEV',
  'ALIGN_COUNT_TRUE',
  'ALIGN_COUNT_FALSE',
  'ALIGN_FRACTION_TRUE',
  'ALIGN_PERCENTILE_99',
  'ALIGN_PERCENTILE_95',
  'ALIGN_PERCENTILE_50',
  'ALIGN_PERCENTILE_05',
  'ALIGN_PERCENT_CHANGE',
]);
/** `Aggregation.Reducer`. */
const reducer = z.enum([
  'REDUCE_NONE',
  'REDUCE_MEAN',
  'REDUCE_MIN',
  'REDUCE_MAX',
  'REDUCE_SUM',
  'REDUCE_STDDEV',
  'REDUCE_COUNT',
  'REDUCE_COUNT_TRUE',
  'REDUCE_COUNT_FALSE',
  'REDUCE_FRACTION_TRUE',
  'REDUCE_PERCENTILE_99',
  'REDUCE_PERCENTILE_95',
  'REDUCE_PERCENTILE_50',
  'REDUCE_PERCENTILE_05',
]);
/** A duration in the API's JSON form, seconds with an `s`. */
const duration = z.string().regex(/^\d+(\.\d+)?s$/);
const aggregation = z.strictObject({
  alignmentPeriod: duration.optional(),
  perSeriesAligner: aligner.optional(),
  crossSeriesReducer: reducer.optional(),
  groupByFields: z.array(z.string()).optional(),
});
const timeSeriesFilter = z.strictObject({
  filter: z.string().min(1),
  aggregation: aggregation.optional(),
  secondaryAggregation: aggregation.optional(),
});
const timeSeriesQuery = z.strictObject({
  timeSeriesFilter,
  unitOverride: z.string().optional(),
  outputFullDuration: z.boolean().optional(),
});
const dataSet = z.strictObject({
  timeSeriesQuery,
  plotType: z.enum(['LINE', 'STACKED_AREA', 'STACKED_BAR', 'HEATMAP']).optional(),
  legendTemplate: z.string().optional(),
  minAlignmentPeriod: duration.optional(),
  targetAxis: z.enum(['Y1', 'Y2']).optional(),
});
const axis = z.strictObject({ label: z.string().optional(), scale: z.enum(['LINEAR', 'LOG10']).optional() });
const xyChart = z.strictObject({
  dataSets: z.array(dataSet).min(1),
  timeshiftDuration: duration.optional(),
  xAxis: axis.optional(),
  yAxis: axis.optional(),
  y2Axis: axis.optional(),
  chartOptions: z
    .strictObject({
      mode: z.enum(['COLOR', 'X_RAY', 'STATS']).optional(),
      displayHorizontal: z.boolean().optional(),
    })
    .optional(),
});
/** One of the widget kinds: a chart of time series, or the chart of an alert policy. */
const widget = z.union([
  z.strictObject({ title: z.string().min(1), id: z.string().optional(), xyChart }),
  z.strictObject({
    title: z.string().min(1),
    id: z.string().optional(),
    alertChart: z.strictObject({ name: z.string().regex(/^projects\/[^/]+\/alertPolicies\/[^/]+$/) }),
  }),
]);
const tile = z.strictObject({
  xPos: z.number().int().min(0).optional(),
  yPos: z.number().int().min(0).optional(),
  width: z.number().int().min(1),
  height: z.number().int().min(1),
  widget,
});
const dashboardSchema = z.strictObject({
  displayName: z.string().min(1),
  dashboardFilters: z
    .array(
      z.strictObject({
        labelKey: z.string().min(1),
        templateVariable: z.string().optional(),
        stringValue: z.string().optional(),
        filterType: z.enum([
          'RESOURCE_LABEL',
          'METRIC_LABEL',
          'USER_METADATA_LABEL',
          'SYSTEM_METADATA_LABEL',
          'GROUP',
        ]),
      }),
    )
    .optional(),
  labels: z.record(z.string(), z.string()).optional(),
  mosaicLayout: z.strictObject({ columns: z.number().int().min(1).max(48), tiles: z.array(tile).min(1) }),
});
type Dashboard = z.infer<typeof dashboardSchema>;

// --- The metrics a chart may name ---------------------------------------------------------------

interface MetricInfo {
  /** The monitored resource type of its time series. */
  resource: string;
  kind: 'GAUGE' | 'DELTA' | 'CUMULATIVE';
  value: 'INT64' | 'DOUBLE' | 'DISTRIBUTION';
  /** Metric labels (`metric.label.<x>`). */
  labels: string[];
}

/**
 * Built-in metric types, spelled as Google's metrics lists (Pub/Sub, Cloud Run, GKE system metrics)
 * document them, with their monitored resource, kind, value type and metric labels.
 */
const BUILT_IN: Record<string, MetricInfo> = {
  'pubsub.googleapis.com/subscription/num_undelivered_messages': {
    resource: 'pubsub_subscription',
    kind: 'GAUGE',
    value: 'INT64',
    labels: [],
  },
  'pubsub.googleapis.com/subscription/oldest_unacked_message_age': {
    resource: 'pubsub_subscription',
    kind: 'GAUGE',
    value: 'INT64',
    labels: [],
  },
  'pubsub.googleapis.com/subscription/dead_letter_message_count': {
    resource: 'pubsub_subscription',
    kind: 'DELTA',
    value: 'INT64',
    labels: [],
  },
  'pubsub.googleapis.com/topic/send_message_operation_count': {
    resource: 'pubsub_topic',
    kind: 'DELTA',
    value: 'INT64',
    labels: ['response_code'],
  },
  'run.googleapis.com/container/instance_count': {
    resource: 'cloud_run_revision',
    kind: 'GAUGE',
    value: 'INT64',
    labels: ['state'],
  },
  'run.googleapis.com/request_latencies': {
    resource: 'cloud_run_revision',
    kind: 'DELTA',
    value: 'DISTRIBUTION',
    labels: ['response_code', 'response_code_class'],
  },
  'run.googleapis.com/container/startup_latencies': {
    resource: 'cloud_run_revision',
    kind: 'DELTA',
    value: 'DISTRIBUTION',
    labels: [],
  },
  'kubernetes.io/container/memory/used_bytes': {
    resource: 'k8s_container',
    kind: 'GAUGE',
    value: 'INT64',
    labels: ['memory_type'],
  },
};

/** Labels of each monitored resource type a chart groups or filters by. */
const RESOURCE_LABELS: Record<string, string[]> = {
  pubsub_subscription: ['project_id', 'subscription_id'],
  pubsub_topic: ['project_id', 'topic_id'],
  cloud_run_revision: ['project_id', 'service_name', 'revision_name', 'location', 'configuration_name'],
  k8s_container: ['project_id', 'location', 'cluster_name', 'namespace_name', 'pod_name', 'container_name'],
};

/** The log-based metrics of the module, by full metric type (`name` at its default). */
function logBasedMetrics(m: Module): Record<string, MetricInfo> {
  const out: Record<string, MetricInfo> = {};
  for (const [address, metric] of resourcesOf(m, 'google_logging_metric')) {
    const name = resolveDefault(m, metric.name);
    assert.equal(typeof name, 'string', `google_logging_metric.${address}.name resolves`);
    const descriptor = block(metric, 'metric_descriptor');
    // The filter, or the local it names (`\${local.x}`), as written.
    const named = /^\$\{local\.(\w+)\}$/.exec(String(metric.filter))?.[1];
    const filter = JSON.stringify(named ? m.locals.get(named) : metric.filter);
    out[`logging.googleapis.com/user/${name}`] = {
      // The metric counts the entries of the resource its filter selects.
      resource: filter.includes('k8s_container') ? 'k8s_container' : 'cloud_run_revision',
      kind: descriptor.metric_kind,
      value: descriptor.value_type,
      labels: ((descriptor.labels ?? []) as { key: string }[]).map((l) => l.key),
    };
  }
  return out;
}

/** Values of the template's placeholders: a test value for each name the templatefile call passes. */
const SAMPLE: Record<string, string> = {
  display_name: 'Levelset (levelset)',
  metric_prefix: 'levelset',
  reconcile_service: 'levelset-reconcile',
  keys_topic: 'levelset-keys',
  reconcile_subscription: 'levelset-keys-reconcile',
  resync_subscription: 'levelset-keys-resync-reconcile',
  dead_letter_subscription: 'levelset-keys-dead-letter',
  relay_namespace: 'levelset-system',
  reconcile_success_alert: 'projects/p/alertPolicies/1',
  delivery_alert: 'projects/p/alertPolicies/2',
  admission_service: 'levelset-admission',
};

/** Renders the template as Terraform's templatefile does for `${name}` and the `$${` escape (no directives). */
function render(template: string, vars: Record<string, string>): string {
  assert.doesNotMatch(template, /%\{/, 'no template directives: the file stays JSON');
  return template.replace(/(\$?)\$\{([^}]*)\}/g, (whole, escaped: string, name: string) => {
    if (escaped) return whole.slice(1);
    const value = vars[name];
    assert.ok(value !== undefined, `placeholder \${${name}} is passed to templatefile`);
    assert.match(value, /^[^"\\]*$/, `${name}: a value JSON needs no escape for`);
    return value;
  });
}

/** The `key = value` names of the map the module passes to templatefile. */
function templateVars(m: Module): Set<string> {
  const expr = String(resource(m, 'google_monitoring_dashboard', 'levelset').dashboard_json);
  assert.match(expr, /templatefile\("\$\{path\.module\}\/dashboard\.json\.tftpl"/);
  return new Set([...expr.matchAll(/(\w+)\s*=/g)].map((x) => x[1] ?? ''));
}

/** The `metric.type`, `resource.type` and every `<scope>.label."x"` of a Monitoring filter. */
function parseFilter(filter: string) {
  return {
    metricType: /metric\.type\s*=\s*"([^"]+)"/.exec(filter)?.[1],
    resourceType: /resource\.type\s*=\s*"([^"]+)"/.exec(filter)?.[1],
    metricLabels: [...filter.matchAll(/metric\.labels?\."?(\w+)"?/g)].map((x) => x[1] ?? ''),
    resourceLabels: [...filter.matchAll(/resource\.labels?\."?(\w+)"?/g)].map((x) => x[1] ?? ''),
  };
}

function charts(d: Dashboard) {
  return d.mosaicLayout.tiles.flatMap((t) => ('xyChart' in t.widget ? [t.widget] : []));
}

describe('terraform/ dashboard and SLOs', () => {
  let m: Module;
  let dashboard: Dashboard;
  let metrics: Record<string, MetricInfo>;

  before(async () => {
    m = await loadModule(TF_DIR);
    metrics = { ...BUILT_IN, ...logBasedMetrics(m) };
    const vars = templateVars(m);
    const sample = Object.fromEntries([...vars].map((v) => [v, SAMPLE[v] ?? `sample-${v}`]));
    dashboard = dashboardSchema.parse(JSON.parse(render(readFileSync(TEMPLATE, 'utf8'), sample)));
  });

  test('the template uses every value templatefile passes, and only those', () => {
    const template = readFileSync(TEMPLATE, 'utf8');
    const used = new Set(
      [...template.matchAll(/(?<!\$)\$\{(\w+)\}/g)].map((x) => x[1] ?? '').filter(Boolean),
    );
    assert.deepEqual([...used].sort(), [...templateVars(m)].sort());
  });

  test("is a Dashboard the Monitoring API accepts: one mosaic layout whose tiles fit and don't overlap", () => {
    const { columns, tiles } = dashboard.mosaicLayout;
    const taken = new Set<string>();
    for (const t of tiles) {
      const x = t.xPos ?? 0;
      const y = t.yPos ?? 0;
      assert.ok(x + t.width <= columns, `${t.widget.title}: within ${columns} columns`);
      for (let i = x; i < x + t.width; i++)
        for (let j = y; j < y + t.height; j++) {
          assert.ok(!taken.has(`${i},${j}`), `${t.widget.title} overlaps another tile at ${i},${j}`);
          taken.add(`${i},${j}`);
        }
    }
    assert.deepEqual(
      dashboard.dashboardFilters?.map((f) => [f.labelKey, f.filterType]),
      [
        ['controller', 'METRIC_LABEL'],
        ['cluster', 'METRIC_LABEL'],
      ],
      'filters per controller and per cluster',
    );
  });

  test('every chart names a metric that exists, on its own resource type, with labels it has', () => {
    for (const chart of charts(dashboard)) {
      for (const set of chart.xyChart.dataSets) {
        const { filter, aggregation: agg } = set.timeSeriesQuery.timeSeriesFilter;
        const f = parseFilter(filter);
        assert.ok(f.metricType, `${chart.title}: a metric.type in ${filter}`);
        const info = metrics[f.metricType];
        assert.ok(
          info,
          `${chart.title}: ${f.metricType} is neither this module's nor a documented built-in metric`,
        );
        assert.equal(
          f.resourceType,
          info.resource,
          `${chart.title}: ${f.metricType} is written on ${info.resource}`,
        );
        const resourceLabels = RESOURCE_LABELS[info.resource] ?? [];
        const groupBy = (agg?.groupByFields ?? []).map(parseFilter);
        for (const l of [...f.metricLabels, ...groupBy.flatMap((g) => g.metricLabels)])
          assert.ok(info.labels.includes(l), `${chart.title}: ${f.metricType} has no metric label ${l}`);
        for (const l of [...f.resourceLabels, ...groupBy.flatMap((g) => g.resourceLabels)])
          assert.ok(resourceLabels.includes(l), `${chart.title}: ${info.resource} has no label ${l}`);
      }
    }
  });

  test("every aggregation is one the metric's kind and value type allow", () => {
    for (const chart of charts(dashboard)) {
      for (const set of chart.xyChart.dataSets) {
        const { filter, aggregation: agg } = set.timeSeriesQuery.timeSeriesFilter;
        const info = metrics[parseFilter(filter).metricType ?? ''];
        assert.ok(info && agg, `${chart.title}: an aggregation`);
        const what = `${chart.title} (${filter})`;
        if (agg.crossSeriesReducer && agg.crossSeriesReducer !== 'REDUCE_NONE') {
          assert.ok(agg.alignmentPeriod, `${what}: a reducer needs an alignment period`);
          assert.ok(agg.perSeriesAligner && agg.perSeriesAligner !== 'ALIGN_NONE', `${what}: and an aligner`);
        }
        if (agg.perSeriesAligner === 'ALIGN_RATE' || agg.perSeriesAligner === 'ALIGN_DELTA')
          assert.notEqual(info.kind, 'GAUGE', `${what}: rate and delta need a DELTA or CUMULATIVE metric`);
        const percentile = /PERCENTILE/.test(agg.crossSeriesReducer ?? '');
        const distribution = info.value === 'DISTRIBUTION';
        if (percentile) assert.ok(distribution, `${what}: a percentile of a distribution`);
        if (set.plotType === 'HEATMAP') assert.ok(distribution, `${what}: a heatmap of a distribution`);
        if (distribution)
          assert.ok(
            percentile || set.plotType === 'HEATMAP',
            `${what}: a distribution is charted as percentiles or a heatmap`,
          );
      }
    }
  });

  test('the panels the issue lists, each titled in plain words with its unit', () => {
    const titles = dashboard.mosaicLayout.tiles.map((t) => t.widget.title);
    for (const t of charts(dashboard).map((c) => c.title))
      assert.match(t, /\((1\/s|ms|s|keys|keys per hour|instances|bytes)\)$/, `${t}: ends with its unit`);
    const named = (metric: string) =>
      charts(dashboard).filter((c) =>
        c.xyChart.dataSets.some((s) => s.timeSeriesQuery.timeSeriesFilter.filter.includes(`"${metric}"`)),
      );
    for (const metric of [
      'logging.googleapis.com/user/levelset/reconcile_outcomes',
      'logging.googleapis.com/user/levelset/reconcile_duration',
      'logging.googleapis.com/user/levelset/reconcile_delivery_delay',
      'logging.googleapis.com/user/levelset/drift_corrected',
      'logging.googleapis.com/user/levelset/relay_publish_errors',
      ...Object.keys(BUILT_IN),
    ])
      assert.ok(named(metric).length >= 1, `a chart of ${metric}`);
    const [rates] = named('logging.googleapis.com/user/levelset/reconcile_outcomes');
    assert.deepEqual(rates?.xyChart.dataSets[0]?.timeSeriesQuery.timeSeriesFilter.aggregation, {
      alignmentPeriod: '60s',
      perSeriesAligner: 'ALIGN_RATE',
      crossSeriesReducer: 'REDUCE_SUM',
      groupByFields: ['metric.label."controller"', 'metric.label."cluster"', 'metric.label."outcome"'],
    });
    const [duration] = named('logging.googleapis.com/user/levelset/reconcile_duration');
    assert.deepEqual(
      duration?.xyChart.dataSets.map(
        (s) => s.timeSeriesQuery.timeSeriesFilter.aggregation?.crossSeriesReducer,
      ),
      ['REDUCE_PERCENTILE_50', 'REDUCE_PERCENTILE_95', 'REDUCE_PERCENTILE_99'],
    );
    assert.equal(titles.filter((t) => /SLO burn rate/.test(t)).length, 2, 'the two SLO alerts charted');
  });

  test("the delivery-delay metric reads the reconcile's deliveryDelayMs of watch and manual keys, bucketed at the SLO threshold", () => {
    const metric = resource(m, 'google_logging_metric', 'reconcile_delivery_delay');
    assert.equal(metric.value_extractor, 'EXTRACT(jsonPayload.deliveryDelayMs)');
    assert.match(String(metric.filter), /jsonPayload\.reason=\(\\?"watch\\?" OR \\?"manual\\?"\)/);
    const source = readFileSync(join(REPO_ROOT, 'functions', 'runtime', 'reconcile.ts'), 'utf8');
    assert.match(source, /deliveryDelayMs: deliveryDelayMs\(message\.enqueuedAt\)/, 'the function logs it');
    const bounds = m.locals.get('delivery_delay_bounds_ms') as number[];
    assert.equal(
      block(block(metric, 'bucket_options'), 'explicit_buckets').bounds,
      ref('local.delivery_delay_bounds_ms'),
    );
    const threshold = m.variables.get('delivery_slo_threshold_ms');
    assert.ok(bounds.includes(threshold?.default), 'the default threshold is a bucket bound');
    const condition = String(block(threshold ?? {}, 'validation').condition);
    assert.ok(
      condition.includes(`contains([${bounds.join(', ')}]`),
      `the validation lists the bounds: ${condition}`,
    );
    for (const name of [
      'reconcile_outcomes',
      'reconcile_duration',
      'drift_corrected',
      'reconcile_delivery_delay',
    ])
      assert.equal(
        resource(m, 'google_logging_metric', name).label_extractors.cluster,
        'EXTRACT(labels.cluster)',
        `${name} by cluster`,
      );
  });

  test('two SLOs on the custom service read this module metrics; targets are validated variables', () => {
    const service = resource(m, 'google_monitoring_custom_service', 'levelset');
    assert.equal(service.service_id, ref('var.name'));
    const success = resource(m, 'google_monitoring_slo', 'reconcile_success');
    const delivery = resource(m, 'google_monitoring_slo', 'delivery');
    for (const slo of [success, delivery]) {
      assert.equal(slo.service, ref('google_monitoring_custom_service.levelset.service_id'));
      assert.equal(slo.rolling_period_days, ref('var.slo_rolling_period_days'));
    }
    assert.equal(success.goal, ref('var.reconcile_success_slo_goal'));
    assert.equal(delivery.goal, ref('var.delivery_slo_goal'));
    const ratio = block(block(success, 'request_based_sli'), 'good_total_ratio');
    assert.ok(String(ratio.total_service_filter).includes('local.reconcile_outcomes_type'));
    assert.match(String(ratio.bad_service_filter), /outcome\\?"=one_of\(\\?"error\\?",\\?"transient\\?"\)/);
    assert.equal(
      m.locals.get('reconcile_outcomes_type'),
      `logging.googleapis.com/user/${ref('google_logging_metric.reconcile_outcomes.name')}`,
    );
    const cut = block(block(delivery, 'request_based_sli'), 'distribution_cut');
    assert.ok(String(cut.distribution_filter).includes('local.delivery_delay_type'));
    assert.equal(block(cut, 'range').max, ref('var.delivery_slo_threshold_ms'));
    for (const v of [
      'reconcile_success_slo_goal',
      'delivery_slo_goal',
      'delivery_slo_threshold_ms',
      'slo_rolling_period_days',
    ]) {
      const variable = m.variables.get(v);
      assert.ok(variable?.validation, `${v} is validated`);
      assert.equal(typeof variable.default, 'number', `${v} has a default`);
    }
    const goal = (v: string) => m.variables.get(v)?.default as number;
    assert.ok(
      goal('delivery_slo_goal') <= goal('reconcile_success_slo_goal'),
      'each failed reconcile is retried late',
    );
  });

  test('each SLO has a burn-rate alert, fast and slow windows, charted on the dashboard', () => {
    const windows = m.locals.get('slo_burn_rate_windows') as Record<
      string,
      { lookback: string; threshold: number }
    >;
    assert.deepEqual(windows, {
      fast: { lookback: '3600s', threshold: 14.4 },
      slow: { lookback: '21600s', threshold: 6 },
    });
    const template = String(resource(m, 'google_monitoring_dashboard', 'levelset').dashboard_json);
    for (const [alert, slo] of [
      ['reconcile_success_burn_rate', 'reconcile_success'],
      ['delivery_burn_rate', 'delivery'],
    ] as const) {
      const policy = resource(m, 'google_monitoring_alert_policy', alert);
      assert.equal(policy.notification_channels, ref('var.notification_channels'));
      const dynamic = policy.dynamic.conditions[0];
      assert.equal(dynamic.for_each, ref('local.slo_burn_rate_windows'));
      const threshold = block(dynamic.content[0], 'condition_threshold');
      assert.equal(
        threshold.filter,
        `select_slo_burn_rate("\${google_monitoring_slo.${slo}.name}", "\${conditions.value.lookback}")`,
      );
      assert.equal(threshold.threshold_value, ref('conditions.value.threshold'));
      assert.ok(
        template.includes(`google_monitoring_alert_policy.${alert}.name`),
        `${alert} on the dashboard`,
      );
    }
  });
});
