/**
 * Invariants of the registry, the one list of controllers (docs/architecture.md "Contracts").
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { controllerName } from '../../core/contract/names.ts';
import { controllers } from '../../examples/registry.ts';

const sameResource = (a: { group: string; plural: string }, b: { group: string; plural: string }) =>
  a.group === b.group && a.plural === b.plural;

describe('registry', () => {
  it('lists the shipped controllers and the examples', () => {
    assert.deepEqual(
      controllers.map((c) => c.name),
      [
        'secret-replicator',
        'foo',
        'customcluster',
        'icecream',
        'configmap-bundle',
        'tenant',
        'topic',
        'subscription',
      ],
    );
  });

  it('names every controller uniquely, in kebab-case usable in a key message', () => {
    const names = controllers.map((c) => c.name);
    assert.equal(new Set(names).size, names.length, `duplicate names in ${names.join(', ')}`);
    for (const name of names) assert.ok(controllerName.safeParse(name).success, `${name} is not kebab-case`);
  });

  for (const c of controllers) {
    describe(c.name, () => {
      it('watches its primary resource', () => {
        assert.ok(
          c.watches.some((w) => sameResource(w.resource, c.primary)),
          'the relay must list+watch the primary to enqueue its keys',
        );
      });

      it('declares well-formed resource types', () => {
        for (const r of [c.primary, ...c.watches.map((w) => w.resource)]) {
          assert.match(r.plural, /^[a-z][a-z0-9]*$/, `plural ${r.plural}`);
          assert.match(r.kind, /^[A-Z][A-Za-z0-9]*$/, `kind ${r.kind}`);
          assert.match(r.version, /^v[0-9]+((alpha|beta)[0-9]+)?$/, `version ${r.version}`);
        }
      });

      it('may read and list its primary (RBAC)', () => {
        const rules = c.rbac.filter(
          (r) => r.apiGroups.includes(c.primary.group) && r.resources.includes(c.primary.plural),
        );
        const verbs = new Set(rules.flatMap((r) => r.verbs));
        for (const verb of ['get', 'list'] as const)
          assert.ok(verbs.has(verb), `missing ${verb} on ${c.primary.plural}`);
      });
    });
  }
});

describe('registry webhooks', () => {
  it('loads the webhooks a registry exports, and [] from one that exports none', async () => {
    const { loadRegistry } = await import('../../core/project.ts');
    const repository = await loadRegistry(new URL('../../examples/registry.ts', import.meta.url).pathname);
    assert.deepEqual(
      repository.webhooks.map((w) => `${w.type}:${w.name}`),
      ['mutating:foo-defaults', 'validating:foo-scale'],
    );
    const icecream = await loadRegistry(
      new URL('../../examples/icecream/controllers/index.ts', import.meta.url).pathname,
    );
    assert.deepEqual(icecream.webhooks, []);
  });

  it('names every webhook uniquely, as a DNS-1123 label (its path and its configuration name)', async () => {
    const { webhooks } = await import('../../examples/registry.ts');
    const names = webhooks.map((w) => w.name);
    assert.equal(new Set(names).size, names.length);
    for (const n of names) assert.match(n, /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
  });

  it('refuses a webhooks export that is not a list of webhooks, in one line', async () => {
    const { loadRegistry, ProjectError } = await import('../../core/project.ts');
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'levelset-registry-'));
    try {
      const path = join(dir, 'index.ts');
      writeFileSync(path, "export const controllers = [];\nexport const webhooks = [{ name: 'x' }];\n");
      await assert.rejects(loadRegistry(path), (err: Error) => {
        assert.ok(err instanceof ProjectError);
        assert.match(err.message, /may export webhooks: AdmissionWebhook\[\]\) \(webhooks\.0\.type/);
        return true;
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
