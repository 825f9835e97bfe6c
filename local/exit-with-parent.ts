/**
 * Preloaded (`node --import`) into every Node child of the local stack: when the parent dies, the
 * child SIGTERMs itself — running its own graceful shutdown — and exits after 10 s at the latest.
 * See local/parent-watch.ts.
 */
import { watchParent } from './parent-watch.ts';

watchParent(() => {
  setTimeout(() => process.exit(1), 10_000).unref();
  process.kill(process.pid, 'SIGTERM');
});
