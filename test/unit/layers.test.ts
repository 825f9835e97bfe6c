// The layers of docs/architecture.md ("Layers"), as Biome enforces them (biome.json,
// `noRestrictedImports` per folder): each folder imports the layers below it and is refused an import
// of one above, so the direction cannot erode one file at a time.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { importLinter } from '../support/lint-imports.ts';

const lint = importLinter();

/** [file, import, the message's start when refused or '' when allowed] */
const CASES: readonly [string, string, string][] = [
  ['core/contract/key.ts', './names.ts', ''],
  ['core/contract/key.ts', '../k8s/errors.ts', 'core/contract/ is the contract'],
  ['core/contract/key.ts', '../log.ts', ''],
  ['core/k8s/rest.ts', '../contract/key.ts', ''],
  ['core/publish.ts', './message.ts', ''],
  ['core/publish.ts', '../functions/runtime/reconcile.ts', 'core/ is the ground floor'],
  ['core/log.ts', '../relay/relay.ts', 'core/ is the ground floor'],
  ['functions/kit/define.ts', '../../core/backoff.ts', ''],
  ['functions/kit/define.ts', '../runtime/retry.ts', 'The kit imports core/ only'],
  ['functions/kit/define.ts', '../../relay/relay.ts', 'The kit imports core/ only'],
  ['functions/kit/define.ts', '../../local/stack.ts', 'The kit imports core/ only'],
  ['relay/relay.ts', '../core/publish.ts', ''],
  ['relay/relay.ts', '../functions/runtime/reconcile.ts', 'The relay imports core/ only'],
  ['relay/relay.ts', '../functions/kit/index.ts', 'The relay imports core/ only'],
  ['functions/runtime/in-process.ts', '../../relay/relay.ts', ''],
  ['functions/runtime/reconcile.ts', '../../core/k8s/errors.ts', ''],
  ['functions/runtime/reconcile.ts', '../kit/index.ts', 'The runtime imports the relay and core/'],
  ['functions/runtime/reconcile.ts', '../../cli/errors.ts', 'The runtime imports the relay and core/'],
  ['local/stack.ts', '../functions/runtime/resync.ts', ''],
  ['local/stack.ts', '../cli/errors.ts', 'The local stack imports the runtime'],
  ['cli/levelset.ts', '../local/stack.ts', ''],
  ['soak/run.ts', '../local/stack.ts', ''],
  ['local/stack.ts', '../soak/run.ts', 'The local stack imports the runtime'],
  ['core/log.ts', '../soak/auditor.ts', 'core/ is the ground floor'],
  ['apiserver/http.ts', '../core/log.ts', 'The local API server is a test double'],
  ['cli/levelset.ts', '../apiserver/index.ts', 'Import the local API server by its package name'],
];

describe('the layers, enforced by the lint', () => {
  for (const [file, from, refused] of CASES)
    it(`${file} ${refused ? 'may not' : 'may'} import ${from}`, () => {
      const message = lint(file, from);
      if (refused) assert.ok(message.startsWith(refused), message || '(allowed)');
      else assert.equal(message, '');
    });
});
