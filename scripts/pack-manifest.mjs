// The packed manifest of a package, as npm publishes it, differing from the repository's where the
// repository must differ: `exports` naming TypeScript sources (@levelset/apiserver's ./index.ts) are
// rewritten to the compiled dist/ (Node does not strip types under node_modules), and `--node RANGE`
// adds `engines.node` (levelset's: the repository itself runs its own Node 24 from the `node`
// devDependency, and an `engines` there would make npm on the host's Node warn about the project
// itself at every `npx levelset`). `prepack` keeps the original beside it; `postpack` puts it back.
// Plain JavaScript: npm runs it with the Node on PATH.
//
//   node scripts/pack-manifest.mjs prepack [--node RANGE] | postpack   (in the package's folder)
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { positionals, values } = parseArgs({ allowPositionals: true, options: { node: { type: 'string' } } });
const [step] = positionals;
const kept = 'package.json.orig';
if (step === 'prepack') {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
  writeFileSync(kept, readFileSync('package.json'));
  const compiled = (path) => `./dist/${path.replace(/^\.\//, '').replace(/\.ts$/, '.js')}`;
  pkg.exports = Object.fromEntries(
    Object.entries(pkg.exports).map(([key, path]) => [
      key,
      typeof path === 'string' && path.endsWith('.ts')
        ? { types: compiled(path).replace(/\.js$/, '.d.ts'), default: compiled(path) }
        : path,
    ]),
  );
  if (values.node) pkg.engines = { ...pkg.engines, node: values.node };
  writeFileSync('package.json', `${JSON.stringify(pkg, null, 2)}\n`);
} else if (step === 'postpack') {
  if (existsSync(kept)) renameSync(kept, 'package.json');
} else {
  process.stderr.write('usage: node pack-manifest.mjs prepack|postpack\n');
  process.exitCode = 2;
}
