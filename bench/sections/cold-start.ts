/**
 * Section `cold-start`: the reconcile function from spawn to its first 204, the deployment package
 * and the TypeScript sources, beside an empty functions-framework function started alike.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMPILE_CACHE, packageFunctions, WARM_COMPILE_CACHE } from '../../cli/build/package-functions.ts';
import { PRELOAD } from '../../local/parent-watch.ts';
import { freePort } from '../../local/pubsub-emulator.ts';
import { repoRoot } from '../../local/service.ts';
import { FUNCTION_NODE_OPTIONS, functionsCli, functionsMain } from '../../local/stack-services.ts';
import type { Section } from '../environment.ts';
import { figuresOf, quantiles } from '../report.ts';
import { exec, keyMessage, now, sleep, stopChild } from '../support.ts';

interface Variant {
  source: string;
  nodeOptions: string;
  env: Record<string, string>;
}

export const coldStart: Section = {
  name: 'cold-start',
  async run({ sizes, log, apiServer }) {
    const api = await apiServer();
    const dir = mkdtempSync(join(tmpdir(), 'levelset-bench-cold-'));
    try {
      const bundle = join(dir, 'bundle');
      await packageFunctions({ out: bundle });
      symlinkSync(join(repoRoot, 'node_modules'), join(bundle, 'node_modules'), 'dir');
      // The buildpack's `gcp-build` after `npm ci`: fills the compile cache the functions start with.
      await exec(process.execPath, [join(bundle, WARM_COMPILE_CACHE)], { cwd: bundle });
      const empty = join(dir, 'empty');
      mkdirSync(empty);
      writeFileSync(join(empty, 'package.json'), '{"name":"empty","main":"index.js"}\n');
      writeFileSync(join(empty, 'index.js'), 'exports.reconcile = (req, res) => res.status(204).end();\n');
      // terraform/functions.tf's NODE_OPTIONS at the default 512Mi.
      const deployed = [...FUNCTION_NODE_OPTIONS, '--enable-source-maps'].join(' ');
      // terraform/functions.tf's NODE_COMPILE_CACHE for the bundle.
      const compileCache = {
        NODE_COMPILE_CACHE: join(bundle, COMPILE_CACHE),
        NODE_COMPILE_CACHE_PORTABLE: '1',
      };
      const variants: Record<'bundle' | 'empty' | 'sources', Variant> = {
        bundle: { source: bundle, nodeOptions: deployed, env: compileCache },
        empty: { source: empty, nodeOptions: deployed, env: {} },
        // As the local stack runs them: functions/runtime/main.ts loads the project's registry (this repository's).
        sources: { source: functionsMain, nodeOptions: FUNCTION_NODE_OPTIONS.join(' '), env: {} },
      };
      const samples = { bundle: [] as number[], empty: [] as number[], sources: [] as number[] };
      for (let i = 0; i < sizes.coldStarts; i++) {
        log(`cold start ${i + 1}`);
        for (const [name, v] of Object.entries(variants) as [keyof typeof variants, Variant][])
          samples[name].push(await spawnToFirst204(v, api.kubeconfigPath));
      }
      const figure = figuresOf('cold-start');
      const b = quantiles(samples.bundle);
      const e = quantiles(samples.empty);
      const t = quantiles(samples.sources);
      const vsEmpty = { name: 'empty functions-framework function', value: e.p50 };
      return {
        figures: [
          figure(
            `reconcile function (deployed bundle): spawn → first 204, median of ${b.n}`,
            b.p50,
            'ms',
            vsEmpty,
            { text: '≤ 600 ms and ≤ 2×', met: b.p50 <= 600 && b.p50 <= 2 * e.p50 },
          ),
          figure(
            `reconcile function (TypeScript sources, as npm start runs them): spawn → first 204, median of ${t.n}`,
            t.p50,
            'ms',
            vsEmpty,
          ),
        ],
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/** Starts functions-framework on `v.source` and POSTs a key message until it answers 204; ms. */
async function spawnToFirst204(v: Variant, kubeconfigPath: string): Promise<number> {
  const port = await freePort();
  const t0 = now();
  const child = spawn(
    process.execPath,
    // It stops itself when the bench dies (local/parent-watch.ts), as every variant does alike.
    [`--import=${PRELOAD}`, functionsCli, '--target=reconcile', `--port=${port}`, `--source=${v.source}`],
    {
      env: {
        ...process.env,
        ...v.env,
        NODE_OPTIONS: v.nodeOptions,
        KUBECONFIG: kubeconfigPath,
        LOG_LEVEL: 'warn',
        LEVELSET_SOURCE_NAMESPACE: 'bench-source',
      },
      stdio: 'ignore',
    },
  );
  try {
    const message = keyMessage('secret-replicator', 'bench-source', 'missing', 'manual');
    const body = JSON.stringify({
      message: { data: Buffer.from(JSON.stringify(message)).toString('base64'), messageId: '1' },
    });
    for (;;) {
      const res = await fetch(`http://127.0.0.1:${port}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      }).catch(() => undefined);
      await res?.body?.cancel();
      if (res?.status === 204) break;
      if (now() - t0 > 60_000) throw new Error(`${v.source}: no 204 within 60 s`);
      await sleep(5);
    }
    return now() - t0;
  } finally {
    await stopChild(child);
  }
}
