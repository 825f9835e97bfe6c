// The bundles' source maps keep only the mappings into Levelset's own sources (cli/build/bundle.ts
// ownMappingsOnly, decision 28), read and written in one pass over their VLQ text (decision 66):
// what it writes is what decoding the mappings, dropping the libraries' and encoding them again
// writes, with @jridgewell/sourcemap-codec as the reference.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decode, encode, type SourceMapSegment } from '@jridgewell/sourcemap-codec';
import { ownMappingsOnly } from '../../cli/build/bundle.ts';

/** The map ownMappingsOnly should return, computed on decoded segments. */
function reference(map: { sources: string[]; names: string[]; mappings: string }) {
  const keep = map.sources.map((s) => !s.split(/[\\/]/).includes('node_modules'));
  const index = new Map<number, number>();
  const sources: string[] = [];
  map.sources.forEach((s, i) => {
    if (!keep[i]) return;
    index.set(i, sources.length);
    sources.push(s);
  });
  const names: string[] = [];
  const nameIndex = new Map<number, number>();
  const lines = decode(map.mappings).map((line) => {
    const out: SourceMapSegment[] = [];
    let unmapped = false;
    for (const seg of line) {
      const own = seg.length > 1 ? index.get(seg[1] as number) : undefined;
      if (own === undefined) {
        if (!unmapped) out.push([seg[0]]);
        unmapped = true;
        continue;
      }
      unmapped = false;
      const [column, , sourceLine, sourceColumn] = seg as [number, number, number, number];
      if (seg.length === 5) {
        let j = nameIndex.get(seg[4]);
        if (j === undefined) {
          j = names.length;
          nameIndex.set(seg[4], j);
          names.push(map.names[seg[4]] ?? '');
        }
        out.push([column, own, sourceLine, sourceColumn, j]);
      } else out.push([column, own, sourceLine, sourceColumn]);
    }
    return out;
  });
  return { sources, names, mappings: encode(lines) };
}

/** A map over `sources` with `lineCount` generated lines of random segments (a seeded generator). */
function randomMap(seed: number, sources: string[], lineCount: number) {
  let state = seed;
  const next = (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  const names = Array.from({ length: 40 }, (_, i) => `name${i}`);
  const lines: SourceMapSegment[][] = [];
  for (let l = 0; l < lineCount; l++) {
    const line: SourceMapSegment[] = [];
    let column = 0;
    for (let k = next(12); k > 0; k--) {
      column += 1 + next(5000); // columns of minified code run long: multi-digit VLQs
      const kind = next(10);
      if (kind === 0) line.push([column]);
      else if (kind < 4)
        line.push([column, next(sources.length), next(20_000), next(300), next(names.length)]);
      else line.push([column, next(sources.length), next(20_000), next(300)]);
    }
    lines.push(line);
  }
  return { version: 3, sources, names, mappings: encode(lines) };
}

describe('ownMappingsOnly', () => {
  it("keeps Levelset's mappings, one unmapped segment per run of the libraries', and only the names kept", () => {
    const map = {
      version: 3,
      sources: ['../node_modules/lib/a.js', '../core/own.ts', '../node_modules/lib/b.js'],
      names: ['lib', 'own'],
      // line 0: lib, lib, own(name 1), lib; line 1: own; line 2: empty; line 3: lib(name 0)
      mappings: encode([
        [
          [0, 0, 0, 0],
          [5, 2, 3, 1],
          [9, 1, 7, 2, 1],
          [20, 0, 1, 0],
        ],
        [[0, 1, 8, 4]],
        [],
        [[2, 2, 0, 0, 0]],
      ]),
    };
    const trimmed = ownMappingsOnly(map);
    assert.deepEqual(trimmed.sources, ['../core/own.ts']);
    assert.deepEqual(trimmed.names, ['own']);
    assert.deepEqual(decode(trimmed.mappings), [[[0], [9, 0, 7, 2, 0], [20]], [[0, 0, 8, 4]], [], [[2]]]);
  });

  it('writes what decoding, dropping and encoding again writes', () => {
    const sources = [
      '../node_modules/undici/lib/a.js',
      '../core/kube.ts',
      '../node_modules/@kubernetes/client-node/src/gen/models/V1Pod.ts',
      '../functions/kit/index.ts',
      'levelset-entry:levelset-entry:index',
    ];
    for (const seed of [1, 2, 3, 42, 1234]) {
      const map = randomMap(seed, sources, 300);
      const trimmed = ownMappingsOnly(map);
      const expected = reference(map);
      assert.deepEqual(
        { sources: trimmed.sources, names: trimmed.names, mappings: trimmed.mappings },
        expected,
        `seed ${seed}`,
      );
      assert.equal(trimmed.version, 3);
    }
  });

  it('empties the map of a chunk of libraries alone', () => {
    const map = randomMap(7, ['../node_modules/a/index.js', '../node_modules/b/index.js'], 10);
    assert.deepEqual(ownMappingsOnly(map), { ...map, sources: [], names: [], mappings: '' });
  });
});
