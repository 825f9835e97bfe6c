/**
 * Levelset's own files by path, wherever this copy of Levelset runs from: the repository (the
 * TypeScript sources, which Node runs as they are) or an installed package (the compiled JavaScript
 * under `dist/`: Node does not strip types under node_modules). Whoever spawns or preloads a file of
 * Levelset's (the local stack's children, the emulator's guard) names it through {@link levelsetModule}.
 */
import { join, resolve } from 'node:path';

/** This copy runs compiled (`dist/**∕*.js` of the installed package), not from the sources. */
export const compiled = import.meta.filename.endsWith('.js');

/** The folder holding Levelset's modules (`functions/`, `relay/`, `cli/`, `local/`…): the repository, or the package's `dist/`. */
export const sourceRoot = resolve(import.meta.dirname, '..');

/** The package's root, holding its `package.json`: the repository, or `node_modules/levelset`. */
export const packageRoot = compiled ? resolve(sourceRoot, '..') : sourceRoot;

/**
 * The absolute path of Levelset's module `path`, given as in the repository (`relay/main.ts`): the
 * `.ts` source in the repository, the `.js` file under `dist/` when installed.
 */
export function levelsetModule(path: string): string {
  return join(sourceRoot, compiled ? path.replace(/\.ts$/, '.js') : path);
}
