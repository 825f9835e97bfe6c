/**
 * `levelset build` run as a real process (the package's `bin`) on a project whose registry does not
 * load: the registry loads in the manifests' worker thread while esbuild starts (cli/build/index.ts,
 * decision 62), and its failure is still one line, exit 1, with nothing written. The relay's image it
 * writes runs with the relay's environment (glibc's malloc settings, decision 74).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot } from '../../local/service.ts';

const bin = join(
  repoRoot,
  (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin: { levelset: string } }).bin
    .levelset,
);

let project: string;
before(() => {
  project = mkdtempSync(join(tmpdir(), 'levelset-build-'));
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'broken', type: 'module', levelset: { registry: 'controllers/index.ts' } }),
  );
  mkdirSync(join(project, 'controllers'));
  writeFileSync(
    join(project, 'controllers', 'index.ts'),
    "throw new Error('the registry throws at load');\nexport const controllers = [];\n",
  );
});
after(() => rmSync(project, { recursive: true, force: true }));

test('a registry that does not load: one line, exit 1, nothing built', async () => {
  const {
    status: code,
    stdout,
    stderr,
  } = spawnSync(process.execPath, [bin, 'build'], {
    cwd: project,
    encoding: 'utf8',
  });
  assert.equal(code, 1, stderr);
  assert.equal(stdout, '');
  assert.match(
    stderr,
    /^levelset: the registry .*controllers\/index\.ts did not load: the registry throws at load\n$/,
  );
  for (const dir of ['build', 'deploy']) assert.ok(!existsSync(join(project, dir)), `no ${dir}/`);
});

test("the relay's image that `levelset build` writes sets the environment the repository's relay image sets", async () => {
  const { RELAY_DOCKERFILE } = await import('../../cli/build/index.ts');
  const { ALLOCATOR_ENV } = await import('../../local/service.ts');
  for (const [name, value] of Object.entries(ALLOCATOR_ENV))
    assert.match(RELAY_DOCKERFILE, new RegExp(`\\b${name}=${value}\\b`), name);
});
