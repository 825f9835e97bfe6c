/**
 * Resolve hook of `npm test` (`NODE_OPTIONS=--import=<this file>`, set by the global setup): where
 * an import resolves to an entry file named in `LEVELSET_TEST_BUNDLES`, it loads that entry's
 * bundle instead (test/support/bundled-client-node.ts says why and what). In the loading thread
 * (`module.registerHooks`), for `import` and `require` alike; any other resolution is untouched.
 *
 * JavaScript, not TypeScript: `NODE_OPTIONS` reaches every process of the run, among them the host's
 * own Node (npm, npx), which may be older than Levelset's and strip no types; there, without
 * `module.registerHooks` (Node < 22.15), it does nothing.
 */
import module from 'node:module';

// BUNDLES_ENV of bundled-client-node.ts (not imported: that module loads esbuild).
const raw = process.env.LEVELSET_TEST_BUNDLES;
/** @type {Record<string, string>} */
const bundles = raw ? JSON.parse(raw) : {};

if (Object.keys(bundles).length > 0 && typeof module.registerHooks === 'function')
  module.registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context);
      const bundle = bundles[resolved.url];
      return bundle ? { url: bundle, format: 'module', shortCircuit: true } : resolved;
    },
  });
