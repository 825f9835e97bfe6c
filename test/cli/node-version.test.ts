// `levelset` on a Node older than it needs (issue 41: `npx levelset init` on a Node 20 host failed
// after 41 s inside undici): one line naming the version it needs, at once, nothing written.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { test } from 'node:test';

const bin = resolve(import.meta.dirname, '../../bin/levelset.js');

/** A `node` on the PATH (outside node_modules) older than 22.19, as a host's preinstalled one may be. */
function olderNode(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const node = join(dir, 'node');
    if (dir.includes('node_modules') || !existsSync(node)) continue;
    const [major = 0, minor = 0] = execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' })
      .trim()
      .split('.')
      .map(Number);
    if (major < 22 || (major === 22 && minor < 19)) return node;
  }
  return undefined;
}

test('on a Node older than 22.19, levelset says which Node it needs, in one line, and writes nothing', (t) => {
  const node = olderNode();
  if (!node) return t.skip('no Node older than 22.19 on this machine');
  const dir = mkdtempSync(join(tmpdir(), 'levelset-old-node-'));
  try {
    const run = spawnSync(node, [bin, 'init', 'project'], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.status, 1);
    assert.match(
      run.stderr,
      /^levelset: needs Node\.js 22\.19 or later \(Node 24 LTS recommended\); this is Node \d+\.\d+\.\d+\n$/,
    );
    assert.deepEqual(readdirSync(dir), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
