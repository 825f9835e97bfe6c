// npm run bench on tiny sizes, once, so that the benchmark cannot rot: it must run end to end and
// write every section. No figure is asserted (benchmarks are not tests).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { cdfChart, SECTIONS } from '../../bench/report.ts';

const exec = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;

test('npm run bench -- --tiny writes results.json, report.md and the SVG chart with every section', async (t) => {
  if (process.env.TEST_KUBECONFIG) {
    t.skip('the bench runs its own local API server');
    return;
  }
  const out = mkdtempSync(join(tmpdir(), 'levelset-bench-test-'));
  try {
    await exec(process.execPath, [join(root, 'bench', 'run.ts'), '--tiny', '--out', out], {
      cwd: root,
      maxBuffer: 16 << 20,
      timeout: 300_000,
    });
    const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'));
    assert.equal(results.tiny, true);
    assert.ok(results.machine.cpus >= 1);
    const sections = new Set(results.figures.map((f: { section: string }) => f.section));
    assert.deepEqual([...sections].sort(), Object.keys(SECTIONS).sort(), 'a figure in every section');
    for (const f of results.figures)
      assert.ok(Number.isFinite(f.value), `${f.section}: ${f.name} is a number`);
    const report = readFileSync(join(out, 'report.md'), 'utf8');
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
