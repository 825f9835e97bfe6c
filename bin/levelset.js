#!/usr/bin/env node
// The `levelset` command (cli/levelset.ts): the TypeScript sources in Levelset's repository, the
// compiled JavaScript of the installed package (dist/: Node does not strip types under node_modules).
// It needs Node.js 22.19 or later (@kubernetes/client-node 2's undici): on an older Node it says so in
// one line, before anything loads (plain JavaScript every Node parses).
import { existsSync } from 'node:fs';
import module from 'node:module';

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `levelset: needs Node.js 22.19 or later (Node 24 LTS recommended); this is Node ${process.versions.node}\n`,
  );
  process.exit(1);
}
// Node's compile cache (V8's code of each module, and TypeScript's stripped source), in
// NODE_COMPILE_CACHE or else <tmpdir>/node-compile-cache; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
// A command after the first then skips compiling the CLI's modules (docs/architecture.md, decision 66).
module.enableCompileCache?.();
const source = new URL('../cli/levelset.ts', import.meta.url);
await import(existsSync(source) ? source.href : new URL('../dist/cli/levelset.js', import.meta.url).href);
