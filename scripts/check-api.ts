/**
 * The kit's public API report: what a controller may import, as API Extractor records it
 * (`functions/kit/api/<entry>.api.md`, one per entry point: the kit, its Google Cloud resources and its test helpers).
 *
 *   node scripts/check-api.ts            # fails (exit 1) when the API differs from the checked-in report
 *   node scripts/check-api.ts --update   # rewrites the reports; review the diff, then commit it
 *
 * Steps: TypeScript emits the declarations of `functions/` (tsconfig.api.json) into a temporary
 * directory, without type-checking them again (`--noCheck`: `npm run typecheck`, beside this in
 * `npm run check`, type-checks the same files), API Extractor analyses each entry point's `.d.ts`
 * (one program of those declarations for the three) and writes its report there, and
 * the report (its generator's web address taken out of the header: nothing the project ships
 * links outside it) is compared with the checked-in one. The temporary directory is removed in
 * every case.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { CompilerState, Extractor, ExtractorConfig, ExtractorLogLevel } from '@microsoft/api-extractor';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const reportFolder = join(root, 'functions/kit/api');
/** Entry point (source, relative to the root) → report name. */
const ENTRIES: Record<string, string> = {
  'functions/kit/index.ts': 'kit',
  'functions/kit/google.ts': 'kit-google',
  'functions/kit/testing.ts': 'kit-testing',
};

const { values } = parseArgs({ options: { update: { type: 'boolean', default: false } } });
const dts = await mkdtemp(join(tmpdir(), 'levelset-api-'));
const changed: string[] = [];
try {
  await promisify(execFile)(
    process.execPath,
    [
      join(root, 'node_modules/typescript/bin/tsc'),
      '-p',
      join(root, 'tsconfig.api.json'),
      '--noCheck',
      '--outDir',
      dts,
    ],
    { cwd: root },
  );
  await mkdir(join(dts, 'out'));
  const packageJson = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { name: string };
  const declarationOf = (source: string) => join(dts, source.replace(/\.ts$/, '.d.ts'));
  // One TypeScript program for every entry point (API Extractor's `compilerState`): each invoke
  // would otherwise build and type-check a program of its own over the same files.
  let compilerState: CompilerState | undefined;
  for (const [source, report] of Object.entries(ENTRIES)) {
    const config = ExtractorConfig.prepare({
      configObject: {
        projectFolder: root,
        newlineKind: 'lf',
        mainEntryPointFilePath: declarationOf(source),
        // The program is the emitted declarations alone (tsconfig.api.json's options, its sources
        // left out: tsc above type-checked them, and skipLibCheck skips the declarations).
        compiler: {
          overrideTsconfig: {
            extends: join(root, 'tsconfig.api.json'),
            include: [],
            files: Object.keys(ENTRIES).map(declarationOf),
          },
        },
        apiReport: {
          enabled: true,
          reportFolder: join(dts, 'out'),
          reportTempFolder: join(dts, 'report'),
          reportFileName: report,
        },
        docModel: { enabled: false },
        dtsRollup: { enabled: false },
        tsdocMetadata: { enabled: false },
        messages: {
          extractorMessageReporting: {
            // A finding (e.g. a type used by the API but not exported) goes into the report.
            default: { logLevel: ExtractorLogLevel.Warning, addToApiReportFile: true },
            // One package, one release level: no @public/@beta tags.
            'ae-missing-release-tag': { logLevel: ExtractorLogLevel.None },
            // Docstrings name internal helpers for the reader of the source.
            'ae-unresolved-link': { logLevel: ExtractorLogLevel.None },
            // What a docstring misses is the docs' concern, not the API's shape.
            'ae-undocumented': { logLevel: ExtractorLogLevel.None },
          },
          tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.None } },
        },
      },
      configObjectFullPath: join(root, 'api-extractor.json'),
      packageJsonFullPath: join(root, 'package.json'),
      packageJson,
    });
    compilerState ??= CompilerState.create(config, {
      additionalEntryPoints: Object.keys(ENTRIES).map(declarationOf),
    });
    const result = Extractor.invoke(config, {
      compilerState,
      localBuild: true,
      // The comparison is this script's (below): silence API Extractor's own about a new report.
      messageCallback: (message) => {
        if (message.messageId.startsWith('console-api-report-')) message.logLevel = ExtractorLogLevel.None;
      },
    });
    if (!result.succeeded) throw new Error(`API Extractor failed on ${source} (see above)`);
    const generated = (await readFile(join(dts, 'out', `${report}.api.md`), 'utf8'))
      .replace(
        /^> Do not edit this file\. .*$/m,
        '> Do not edit this file. It is generated by API Extractor: `npm run update:api`.',
      )
      .replaceAll(`${dts}/`, '')
      // A finding's place in the emitted declarations moves with any edit of the file: keep its file.
      .replace(/^(\/\/ \S+\.d\.ts):\d+:\d+ - /gm, '$1 - ');
    const path = join(reportFolder, `${report}.api.md`);
    const current = await readFile(path, 'utf8').catch(() => undefined);
    if (generated === current) continue;
    changed.push(`functions/kit/api/${report}.api.md`);
    if (values.update) {
      await mkdir(reportFolder, { recursive: true });
      await writeFile(path, generated);
    }
  }
} finally {
  await rm(dts, { recursive: true, force: true });
}
if (changed.length > 0 && !values.update) {
  console.error(
    `The kit's public API differs from ${changed.join(', ')}.\n` +
      'If the change is deliberate, run `npm run update:api` and commit the report with it.',
  );
  process.exitCode = 1;
} else if (values.update)
  console.log(changed.length > 0 ? `written: ${changed.join(', ')}` : 'API reports unchanged');
