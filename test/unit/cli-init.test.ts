/**
 * `levelset init` (cli/scaffold/init-project.ts) without installing anything: what a new project holds,
 * and that a non-empty directory is refused with one line and nothing written. The whole user path
 * from the packed tarballs is `npm run test:package`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { InitError, initProject, REGISTRY } from '../../cli/scaffold/init-project.ts';

describe('levelset init', () => {
  const dir = mkdtempSync(join(tmpdir(), 'levelset-init-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a project that names its registry and depends on levelset at an exact version', async () => {
    const project = join(dir, 'my-controllers');
    const written = await initProject(project, { version: '9.9.9' });
    for (const path of [
      'package.json',
      REGISTRY,
      'tsconfig.json',
      'biome.json',
      '.gitignore',
      'README.md',
      'terraform/main.tf',
    ])
      assert.ok(written.includes(path), `${path} written`);
    assert.ok(
      written.some((p) => p.startsWith('test/') && p.endsWith('.test.ts')),
      "the example's test",
    );
    const pkg = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
    assert.equal(pkg.name, 'my-controllers');
    assert.deepEqual(pkg.levelset, { registry: REGISTRY });
    assert.equal(pkg.dependencies.levelset, '9.9.9');
    // Stale manifests fail the project's tests; npm runs the install scripts Levelset's own package allows.
    assert.match(pkg.scripts.test, /^levelset build --check && node --test /);
    assert.deepEqual(pkg.allowScripts, JSON.parse(readFileSync('package.json', 'utf8')).allowScripts);
    assert.match(readFileSync(join(project, REGISTRY), 'utf8'), /export const controllers/);
    const tf = readFileSync(join(project, 'terraform', 'main.tf'), 'utf8');
    assert.match(tf, /source\s*=\s*"\.\.\/node_modules\/levelset\/terraform"/);
    assert.match(
      tf,
      /registry\s*=\s*jsondecode\(file\("\$\{path\.module\}\/\.\.\/deploy\/registry\.gen\.json"\)\)/,
    );
  });

  it("passes its own lint as written (Biome: its biome.json's rules and formatting)", async () => {
    const project = join(dir, 'linted');
    await initProject(project, { version: '9.9.9' });
    // The project's `npm run lint` is `biome check .`, with the Biome version Levelset pins (init's devDependencies).
    const biome = new URL('../../node_modules/@biomejs/biome/bin/biome', import.meta.url).pathname;
    const lint = spawnSync(process.execPath, [biome, 'check', '.'], { cwd: project, encoding: 'utf8' });
    assert.equal(lint.status, 0, lint.stdout + lint.stderr);
    assert.doesNotMatch(lint.stdout + lint.stderr, /deprecated/i);
  });

  it('refuses a non-empty directory with one line and writes nothing', async () => {
    const project = join(dir, 'occupied');
    // A directory holding one file of the user's.
    mkdirSync(project);
    writeFileSync(join(project, 'notes.txt'), 'mine');
    await assert.rejects(initProject(project), (err: unknown) => {
      assert.ok(err instanceof InitError);
      assert.match(err.message, /is not empty/);
      assert.equal(err.message.split('\n').length, 1, 'one line');
      return true;
    });
    assert.deepEqual(readdirSync(project), ['notes.txt'], 'nothing written');
    assert.equal(readFileSync(join(project, 'notes.txt'), 'utf8'), 'mine');
  });
});
