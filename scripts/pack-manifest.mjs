// The packed manifest of a package whose repository entry points are TypeScript sources
// (@levelset/apiserver's `exports` name ./index.ts): npm's `prepack` writes `exports` naming the
// compiled dist/ (Node does not strip types under node_modules) and keeps the original beside it;
// `postpack` puts the original back. Plain JavaScript: npm runs it with the Node on PATH.
//
//   node ../../scripts/pack-manifest.mjs prepack|postpack   (in the package's folder)
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const [step] = process.argv.slice(2);
const kept = 'package.json.orig';
if (step === 'prepack') {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
  writeFileSync(kept, readFileSync('package.json'));
  const compiled = (path) => `./dist/${path.replace(/^\.\//, '').replace(/\.ts$/, '.js')}`;
  pkg.exports = Object.fromEntries(
    Object.entries(pkg.exports).map(([key, path]) => [
      key,
      { types: compiled(path).replace(/\.js$/, '.d.ts'), default: compiled(path) },
    ]),
  );
  writeFileSync('package.json', `${JSON.stringify(pkg, null, 2)}\n`);
} else if (step === 'postpack') {
  if (existsSync(kept)) renameSync(kept, 'package.json');
} else {
  process.stderr.write('usage: node pack-manifest.mjs prepack|postpack\n');
  process.exitCode = 2;
}
