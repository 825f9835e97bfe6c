#!/usr/bin/env node
// The `levelset` command (cli/levelset.ts): the TypeScript sources in Levelset's repository, the
// compiled JavaScript of the installed package (dist/: Node does not strip types under node_modules).
import { existsSync } from 'node:fs';

const source = new URL('../cli/levelset.ts', import.meta.url);
await import(existsSync(source) ? source.href : new URL('../dist/cli/levelset.js', import.meta.url).href);
