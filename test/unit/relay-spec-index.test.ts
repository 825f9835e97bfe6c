// The relay's spec indexes (relay/spec-index.ts) and the kit's mapByIndex: values kept per primary,
// the reverse map a map function asks, previous values replaced (an old reference stops mapping),
// deletion, bad index functions, and the cap on values.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import * as z from 'zod';
import type { WatchEvent } from '../../core/contract/controller.ts';
import { createLogger } from '../../core/log.ts';
import { configmaps, customResource, defineController, mapByIndex } from '../../functions/kit/index.ts';
import { KeyPipeline, planInformers } from '../../relay/pipeline.ts';
import { MAX_INDEX_VALUES, SpecIndexes } from '../../relay/spec-index.ts';

const bundles = customResource({ group: 'test.levelset.dev', version: 'v1', kind: 'Bundle' });
const controller = defineController({
  name: 'bundle',
  primary: bundles,
  spec: z.object({ sources: z.array(z.object({ namespace: z.string(), name: z.string() })) }),
  owns: [configmaps],
  indexes: { sources: ({ spec }) => spec.sources.map((s) => `${s.namespace}/${s.name}`) },
  watches: [{ resource: configmaps, map: mapByIndex('sources') }],
  reconcile: () => ({}),
});
const bundle = (name: string, sources: string[], spec?: unknown): KubernetesObject =>
  ({
    apiVersion: 'test.levelset.dev/v1',
    kind: 'Bundle',
    metadata: { name, namespace: 'ns' },
    spec: spec ?? { sources: sources.map((s) => ({ namespace: s.split('/')[0], name: s.split('/')[1] })) },
  }) as KubernetesObject;
const cm = (namespace: string, name: string): KubernetesObject => ({ metadata: { namespace, name } });
const lines: string[] = [];
const logger = createLogger('relay', { write: (l: string) => void lines.push(l) } as never);

describe('relay spec indexes', () => {
  it('answers which primaries have a value; a changed list replaces the previous values', () => {
    const idx = new SpecIndexes([controller], logger);
    assert.equal(idx.has('bundle'), true);
    assert.equal(idx.update('bundle', bundle('x', ['s/a', 's/b'])), true, 'new values: changed');
    assert.equal(idx.update('bundle', bundle('y', ['s/b'])), true);
    assert.equal(idx.update('bundle', bundle('x', ['s/a', 's/b'])), false, 'same values: unchanged');
    assert.deepEqual(idx.keys('bundle', 'sources', 's/a'), [{ namespace: 'ns', name: 'x' }]);
    assert.deepEqual(
      idx
        .keys('bundle', 'sources', 's/b')
        .map((k) => k.name)
        .sort(),
      ['x', 'y'],
    );
    assert.equal(idx.update('bundle', bundle('x', ['s/c'])), true);
    assert.deepEqual(idx.keys('bundle', 'sources', 's/a'), [], 'the old reference no longer maps');
    assert.deepEqual(idx.keys('bundle', 'sources', 's/c'), [{ namespace: 'ns', name: 'x' }]);
    idx.remove('bundle', { namespace: 'ns', name: 'x' });
    assert.deepEqual(idx.keys('bundle', 'sources', 's/c'), []);
    assert.equal(idx.size, 1, 'only y/s/b is left');
  });

  it('an invalid spec has no values; an unknown index answers nothing', () => {
    const idx = new SpecIndexes([controller], logger);
    idx.update('bundle', bundle('bad', [], { sources: 'not a list' }));
    assert.equal(idx.size, 0);
    assert.deepEqual(idx.keys('bundle', 'other', 's/a'), []);
    assert.equal(new SpecIndexes([{ ...controller, indexes: undefined }], logger).has('bundle'), false);
  });

  it(`keeps at most ${MAX_INDEX_VALUES} values per object, with a warning`, () => {
    const idx = new SpecIndexes([controller], logger);
    const many = Array.from({ length: MAX_INDEX_VALUES + 10 }, (_, i) => `s/c${i}`);
    idx.update('bundle', bundle('big', many));
    assert.equal(idx.size, MAX_INDEX_VALUES);
    assert.match(lines.join(''), /too many index values/);
  });

  it('through the pipeline: a ConfigMap event maps to the bundles listing it, before and after a change', () => {
    const idx = new SpecIndexes([controller], logger);
    const pipeline = new KeyPipeline({
      collapseMs: 0,
      logger,
      primaryKeys: () => [],
      byIndex: (c, index, value) => idx.keys(c, index, value),
      publish: async () => '1',
    });
    const routes = planInformers([controller]).find((p) => p.resource === configmaps)?.routes ?? [];
    assert.equal(routes.length, 2, 'owned and indexed watches share one informer');
    const keys = (o: KubernetesObject) =>
      routes.flatMap((r) => pipeline.keysFor(r, { type: 'MODIFIED', object: o } as WatchEvent));
    idx.update('bundle', bundle('x', ['s/a']));
    assert.deepEqual(keys(cm('s', 'a')), [{ namespace: 'ns', name: 'x' }]);
    assert.deepEqual(keys(cm('s', 'b')), []);
    idx.update('bundle', bundle('x', ['s/b']));
    assert.deepEqual(keys(cm('s', 'a')), []);
    assert.deepEqual(keys(cm('s', 'b')), [{ namespace: 'ns', name: 'x' }]);
  });
});
