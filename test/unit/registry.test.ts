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
