/**
 * The functions' entry for functions-framework on a developer's machine (`levelset dev`, the tests):
 * the project's registry, loaded at start (functions/project.ts: `LEVELSET_REGISTRY`, else the
 * project of the current directory), given to {@link registerFunctions}. The deployed bundle's entry
 * imports the registry instead (`levelset build`, cli/build.ts).
 *
 *   npx functions-framework --source=functions/main.ts --target=reconcile --port=8081
 */
import { loadRegistry } from './project.ts';
import { registerFunctions } from './runtime.ts';

await registerFunctions((await loadRegistry()).controllers);
