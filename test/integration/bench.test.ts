// npm run bench on tiny sizes, once, so that the benchmark cannot rot: it must run end to end and
// write every section. No figure is asserted (benchmarks are not tests).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { cdfChart, type Figure, markdownReport, SECTIONS } from '../../bench/report.ts';

const exec = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;

test('npm run bench -- --tiny writes results.json, report.md and the SVG chart with every section', async (t) => {
  if (process.env.TEST_KUBECONFIG) {
    t.skip('the bench runs its own local API server');
    return;
  }
  const out = mkdtempSync(join(tmpdir(), 'levelset-bench-test-'));
  try {
    const { stderr } = await exec(process.execPath, [join(root, 'bench', 'run.ts'), '--tiny', '--out', out], {
      cwd: root,
      maxBuffer: 16 << 20,
      timeout: 300_000,
      env: { ...process.env, METADATA_SERVER_DETECTION: undefined },
    });
    assert.doesNotMatch(stderr, /MetadataLookupWarning/, 'no Pub/Sub client probes a metadata server');
    const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'));
    assert.equal(results.tiny, true);
    assert.ok(results.machine.cpus >= 1);
    const sections = new Set(results.figures.map((f: { section: string }) => f.section));
    assert.deepEqual([...sections].sort(), Object.keys(SECTIONS).sort(), 'a figure in every section');
    for (const f of results.figures)
      assert.ok(Number.isFinite(f.value), `${f.section}: ${f.name} is a number`);
    assert.ok(
      !results.figures.some((f: { name: string }) => /growth over the idle process/.test(f.name)),
      'no informer RSS growth at tiny sizes (noise)',
    );
    assert.ok(results.notes.some((n: string) => /RSS growth .* reported from/.test(n)));
    const report = readFileSync(join(out, 'report.md'), 'utf8');
    assert.match(report, /baseline = 2 namespaces\./, "the API-cost text names this run's baseline");
    for (const s of Object.values(SECTIONS)) assert.ok(report.includes(`## ${s.title}`), s.title);
    assert.match(report, /!\[[^\]]*\]\(latency\.svg\)/);
    assert.match(report, /## Reproduce/);
    assert.match(
      readFileSync(join(out, 'latency.svg'), 'utf8'),
      /^<svg [^>]*>[\s\S]*<polyline[\s\S]*<\/svg>\n$/,
    );
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('the latency chart of a run that measured no latency has empty axes (it used to loop forever)', () => {
  const svg = cdfChart('none', []);
  assert.match(svg, /^<svg /);
  assert.match(svg, /<\/svg>\s*$/);
  assert.match(svg, />1 ms</);
});

test('the report shows each figure once, in its section, with the baseline this run measured', () => {
  const figures: Figure[] = [
    {
      section: 'api-cost',
      name: 'secret-replicator, no-op reconcile, 2 namespaces',
      value: 3,
      unit: 'requests',
      baseline: { name: '2 namespaces', value: 3 },
    },
    { section: 'cold-start', name: 'spawn → first 204', value: 900, unit: 'ms' },
  ];
  const report = markdownReport({
    figures,
    machine: { cpus: 2 },
    sizes: {},
    durationMs: 1000,
    tiny: true,
    chartFile: 'latency.svg',
    notes: [],
  });
  for (const f of figures) assert.equal(report.split(f.name).length - 1, 1, `${f.name} once`);
  const apiCost = report.slice(report.indexOf(`## ${SECTIONS['api-cost']?.title}`));
  assert.match(apiCost, /baseline = 2 namespaces\.\n\n\| figure \|/);
  assert.doesNotMatch(report, /10 namespaces|## Summary/);
});
