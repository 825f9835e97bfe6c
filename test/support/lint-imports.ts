// Biome's import rules (biome.json, `noRestrictedImports`) run on a probe file in a scratch copy of
// the repository's layout: one import, linted as if it stood at a given path. Shared by the tests of
// the layers (test/unit/layers.test.ts) and of what a controller may import
// (test/unit/controller-imports.test.ts).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after } from 'node:test';

const REPO = resolve(import.meta.dirname, '../..');

/**
 * A scratch folder holding the repository's biome.json (removed after the test file), and
 * `lint(file, from)`: the message of the first `noRestrictedImports` diagnostic for `file` (a path as
 * in the repository) importing `from`, or `''` when the import is allowed.
 */
export function importLinter(): (file: string, from: string) => string {
  const root = mkdtempSync(join(tmpdir(), 'levelset-imports-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  copyFileSync(join(REPO, 'biome.json'), join(root, 'biome.json'));
  return (file, from) => {
    mkdirSync(join(root, dirname(file)), { recursive: true });
    writeFileSync(join(root, file), `import { x } from '${from}';\n\nexport const y = x;\n`);
    const r = spawnSync(
      process.execPath,
      [join(REPO, 'node_modules/@biomejs/biome/bin/biome'), 'lint', '--only=style/noRestrictedImports', file],
      { cwd: root, encoding: 'utf8' },
    );
    if (r.status === 0) return '';
    return /× ([^\n]*)/.exec(r.stdout + r.stderr)?.[1] ?? r.stdout + r.stderr;
  };
}
