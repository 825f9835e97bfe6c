/**
 * Section `build`: `levelset build` of a user project (a copy of examples/foo outside the
 * repository, its node_modules this checkout's), from spawning the CLI to its exit, beside one bare
 * esbuild call of the same project's functions entry (the same target, format, minification and
 * source maps, without Levelset's plugins, chunks or map trimming), interleaved.
 */
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { EXTERNAL, functionsEntry } from '../../cli/build/package-functions.ts';
import { repoRoot } from '../../local/service.ts';
import type { Section } from '../environment.ts';
import { figuresOf, quantiles } from '../report.ts';
import { exec } from '../support.ts';

/** Runs of each (the CLI, the bare esbuild call), interleaved. */
const RUNS = 3;

export const buildTime: Section = {
  name: 'build',
  async run({ tiny }) {
    const dir = mkdtempSync(join(tmpdir(), 'levelset-bench-build-'));
    try {
      const project = join(dir, 'foo');
      // As a user's project: its package.json and controllers, a lockfile, its node_modules.
      cpSync(join(repoRoot, 'examples', 'foo'), project, {
        recursive: true,
        filter: (src) => !/[\\/](node_modules|build|deploy|\.levelset)$/.test(src),
      });
      cpSync(join(repoRoot, 'package-lock.json'), join(project, 'package-lock.json'));
      symlinkSync(join(repoRoot, 'node_modules'), join(project, 'node_modules'), 'dir');
      // The `levelset` command as installed (package.json `bin`), which turns Node's compile cache on.
      const cli = () =>
        exec(process.execPath, [join(repoRoot, 'bin', 'levelset.js'), 'build'], { cwd: project });
      const entry = functionsEntry(join(project, 'controllers', 'index.ts'));
      const bare = () =>
        build({
          absWorkingDir: project,
          stdin: { contents: entry, resolveDir: project, loader: 'ts' },
          outdir: join(dir, 'bare'),
          outExtension: { '.js': '.mjs' },
          bundle: true,
          format: 'esm',
          platform: 'node',
          target: 'node24',
          minify: true,
          sourcemap: 'linked',
          sourcesContent: false,
          external: [...EXTERNAL],
          logLevel: 'silent',
        });
      const ms = { cli: [] as number[], bare: [] as number[] };
      await bare(); // esbuild's service started, the files in the page cache
      const runs = tiny ? 1 : RUNS;
      for (let i = 0; i < runs; i++) {
        let t0 = performance.now();
        await bare();
        ms.bare.push(performance.now() - t0);
        t0 = performance.now();
        await cli();
        ms.cli.push(performance.now() - t0);
      }
      const cliMs = quantiles(ms.cli).p50;
      return {
        figures: [
          figuresOf('build')(
            `levelset build of a user project (examples/foo copied out: manifests, functions package, relay and in-process bundles), spawn → exit, median of ${runs}`,
            cliMs,
            'ms',
            {
              name: 'one bare esbuild call of its functions entry (no plugins, one file), median',
              value: quantiles(ms.bare).p50,
            },
            { text: '≤ 5 s', met: cliMs <= 5000 },
          ),
        ],
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
