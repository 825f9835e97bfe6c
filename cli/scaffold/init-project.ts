/**
 * `levelset init <dir>`: a new Levelset project, as `kubebuilder init` or `pepr init` make one. It
 * depends on the `levelset` package (the version of the running CLI, exact) and holds what a team
 * owns and nothing of Levelset's own code:
 *
 *   package.json          `levelset` dependency; scripts start (levelset dev), test, build
 *                         (levelset build); the `levelset.registry` field (core/project.ts)
 *   controllers/index.ts  the registry: the one list of the project's controllers
 *   controllers/<name>/   one example controller, scaffolded as `levelset new controller` does
 *   test/<name>.test.ts   its test, on `levelset/kit/testing` (a local API server, or TEST_KUBECONFIG)
 *   terraform/main.tf     calls Levelset's Terraform module inside the installed package
 *   tsconfig.json, biome.json, .gitignore, README.md
 *
 * A directory that exists and is not empty is refused, and nothing is written.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { packageRoot } from '../../local/module-path.ts';
import { projectLayout, scaffoldController } from './new-controller.ts';
import { parseFields } from './scaffold-fields.ts';

/** A refusal of `levelset init`: one line, nothing written. */
export class InitError extends Error {
  override readonly name = 'InitError';
}

/** The example controller `init` scaffolds. */
export const EXAMPLE = {
  name: 'greeting',
  group: 'example.com',
  version: 'v1alpha1',
  kind: 'Greeting',
  spec: 'message:string!',
} as const;

/** The registry module of a new project, relative to its root. */
export const REGISTRY = 'controllers/index.ts';

/** Levelset's own package.json (the running CLI's: its version, its pinned tools). */
function levelsetPackage(): {
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  allowScripts?: Record<string, boolean>;
} {
  return JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8'));
}

const registryTs = `/**
 * The registry: the one list of this project's controllers. The relay reads it to know what to
 * watch, the functions to know what to run, \`levelset build\` to know what to grant (package.json's
 * "levelset.registry" names this file). \`levelset new controller\` adds a line.
 */
import type { Controller } from 'levelset/kit';
import { greetingController } from './greeting/index.ts';

export const controllers: readonly Controller[] = [
  greetingController, // Greeting (example.com/v1alpha1)
];
`;

const tsconfig = {
  compilerOptions: {
    target: 'ES2024',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2024'],
    types: ['node'],
    strict: true,
    verbatimModuleSyntax: true,
    erasableSyntaxOnly: true,
    allowImportingTsExtensions: true,
    resolveJsonModule: true,
    skipLibCheck: true,
    noEmit: true,
  },
  include: ['controllers', 'test'],
};

const biome = {
  files: { includes: ['**', '!**/node_modules', '!build', '!deploy', '!**/.terraform'] },
  formatter: { enabled: true, indentStyle: 'space', indentWidth: 2, lineWidth: 110 },
  javascript: { formatter: { quoteStyle: 'single' } },
  linter: { enabled: true, rules: { preset: 'recommended' } },
};

const gitignore = [
  'node_modules/',
  'build/',
  '.levelset/',
  '.terraform/',
  '*.tfstate',
  '*.tfstate.*',
  '',
].join('\n');

const readme = (name: string) => `# ${name}

Kubernetes controllers on [Levelset](node_modules/levelset/README.md): a relay in the cluster publishes
keys to Pub/Sub, Cloud Run functions reconcile them. \`controllers/index.ts\` lists the controllers.

\`\`\`sh
npm install
npm start                             # levelset dev: the local stack running this project's controllers
npm test                              # the controllers' tests, against a local API server (or TEST_KUBECONFIG)
npx levelset new controller widget --group example.com --kind Widget --spec 'size:integer!'
npx levelset build                    # build/functions, build/relay (with its Dockerfile), deploy/ manifests
terraform -chdir=terraform apply      # Levelset's Terraform module with this project's build
\`\`\`

Before \`terraform apply\`: build and push the relay's image from \`build/relay\`
(\`docker build -t REGION-docker.pkg.dev/PROJECT/levelset/relay:TAG build/relay\`) and set
\`terraform/terraform.tfvars\` (project_id, region, cluster_name, cluster_location, relay_image).
`;

