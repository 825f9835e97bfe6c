/**
 * Children of the local stack go when their parent goes, however it goes (SIGKILL included, which
 * gives the parent no chance to stop them): each child polls its parent process id, and when it
 * changes (the parent died and the child was re-parented to init or a subreaper) it stops itself.
 *
 * - Node children (the functions, the relay) load {@link PRELOAD} with `--import`: on the parent's
 *   death they SIGTERM themselves (their own graceful shutdown), and exit after 10 s at the latest.
 * - The Pub/Sub emulator (Java) runs under `local/guard.ts`, which does the same for its child.
 * - `levelset dev` watches its own parent too (`npm start`'s npm, or the shell).
 */
import { pathToFileURL } from 'node:url';
import { levelsetModule } from './module-path.ts';

/** Polling period of {@link watchParent}, ms. */
export const PARENT_POLL_MS = 500;

/** The `--import` module that makes a Node child stop when its parent dies. */
export const PRELOAD = pathToFileURL(levelsetModule('local/exit-with-parent.ts')).href;

/**
 * Calls `onGone` once, when this process's parent has died (its parent process id changed). The
 * timer does not keep the process alive.
 * @returns a function that stops watching
 */
export function watchParent(onGone: () => void, intervalMs = PARENT_POLL_MS): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
