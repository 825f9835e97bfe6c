/**
 * The CRDs of the controllers this repository registers (examples/registry.ts), for the soak's
 * cluster: read from their `crd.yaml` files, as `levelset dev` installs a project's CRDs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import YAML from 'yaml';
import { repoRoot } from '../local/service.ts';

/**
 * The CRD objects of every controller this repository registers: the shipped controllers'
 * `functions/controllers/<name>/crd.yaml` and the examples' `examples/<name>/controllers/<name>/crd.yaml`.
 */
export function registeredCrds(): KubernetesObject[] {
  const files = [
    ...readdirSync(join(repoRoot, 'functions', 'controllers')).map((d) =>
      join(repoRoot, 'functions', 'controllers', d, 'crd.yaml'),
    ),
    ...readdirSync(join(repoRoot, 'examples'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => join(repoRoot, 'examples', d.name, 'controllers', d.name, 'crd.yaml')),
  ];
  return files.flatMap((f) => {
    try {
      return [YAML.parse(readFileSync(f, 'utf8')) as KubernetesObject];
    } catch {
      return []; // a folder without a CRD (secret-replicator)
    }
  });
}