const mainTf = `# Levelset's Terraform module, from the installed package (npm install levelset@<new> upgrades it),
# with this project's registry (deploy/registry.gen.json) and functions bundle (build/functions),
# both written by \`levelset build\`.
module "levelset" {
  source = "../node_modules/levelset/terraform"

  registry             = jsondecode(file("\${path.module}/../deploy/registry.gen.json"))
  functions_source_dir = "\${path.module}/../build/functions"

  project_id       = var.project_id
  region           = var.region
  cluster_name     = var.cluster_name
  cluster_location = var.cluster_location
  relay_image      = var.relay_image
}

variable "project_id" {
  type        = string
  description = "The Google Cloud project of the functions and the Pub/Sub topics."
}

variable "region" {
  type        = string
  description = "The region of the functions, e.g. europe-west1."
}

variable "cluster_name" {
  type        = string
  description = "The GKE cluster the relay runs in."
}

variable "cluster_location" {
  type        = string
  description = "The cluster's location (region or zone)."
}

variable "relay_image" {
  type        = string
  description = "The relay's image, built from build/relay and pushed (REGION-docker.pkg.dev/PROJECT/REPO/relay:TAG)."
}
`;

/**
 * `value` as a JSON file the way the project's own formatter (Biome, `npm run lint`) writes it: two
 * spaces, and an array of strings or numbers on one line when it fits in 110 columns.
 */
function jsonFile(value: unknown): string {
  const text = JSON.stringify(value, null, 2).replace(
    /^( *)("[^"\n]*": )?\[\n((?: *(?:"[^"\n]*"|-?[\d.]+),?\n)+) *\]/gm,
    (whole, indent: string, key: string | undefined, items: string) => {
      const list = items
        .trim()
        .split(/,?\n */)
        .join(', ');
      const line = `${indent}${key ?? ''}[${list}]`;
      return line.length <= 110 ? line : whole;
    },
  );
  return `${text}\n`;
}

/**
 * Writes a new project into `dir` (created when missing).
 * @param options.version the \`levelset\` version the project depends on; default the running CLI's
 * @returns the paths written, relative to `dir`, sorted
 * @throws {InitError} when `dir` exists and is not empty (nothing is written)
 */
export async function initProject(dir: string, options: { version?: string } = {}): Promise<string[]> {
  const root = resolve(dir);
  if (existsSync(root) && readdirSync(root).length > 0)
    throw new InitError(`${dir} is not empty: levelset init writes into a new or empty directory only`);
  const own = levelsetPackage();
  const name =
    basename(root)
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-') || 'controllers';
  const pkg = {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    levelset: { registry: REGISTRY },
    scripts: {
      start: 'levelset dev',
      // Stale manifests (deploy/, from the declarations) fail the tests, as in Levelset's own repository.
      test: 'levelset build --check && node --test "test/**/*.test.ts"',
      build: 'levelset build',
      lint: 'biome check .',
    },
    // The libraries the controllers and their tests import themselves, at the versions Levelset uses.
    dependencies: {
      '@kubernetes/client-node': own.dependencies['@kubernetes/client-node'] ?? '*',
      levelset: options.version ?? own.version,
      zod: own.dependencies.zod ?? '*',
    },
    devDependencies: Object.fromEntries(
      ['@biomejs/biome', '@types/node', 'node', 'typescript'].map((d) => [d, own.devDependencies[d] ?? '*']),
    ),
    // The install scripts npm may run (npm's `allowScripts`): Levelset's own list (esbuild's binary,
    // the `node` devDependency's download).
    allowScripts: own.allowScripts ?? {},
  };
  const files: [string, string][] = [
    ['package.json', jsonFile(pkg)],
    [REGISTRY, registryTs],
    ['tsconfig.json', jsonFile(tsconfig)],
    ['biome.json', jsonFile(biome)],
    ['.gitignore', gitignore],
    ['README.md', readme(name)],
    ['terraform/main.tf', mainTf],
  ];
  for (const [path, text] of files) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  const scaffolded = await scaffoldController({
    root,
    layout: projectLayout(root, join(root, REGISTRY)),
    name: EXAMPLE.name,
    group: EXAMPLE.group,
    version: EXAMPLE.version,
    kind: EXAMPLE.kind,
    spec: parseFields(EXAMPLE.spec),
    // The registry imports `levelset`, installed by the user's `npm install`: `levelset build` generates.
    regenerate: false,
  });
  return [...new Set([...files.map(([p]) => p), ...scaffolded])].sort();
}
