// `levelset build` bundles the functions' package and the relay's two builds as rebuilds of one
// esbuild context (cli/build/bundle.ts bundleAll): each build's output is its own — its entry
// points only, its externals, source maps relative to its own directory — as a bundle() call of
// its own writes it.
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bundle, bundleAll } from '../../cli/build/bundle.ts';

describe('bundleAll', () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'levelset-bundle-all-'));
    mkdirSync(join(root, 'node_modules', 'greeter'), { recursive: true });
    writeFileSync(
      join(root, 'node_modules', 'greeter', 'package.json'),
      JSON.stringify({ name: 'greeter', type: 'module', main: 'index.js' }),
    );
    writeFileSync(
      join(root, 'node_modules', 'greeter', 'index.js'),
      "export const greet = (n) => 'hello from greeter ' + n;\n",
    );
    mkdirSync(join(root, 'src'));
    writeFileSync(
      join(root, 'src', 'shared.ts'),
      "import { greet } from 'greeter';\nexport const shared = (n: string): string => greet(n);\n",
    );
    writeFileSync(
      join(root, 'src', 'main.ts'),
      "import { shared } from './shared.ts';\nconsole.log(shared('main'));\n",
    );
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("writes each build's entry points into its own directory, with its own externals and source maps", async () => {
    const a = join(root, 'out', 'a');
    const b = join(root, 'deeper', 'out', 'b');
    await bundleAll([
      {
        root,
        entryPoints: { first: { source: `import ${JSON.stringify(join(root, 'src', 'main.ts'))};\n` } },
        outdir: a,
        external: ['greeter'],
      },
      { root, entryPoints: { second: 'src/main.ts' }, outdir: b },
    ]);
    assert.deepEqual(readdirSync(a).sort(), ['first.mjs', 'first.mjs.map']);
    assert.deepEqual(readdirSync(b).sort(), ['second.mjs', 'second.mjs.map']);
    const first = readFileSync(join(a, 'first.mjs'), 'utf8');
    assert.match(first, /from\s*"greeter"/, 'greeter is external to the first build');
    assert.doesNotMatch(first, /hello from greeter/);
    const second = readFileSync(join(b, 'second.mjs'), 'utf8');
    assert.match(second, /hello from greeter/, 'the second build bundles greeter');
    assert.doesNotMatch(second, /from\s*"greeter"/);
    const sourcesOf = (dir: string, name: string) =>
      JSON.parse(readFileSync(join(dir, `${name}.mjs.map`), 'utf8')).sources as string[];
    assert.ok(sourcesOf(a, 'first').includes('../../src/shared.ts'), sourcesOf(a, 'first').join());
    assert.ok(sourcesOf(b, 'second').includes('../../../src/shared.ts'), sourcesOf(b, 'second').join());
    assert.ok(
      sourcesOf(b, 'second').every((s) => !s.includes('node_modules')),
      "only Levelset's own mappings",
    );
  });

  it('writes what bundle() writes for the same build', async () => {
    const build = { root, entryPoints: { main: 'src/main.ts' } };
    const alone = join(root, 'alone', 'dist');
    const together = join(root, 'together', 'dist');
    await bundle({ ...build, outdir: alone });
    await bundleAll([
      { ...build, outdir: together },
      {
        root,
        entryPoints: { other: { source: "export const other = 'other';\n" } },
        outdir: join(root, 'o'),
      },
    ]);
    for (const file of readdirSync(alone))
      assert.equal(readFileSync(join(together, file), 'utf8'), readFileSync(join(alone, file), 'utf8'), file);
    assert.deepEqual(readdirSync(together).sort(), readdirSync(alone).sort());
  });

  it('writes nothing when beforeWrite rejects, and only after it resolves', async () => {
    const out = join(root, 'gated');
    const build = { root, entryPoints: { main: 'src/main.ts' }, outdir: out };
    await assert.rejects(
      bundleAll([build], {
        beforeWrite: async () => {
          throw new Error('the registry did not load');
        },
      }),
      /the registry did not load/,
    );
    assert.ok(!existsSync(out), 'nothing written');
    let emptied = false;
    await bundleAll([build], {
      beforeWrite: async () => {
        assert.ok(!existsSync(out), 'called before anything is written');
        emptied = true;
      },
    });
    assert.ok(emptied);
    assert.deepEqual(readdirSync(out).sort(), ['main.mjs', 'main.mjs.map']);
  });

  it('rejects with the reason of its aborted signal, writing nothing', async () => {
    const out = join(root, 'aborted');
    const abort = new AbortController();
    const second = { root, entryPoints: { second: 'src/main.ts' }, outdir: out };
    const built = bundleAll(
      [{ root, entryPoints: { first: 'src/main.ts' }, outdir: join(root, 'aborted-first') }, second],
      { signal: abort.signal },
    );
    abort.abort(new Error('the registry did not load'));
    await assert.rejects(built, /the registry did not load/);
    assert.ok(!existsSync(out) && !existsSync(join(root, 'aborted-first')), 'nothing written');
    const aborted = new AbortController();
    aborted.abort(new Error('before it started'));
    await assert.rejects(bundleAll([second], { signal: aborted.signal }), /before it started/);
  });

  it('refuses two builds that name the same entry point', async () => {
    const one = { root, entryPoints: { main: 'src/main.ts' }, outdir: join(root, 'x') };
    await assert.rejects(
      bundleAll([one, { ...one, outdir: join(root, 'y') }]),
      /two builds name one entry point/,
    );
  });
});
