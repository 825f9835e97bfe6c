/**
 * `levelset build`'s manifests, in a worker thread (cli/build/index.ts {@link startManifests}): the
 * registry's modules (the kit, zod, the controllers' schemas) load and the manifests are generated
 * on a thread of their own while the main thread starts esbuild and answers its plugins' calls
 * (docs/architecture.md, decision 62).
 *
 * The worker's data (`workerData`) is a {@link ManifestsWorkerData}; it posts, in order, `{ type: 'warn', line }`
 * for each of generateManifests' warnings, `{ type: 'registry' }` once the registry has loaded, then
 * `{ type: 'done', files }` (the paths written, relative to the project) or `{ type: 'error', name,
 * message, stack }` (a ProjectError's `name` is `'ProjectError'`).
 */
import { enableCompileCache } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import type { Project } from '../../core/project.ts';

/** What the worker is given. */
export interface ManifestsWorkerData {
  /** The project whose manifests are generated. */
  project: Project;
  /**
   * The main thread's compile cache directory (`module.getCompileCacheDir()`), which a worker does
   * not inherit: the registry's modules (≈ 1 500, client-node's 868 among them) then load from it;
   * `undefined` when the main thread has none (the worker then compiles every module).
   */
  compileCache: string | undefined;
}

/** A message of the worker to the main thread (this file's docstring). */
export type ManifestsMessage =
  | { type: 'warn'; line: string }
  | { type: 'registry' }
  | { type: 'done'; files: string[] }
  | { type: 'error'; name: string; message: string; stack?: string };

const post = (message: ManifestsMessage) => parentPort?.postMessage(message);
const { project, compileCache } = workerData as ManifestsWorkerData;
if (compileCache) enableCompileCache(compileCache);
try {
  // Loaded once the cache is on.
  const { loadRegistry } = await import('../../core/project.ts');
  await loadRegistry(project.registry);
  post({ type: 'registry' });
  const { generateManifests } = await import('./generate-manifests.ts');
  const files = await generateManifests({ project, warn: (line) => post({ type: 'warn', line }) });
  post({ type: 'done', files });
} catch (err) {
  const e = err instanceof Error ? err : new Error(String(err));
  post({ type: 'error', name: e.name, message: e.message, stack: e.stack });
}
