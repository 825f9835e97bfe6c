/**
 * A 3-minute smoke of the soak (soak/run.ts, `npm run soak`), so that it cannot rot: the whole
 * local stack, the seeded workload, a fault every few seconds, the auditor. Fails when an invariant
 * is violated after the final quiet period (the soak's exit code), when a change never converged,
 * or when the run wrote no report.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { repoRoot } from '../../local/service.ts';
import type { SoakResults } from '../../soak/report.ts';

describe('the soak, 3 minutes', {
  skip: !!process.env.TEST_KUBECONFIG && 'the local API server only',
}, () => {
  const out = mkdtempSync(join(tmpdir(), 'levelset-soak-smoke-'));
  after(() => rmSync(out, { recursive: true, force: true }));

  it('ends with every invariant holding, every change converged', async (t) => {
    const child = spawn(
      process.execPath,
      [join(repoRoot, 'soak', 'run.ts'), '--minutes', '3', '--burst', '200', '--seed', '3', '--out', out],
      { cwd: repoRoot, stdio: ['ignore', 'inherit', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    // The soak stops its children on SIGTERM (a test timeout, Ctrl-C of the test run).
    const stopChild = () => child.kill('SIGTERM');
    process.once('SIGINT', stopChild);
    process.once('SIGTERM', stopChild);
    const [code] = (await once(child, 'exit')) as [number | null];
    process.off('SIGINT', stopChild);
    process.off('SIGTERM', stopChild);
    for (const line of stderr.trim().split('\n').slice(-15)) t.diagnostic(line);
    assert.ok(existsSync(join(out, 'report.md')), `no report (exit ${code}): ${stderr.slice(-2000)}`);
    const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as SoakResults;
    t.diagnostic(
      `${results.changes.total} changes; p50 ${results.latency.overall.p50} ms, p99 ${results.latency.overall.p99} ms; faults ${results.faults
        .map((f) => `${f.kind} ${f.injected}`)
        .join(', ')}`,
    );
    assert.deepEqual(results.finalViolations, []);
    assert.equal(code, 0);
    assert.ok(results.changes.total > 50, `only ${results.changes.total} changes made`);
    assert.equal(results.neverConverged, 0);
    assert.ok(results.faults.reduce((n, f) => n + f.injected, 0) >= 5, 'fewer than 5 faults injected');
    assert.ok(
      results.faults.every((f) => f.failed === 0),
      'a fault failed to inject',
    );
  });
});
