/**
 * A Levelset project and its registry. A project is the nearest directory, from the current one
 * upwards, whose `package.json` has a `levelset` field naming its registry module:
 *
 *   "levelset": { "registry": "controllers/index.ts" }
 *
 * The registry module exports `controllers`, the one list of the project's controllers (what the
 * relay watches, the functions run, the manifests grant), and may export `webhooks`, its admission
 * webhooks (what the `admission` function serves and `levelset build` registers). `levelset init` writes both; this
 * repository's own `package.json` names `examples/registry.ts`.
 *
 * `LEVELSET_REGISTRY` (an absolute path to the registry module) overrides the search: the local
 * stack sets it for its child processes (functions, relays), which run from Levelset's own folder.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as z from 'zod';
import type { AdmissionPolicy, AdmissionWebhook } from './contract/admission.ts';
import type { Controller } from './contract/controller.ts';

/** The environment variable naming the registry module by absolute path (this file's docstring). */
export const REGISTRY_ENV = 'LEVELSET_REGISTRY';

/** A project that cannot be found or whose registry is not one: the message is one line saying what to do. */
export class ProjectError extends Error {
  override readonly name = 'ProjectError';
}

/** The `levelset` field of a project's `package.json`. */
export const projectField = z.object({
  /** The registry module, relative to the folder of `package.json` (e.g. `controllers/index.ts`). */
  registry: z
    .string()
    .min(1)
    .refine((p) => !isAbsolute(p), 'must be relative to package.json'),
});

/** A found project. */
export interface Project {
  /** The folder holding the project's `package.json` (absolute). */
  root: string;
  /** The registry module (absolute path). */
  registry: string;
  /** The project's `package.json`, as parsed. */
  packageJson: Record<string, unknown>;
}

/**
 * The project containing `from` (default: the current directory): the nearest `package.json` with
 * a `levelset` field, walking up.
 * @throws {ProjectError} when none is found, or the field is malformed
 */
export function findProject(from: string = process.cwd()): Project {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      let pkg: Record<string, unknown>;
      try {
        pkg = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      } catch (err) {
        throw new ProjectError(`${file} is not valid JSON: ${(err as Error).message}`);
      }
      if (pkg.levelset !== undefined) {
        const field = projectField.safeParse(pkg.levelset);
        if (!field.success)
          throw new ProjectError(
            `${file}: "levelset" must be { "registry": "<path of the registry module, relative to package.json>" } (${field.error.issues[0]?.message})`,
          );
        return { root: dir, registry: join(dir, field.data.registry), packageJson: pkg };
      }
    }
    if (dirname(dir) === dir)
      throw new ProjectError(
        `not in a Levelset project: no package.json with a "levelset" field in ${resolve(from)} or above (levelset init <dir> makes one)`,
      );
  }
}

/**
 * Is `project` Levelset's own repository (package name `levelset`, with the kit's sources beside
 * it)? Its manifests and `levelset dev`'s demo are its own (cli/build/generate-manifests.ts, local/start.ts).
 */
export function isLevelsetRepository(project: Pick<Project, 'root' | 'packageJson'>): boolean {
  return (
    project.packageJson.name === 'levelset' && existsSync(join(project.root, 'functions', 'kit', 'index.ts'))
  );
}

/**
 * The registry module's path: `LEVELSET_REGISTRY` when set, else the project's ({@link findProject}).
 * @throws {ProjectError} as {@link findProject}, or when `LEVELSET_REGISTRY` is not absolute
 */
export function registryPath(from?: string, env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env[REGISTRY_ENV];
  if (fromEnv) {
    if (!isAbsolute(fromEnv))
      throw new ProjectError(`${REGISTRY_ENV} must be an absolute path, not "${fromEnv}"`);
    return fromEnv;
  }
  return findProject(from).registry;
}

const resourceType = z.looseObject({
  group: z.string(),
  version: z.string(),
  kind: z.string(),
  plural: z.string(),
});

/** What a registry module must export: `controllers`, a list of controllers, and may: `policies` and `webhooks` (checked by shape). */
export const registryModule = z.looseObject({
  controllers: z.array(
    z.looseObject({
      name: z.string().min(1),
      primary: resourceType,
      watches: z.array(z.looseObject({ resource: resourceType })),
      rbac: z.array(z.unknown()),
      reconcile: z.custom<(...args: unknown[]) => unknown>(
        (f) => typeof f === 'function',
        'must be a function',
      ),
    }),
  ),
  /** Optional: the project's admission policies (the kit's `definePolicy`). */
  policies: z
    .array(
      z.looseObject({
        name: z.string().min(1),
        policy: z.looseObject({ kind: z.literal('ValidatingAdmissionPolicy') }),
        binding: z.looseObject({ kind: z.literal('ValidatingAdmissionPolicyBinding') }),
      }),
    )
    .optional(),
  /** Optional: the project's admission webhooks (the kit's `defineValidatingWebhook`, `defineMutatingWebhook`). */
  webhooks: z
    .array(
      z.looseObject({
        name: z.string().min(1),
        type: z.enum(['validating', 'mutating']),
        rules: z.array(z.unknown()).min(1),
        admit: z.custom<(...args: unknown[]) => unknown>(
          (f) => typeof f === 'function',
          'must be a function',
        ),
      }),
    )
    .optional(),
});

/** A loaded registry. */
export interface Registry {
  /** The registry module's path (absolute). */
  path: string;
  controllers: readonly Controller[];
  /** The admission policies it exports (`policies`, made by the kit's `definePolicy`); `[]` when none. */
  policies: readonly AdmissionPolicy[];
  /** Its admission webhooks (`[]` when the module exports none). */
  webhooks: readonly AdmissionWebhook[];
}

/**
 * Imports the registry module at `path` (default {@link registryPath}) and checks that it exports
 * `controllers: Controller[]`.
 * @throws {ProjectError} when there is no project, the module does not load, or its export is not a list of controllers
 */
export async function loadRegistry(path: string = registryPath()): Promise<Registry> {
  if (!existsSync(path)) throw new ProjectError(`the registry ${path} does not exist`);
  let mod: unknown;
  try {
    mod = await import(pathToFileURL(path).href);
  } catch (err) {
    throw new ProjectError(`the registry ${path} did not load: ${(err as Error).message.split('\n')[0]}`);
  }
  const parsed = registryModule.safeParse(mod);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ProjectError(
      `the registry ${path} must export controllers: Controller[] (and may export webhooks: AdmissionWebhook[]) (${issue?.path.join('.') || 'module'}: ${issue?.message})`,
    );
  }
  const {
    controllers,
    policies = [],
    webhooks = [],
  } = mod as {
    controllers: readonly Controller[];
    policies?: readonly AdmissionPolicy[];
    webhooks?: readonly AdmissionWebhook[];
  };
  return { path, controllers, policies, webhooks };
}
