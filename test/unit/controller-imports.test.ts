// The lint rule of a controller's imports (biome.json, `noRestrictedImports` on functions/controllers
// and on the example projects' examples/*/controllers): a controller imports the kit, its own folder and
// another controller's API (`../<controller>/api.ts`: its resource, schemas and types), never another
// controller's internals nor the kit's (nor, in a project, any of the `levelset` package but `levelset/kit`).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { importLinter } from '../support/lint-imports.ts';

const linter = importLinter();
/** The lint's message for a controller's `file` importing `from`, or `''` when allowed. */
const lint = (from: string, file = 'functions/controllers/subscription/index.ts') => linter(file, from);

describe('what a controller may import', () => {
  it('the kit, its own folder and another controller’s api.ts', () => {
    for (const from of ['../../kit/index.ts', '../../kit/google.ts', './api.ts', '../topic/api.ts'])
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
    for (const from of [
      'levelset/kit',
      'levelset/kit/google',
      './api.ts',
      '../icecream/api.ts',
      'zod',
      '@kubernetes/client-node',
    ])
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
      assert.match(
        lint(from, file),
        /A controller imports the kit \(levelset\/kit, levelset\/kit\/google\)/,
        from,
      );
  });
});
