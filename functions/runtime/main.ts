/**
 * The functions' entry for functions-framework on a developer's machine (`levelset dev`, the tests):
 * the project's registry, loaded at start (core/project.ts: `LEVELSET_REGISTRY`, else the
 * project of the current directory), given to {@link registerFunctions}. The deployed bundle's entry
 * imports the registry instead (`levelset build`, cli/build/index.ts).
 *
 *   npx functions-framework --source=functions/runtime/main.ts --target=reconcile --port=8081
 */
import { loadRegistry } from '../../core/project.ts';
import { registerFunctions } from './index.ts';

const registry = await loadRegistry();
await registerFunctions(registry.controllers, registry.webhooks);
