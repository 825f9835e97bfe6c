// The lint rule of a controller's imports (biome.json, `noRestrictedImports` on functions/controllers
// and on the example projects' examples/*/controllers): a controller imports the kit, its own folder and
// another controller's API (`../<controller>/api.ts`: its resource, schemas and types), never another
// controller's internals nor the kit's (nor, in a project, any of the `levelset` package but `levelset/kit`).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';

const REPO = resolve(import.meta.dirname, '../..');
const root = mkdtempSync(join(tmpdir(), 'levelset-controller-imports-'));
after(() => rmSync(root, { recursive: true, force: true }));
copyFileSync(join(REPO, 'biome.json'), join(root, 'biome.json'));
mkdirSync(join(root, 'functions/controllers/subscription'), { recursive: true });
mkdirSync(join(root, 'examples/foo/controllers/foo'), { recursive: true });

/** The lint's message for a controller's `file` importing `from`, or `''` when allowed. */
function lint(from: string, file = 'functions/controllers/subscription/index.ts'): string {
  writeFileSync(join(root, file), `import { x } from '${from}';\n\nexport const y = x;\n`);
  const r = spawnSync(
    process.execPath,
    [join(REPO, 'node_modules/@biomejs/biome/bin/biome'), 'lint', '--only=style/noRestrictedImports', file],
    { cwd: root, encoding: 'utf8' },
  );
  return r.status === 0 ? '' : (/A controller imports[^\n]*/.exec(r.stdout + r.stderr)?.[0] ?? r.stderr);
}

describe('what a controller may import', () => {
  it('the kit, its own folder and another controller’s api.ts', () => {
    for (const from of ['../../kit/index.ts', './api.ts', '../topic/api.ts'])
      assert.equal(lint(from), '', from);
  });

  it('not another controller’s internals, nor the kit’s', () => {
    for (const from of ['../topic/index.ts', '../foo/desired.ts', '../../kit/define.ts', '../../log.ts'])
      assert.match(
        lint(from),
        /other controllers' API \(\.\.\/<controller>\/api\.ts\), not their internals/,
        from,
      );
  });
});

describe("what an example project's controller may import", () => {
  const file = 'examples/foo/controllers/foo/index.ts';

  it('levelset/kit, its own folder, another controller’s api.ts and the libraries', () => {
    for (const from of ['levelset/kit', './api.ts', '../icecream/api.ts', 'zod', '@kubernetes/client-node'])
      assert.equal(lint(from, file), '', from);
  });

  it('nothing else of Levelset, nor another controller’s internals', () => {
    for (const from of [
      'levelset/runtime',
      'levelset/kit/testing',
      'levelset',
      '../icecream/index.ts',
      '../../../../functions/kit/define.ts',
    ])
      assert.match(lint(from, file), /A controller imports the kit \(levelset\/kit\)/, from);
  });
});
