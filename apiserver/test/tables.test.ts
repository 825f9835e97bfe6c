/**
 * The local API server's Table printing, unit by unit: apimachinery's duration.HumanDuration (its
 * upstream test cases), the Kubernetes JSONPath dialect over jsonpath-plus, printer-column cells as
 * apiextensions' tableconvertor makes them, and the built-in printers' cells (printPod's status logic,
 * printEvent, label selectors) as kubernetes/pkg/printers/internalversion computes them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { humanDuration, timestampSince } from '../duration.ts';
import { compileJsonPath, toJsonPathPlus } from '../jsonpath.ts';
import { builtinResources, type KubeObject, type ResourceType } from '../resources.ts';
import { formatLabels, labelSelectorString, printerCell, table } from '../tables.ts';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

describe('humanDuration (apimachinery duration_test.go)', () => {
  const cases: [number, string][] = [
    // TestHumanDuration
    [S, '1s'],
    [70 * S, '70s'],
    [190 * S, '3m10s'],
    [70 * M, '70m'],
    [47 * H, '47h'],
    [49 * H, '2d1h'],
    [(8 * 24 + 2) * H, '8d'],
    [367 * D, '367d'],
    [(365 * 2 * 24 + 25) * H, '2y1d'],
    [(365 * 8 * 24 + 2) * H, '8y'],
    // TestHumanDurationBoundaries (Go's nanosecond offsets as milliseconds)
    [-2 * S, '<invalid>'],
    [-2 * S + 1, '0s'],
    [0, '0s'],
    [S - 1, '0s'],
    [2 * M - 1, '119s'],
    [2 * M, '2m'],
    [2 * M + S, '2m1s'],
    [10 * M - 1, '9m59s'],
    [10 * M, '10m'],
    [10 * M + S, '10m'],
    [3 * H - 1, '179m'],
    [3 * H, '3h'],
    [3 * H + M, '3h1m'],
    [8 * H - 1, '7h59m'],
    [8 * H, '8h'],
    [8 * H + 59 * M, '8h'],
    [2 * D - 1, '47h'],
    [2 * D, '2d'],
    [2 * D + H, '2d1h'],
    [8 * D - 1, '7d23h'],
    [8 * D, '8d'],
    [8 * D + 23 * H, '8d'],
    [2 * 365 * D - 1, '729d'],
    [2 * 365 * D, '2y'],
    [2 * 365 * D + 23 * H, '2y'],
    [2 * 365 * D + 23 * H + 59 * M, '2y'],
    [2 * 365 * D + D - 1, '2y'],
    [2 * 365 * D + D, '2y1d'],
    [3 * 365 * D, '3y'],
    [7 * 365 * D, '7y'],
    [8 * 365 * D - 1, '7y364d'],
    [8 * 365 * D, '8y'],
    [8 * 365 * D + 364 * D, '8y'],
    [9 * 365 * D, '9y'],
  ];
  for (const [ms, want] of cases) test(`${ms} ms → ${want}`, () => assert.equal(humanDuration(ms), want));

  test('timestampSince: age of an RFC 3339 timestamp; <unknown> when missing', () => {
    const now = Date.parse('2026-01-01T01:00:00Z');
    assert.equal(timestampSince('2026-01-01T00:55:00Z', now), '5m');
    assert.equal(timestampSince(undefined, now), '<unknown>');
    assert.equal(timestampSince('', now), '<unknown>');
  });
});

describe('Kubernetes JSONPath over jsonpath-plus', () => {
  const obj = {
    metadata: { name: 'x', labels: { 'app.kubernetes.io/name': 'web' } },
    spec: {
      replicas: 3,
      list: [1, 2, 3],
      nothing: null,
      typed: [{ v: 1 }, { v: '1' }, { v: true }, { v: 'a==b' }],
    },
    status: {
      conditions: [
        { type: 'Progressing', status: 'False' },
        { type: 'Ready', status: 'True' },
      ],
    },
  };
  const cases: [string, unknown[]][] = [
    ['.spec.replicas', [3]],
    ['{.spec.replicas}', [3]],
    ['$.spec.replicas', [3]],
    ['.status.conditions[?(@.type=="Ready")].status', ['True']],
    [".status.conditions[?(@.type=='Ready')].status", ['True']],
    ['.status.conditions[?(@.status!="True")].type', ['Progressing']],
    ['.status.conditions[*].type', ['Progressing', 'Ready']],
    ['.status.conditions[0].type', ['Progressing']],
    ['.status.conditions[-1].type', ['Ready']],
    ['.spec.list[-2]', [2]],
    ['.spec.list[0:2]', [1, 2]],
    ['.spec.list[?(@ > 1)]', [2, 3]],
    [".metadata.labels['app.kubernetes.io/name']", ['web']],
    ['.spec.typed[?(@.v==1)].v', [1]],
    ['.spec.typed[?(@.v=="1")].v', ['1']],
    ['.spec.typed[?(@.v==true)].v', [true]],
    ['.spec.typed[?(@.v != 1)].v', ['1', true, 'a==b']],
    ['.spec.typed[?(@.v=="a==b")].v', ['a==b']],
    ['.spec.missing', []],
    ['.spec.nothing', [null]],
    ['.status.conditions[?(@.type=="Absent")].status', []],
  ];
  for (const [path, want] of cases) {
    test(`${path} → ${JSON.stringify(want)}`, () => assert.deepEqual(compileJsonPath(path)(obj), want));
  }

  test('translation to jsonpath-plus: a root, negative indexes as slices', () => {
    assert.equal(toJsonPathPlus('.a.b'), '$.a.b');
    assert.equal(toJsonPathPlus('{.a[-1]}'), '$.a[-1:]');
    assert.equal(toJsonPathPlus('.a[-3]'), '$.a[-3:-2]');
    assert.equal(toJsonPathPlus('.a[?(@.b=="x==y" && @.c!=2)]'), '$.a[?(@.b==="x==y" && @.c!==2)]');
  });

  test('multi-part templates and empty expressions are rejected', () => {
    assert.throws(() => compileJsonPath('{.a} {.b}'), /one expression only/);
    assert.throws(() => compileJsonPath('{range .items[*]}{.a}{end}'), /one expression only/);
    assert.throws(() => compileJsonPath('{}'), /empty/);
  });
});

describe('printer-column cells (apiextensions tableconvertor cellForJSONValue)', () => {
  const now = Date.parse('2026-01-01T00:10:00Z');
  const cases: [string, unknown, unknown][] = [
    ['string', 'True', 'True'],
    ['string', 3, '3'],
    ['string', true, 'true'],
    ['string', { a: 1 }, '{"a":1}'],
    ['string', ['a', 'b'], '["a","b"]'],
    ['integer', 3, 3],
    ['integer', 3.7, 3],
    ['integer', '3', null],
    ['number', 1.5, 1.5],
    ['number', 'x', null],
    ['boolean', false, false],
    ['boolean', 'true', null],
    ['date', '2026-01-01T00:00:00Z', '10m'],
    ['date', 'yesterday', '<invalid>'],
    ['date', '', '<unknown>'],
    ['date', 5, null],
    ['string', null, null],
  ];
  for (const [type, value, want] of cases) {
    test(`${type} ${JSON.stringify(value)} → ${JSON.stringify(want)}`, () =>
      assert.deepEqual(printerCell(type, value, now), want));
  }
});

describe('label formatting (labels.FormatLabels, LabelSelectorAsSelector().String())', () => {
  test('FormatLabels sorts by key; <none> when empty', () => {
    assert.equal(formatLabels({ b: '2', a: '1' }), 'a=1,b=2');
    assert.equal(formatLabels({}), '<none>');
  });
  test('selectors: matchLabels and expressions sorted by key, values sorted', () => {
    assert.equal(
      labelSelectorString({
        matchLabels: { tier: 'web' },
        matchExpressions: [
          { key: 'env', operator: 'In', values: ['prod', 'dev'] },
          { key: 'zz', operator: 'DoesNotExist' },
          { key: 'beta', operator: 'Exists' },
          { key: 'x', operator: 'NotIn', values: ['a'] },
        ],
      }),
      'beta,env in (dev,prod),tier=web,x notin (a),!zz',
    );
    assert.equal(labelSelectorString(undefined), '');
    assert.equal(labelSelectorString({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }), null);
  });
});

const types = builtinResources();
const typeOf = (group: string, plural: string) =>
  types.find((t) => t.group === group && t.plural === plural) as ResourceType;
const NOW = Date.parse('2026-01-01T12:00:00Z');
// biome-ignore lint/suspicious/noExplicitAny: Table JSON under test
const tableOf = (t: ResourceType, objs: KubeObject[], includeObject: string | null = null): any =>
  table(t, objs, { resourceVersion: '1' }, 'v1', includeObject, NOW);

function pod(
  name: string,
  spec: Record<string, unknown>,
  status: Record<string, unknown>,
  meta = {},
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'd', creationTimestamp: '2026-01-01T11:00:00Z', ...meta },
    spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec },
    status,
  };
}

const running = (restartCount = 0, finishedAt?: string) => ({
  name: 'c',
  ready: true,
  restartCount,
  state: { running: { startedAt: '2026-01-01T11:00:00Z' } },
  ...(finishedAt ? { lastState: { terminated: { exitCode: 1, finishedAt } } } : {}),
});

describe('pod printer (printPod)', () => {
  const pods = typeOf('', 'pods');
  const cases: [string, KubeObject, unknown[]][] = [
    [
      'pending, unscheduled',
      pod('a', {}, { phase: 'Pending' }),
      ['a', '0/1', 'Pending', '0', '60m', '<none>', '<none>', '<none>', '<none>'],
    ],
    [
      'running and ready, with IP and node',
      pod(
        'b',
        { nodeName: 'n1' },
        { phase: 'Running', podIPs: [{ ip: '10.0.0.5' }], containerStatuses: [running()] },
      ),
      ['b', '1/1', 'Running', '0', '60m', '10.0.0.5', 'n1', '<none>', '<none>'],
    ],
    [
      'restarts with the last restart time',
      pod('c', {}, { phase: 'Running', containerStatuses: [running(5, '2026-01-01T11:55:00Z')] }),
      ['c', '1/1', 'Running', '5 (5m ago)', '60m', '<none>', '<none>', '<none>', '<none>'],
    ],
    [
      'waiting reason wins: CrashLoopBackOff',
      pod(
        'd',
        {},
        {
          phase: 'Running',
          containerStatuses: [
            { name: 'c', ready: false, restartCount: 2, state: { waiting: { reason: 'CrashLoopBackOff' } } },
          ],
        },
      ),
      ['d', '0/1', 'CrashLoopBackOff', '2', '60m', '<none>', '<none>', '<none>', '<none>'],
    ],
    [
      'terminated without reason: ExitCode',
      pod(
        'e',
        {},
        {
          phase: 'Failed',
          containerStatuses: [
            { name: 'c', ready: false, restartCount: 0, state: { terminated: { exitCode: 137 } } },
          ],
        },
      ),
      ['e', '0/1', 'ExitCode:137', '0', '60m', '<none>', '<none>', '<none>', '<none>'],
    ],
    [
      'init container still running: Init:0/1',
      pod(
        'f',
        { initContainers: [{ name: 'i', image: 'busybox' }] },
        {
          phase: 'Pending',
          initContainerStatuses: [{ name: 'i', ready: false, restartCount: 0, state: { running: {} } }],
          containerStatuses: [
            { name: 'c', ready: false, restartCount: 0, state: { waiting: { reason: 'PodInitializing' } } },
          ],
        },
      ),
      ['f', '0/1', 'Init:0/1', '0', '60m', '<none>', '<none>', '<none>', '<none>'],
    ],
    [
      'sidecar (restartable init container) counts in READY',
      pod(
        'g',
        { initContainers: [{ name: 's', image: 'busybox', restartPolicy: 'Always' }] },
        {
          phase: 'Running',
          conditions: [{ type: 'Initialized', status: 'True' }],
          initContainerStatuses: [
            { name: 's', ready: true, started: true, restartCount: 0, state: { running: {} } },
          ],
          containerStatuses: [running()],
        },
      ),
      ['g', '2/2', 'Running', '0', '60m', '<none>', '<none>', '<none>', '<none>'],
    ],
    [
      'deletionTimestamp on a running pod: Terminating',
      pod(
        'h',
        {},
        { phase: 'Running', containerStatuses: [running()] },
        { deletionTimestamp: '2026-01-01T11:59:00Z' },
      ),
      ['h', '1/1', 'Terminating', '0', '60m', '<none>', '<none>', '<none>', '<none>'],
    ],
    [
      'scheduling gated',
      pod(
        'i',
        {},
        {
          phase: 'Pending',
          conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }],
        },
      ),
      ['i', '0/1', 'SchedulingGated', '0', '60m', '<none>', '<none>', '<none>', '<none>'],
    ],
    [
      'readiness gates: true conditions / gates',
      pod(
        'j',
        { readinessGates: [{ conditionType: 'x' }, { conditionType: 'y' }] },
        { phase: 'Pending', conditions: [{ type: 'x', status: 'True' }] },
      ),
      ['j', '0/1', 'Pending', '0', '60m', '<none>', '<none>', '<none>', '1/2'],
    ],
  ];
  for (const [name, obj, cells] of cases) {
    test(name, () => assert.deepEqual(tableOf(pods, [obj]).rows[0].cells, cells));
  }

  test('a Succeeded pod: Completed, with the Completed row condition', () => {
    const obj = pod(
      'k',
      {},
      {
        phase: 'Succeeded',
        containerStatuses: [
          {
            name: 'c',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 0, reason: 'Completed' } },
          },
        ],
      },
    );
    const row = tableOf(pods, [obj]).rows[0];
    assert.equal(row.cells[2], 'Completed');
    assert.deepEqual(row.conditions, [
      {
        type: 'Completed',
        status: 'True',
        reason: 'Succeeded',
        message: 'The pod has completed successfully.',
      },
    ]);
  });
});

describe('event printer (printEvent)', () => {
  const base = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'p.1', namespace: 'd' },
    involvedObject: { kind: 'Pod', name: 'p', fieldPath: 'spec.containers{c}' },
    reason: 'Pulled',
    type: 'Normal',
    message: ' Pulled image \n',
  };
  test('core/v1: timestamps, object kind/name, source, trimmed message, count', () => {
    const ev = {
      ...base,
      source: { component: 'kubelet', host: 'node1' },
      firstTimestamp: '2026-01-01T11:00:00Z',
      lastTimestamp: '2026-01-01T11:58:00Z',
      count: 4,
    };
    assert.deepEqual(tableOf(typeOf('', 'events'), [ev]).rows[0].cells, [
      '2m',
      'Normal',
      'Pulled',
      'pod/p',
      'spec.containers{c}',
      'kubelet, node1',
      'Pulled image',
      '60m',
      4,
      'p.1',
    ]);
  });
  test('events.k8s.io/v1: eventTime, series, reportingController; singleton count 1', () => {
    const t = typeOf('events.k8s.io', 'events');
    const ev = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'p.2', namespace: 'd' },
      regarding: { kind: 'Deployment', name: 'web' },
      reason: 'Scaled',
      type: 'Normal',
      note: 'scaled up',
      eventTime: '2026-01-01T11:30:00.000000Z',
      reportingController: 'deployment-controller',
      reportingInstance: 'kcm-1',
      action: 'Scale',
    };
    assert.deepEqual(tableOf(t, [ev]).rows[0].cells, [
      '30m',
      'Normal',
      'Scaled',
      'deployment/web',
      '',
      'deployment-controller, kcm-1',
      'scaled up',
      '30m',
      1,
      'p.2',
    ]);
    const series = { ...ev, series: { count: 7, lastObservedTime: '2026-01-01T11:59:00.000000Z' } };
    const cells = tableOf(t, [series]).rows[0].cells;
    assert.equal(cells[0], '60s');
    assert.equal(cells[8], 7);
  });
});

describe('Table envelope', () => {
  const cms = typeOf('', 'configmaps');
  const cm: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'c', namespace: 'd', creationTimestamp: '2026-01-01T11:59:30Z' },
    data: { a: '1' },
    binaryData: { b: 'AA==' },
  };
  test('cells, and rows carrying PartialObjectMetadata by default', () => {
    const t = tableOf(cms, [cm]);
    assert.equal(t.kind, 'Table');
    assert.deepEqual(
      t.columnDefinitions.map((c: { name: string }) => c.name),
      ['Name', 'Data', 'Age'],
    );
    assert.deepEqual(t.rows[0].cells, ['c', 2, '30s']);
    assert.deepEqual(t.rows[0].object, {
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: cm.metadata,
    });
  });
  test('includeObject=Object and None; anything else is 400', () => {
    assert.deepEqual(tableOf(cms, [cm], 'Object').rows[0].object, cm);
    assert.equal(tableOf(cms, [cm], 'None').rows[0].object, null);
    assert.throws(
      () => tableOf(cms, [cm], 'All'),
      (err: { code?: number }) => err.code === 400,
    );
  });
  test('kinds without a printer: NAME and CREATED AT (RFC 3339)', () => {
    const t = tableOf(typeOf('rbac.authorization.k8s.io', 'roles'), [
      { metadata: { name: 'r', creationTimestamp: '2026-01-01T11:00:00.123Z' } },
    ]);
    assert.deepEqual(
      t.columnDefinitions.map((c: { name: string; type: string }) => [c.name, c.type]),
      [
        ['Name', 'string'],
        ['Created At', 'date'],
      ],
    );
    assert.deepEqual(t.rows[0].cells, ['r', '2026-01-01T11:00:00Z']);
  });
});
