/**
 * A CRD's `x-kubernetes-validations` (CEL rules) and list types enforced on writes, as kube-apiserver's
 * apiextensions-apiserver does: create, update and patch with `oldSelf` (transition rules only where an
 * old value exists), the status subresource, ratcheting (an unchanged value stored before a rule does
 * not block a write), `set`/`map` duplicates, and server-side apply merging a set. Runs against the
 * local server, or unchanged against a real cluster with TEST_KUBECONFIG.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ApiextensionsV1Api, type KubeConfig } from '@kubernetes/client-node';
import { startTestCluster, type TestCluster, uniqueSuffix } from './cluster.ts';
import { raw } from './helpers.ts';
import { waitFor } from './wait.ts';

// biome-ignore lint/suspicious/noExplicitAny: wire JSON under test
type Obj = Record<string, any>;

const MERGE = { 'Content-Type': 'application/merge-patch+json' };
const APPLY = { 'Content-Type': 'application/apply-patch+yaml' };
const GROUP = `c${uniqueSuffix()}.cel.levelset.dev`;
const CRD_NAME = `scoops.${GROUP}`;

/** The Scoop CRD's schema; `rules` false: the same schema without any rule (an older version of it). */
function schema(rules: boolean): Obj {
  const v = (list: Obj[]) => (rules ? { 'x-kubernetes-validations': list } : {});
  return {
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        ...v([{ rule: 'self.minScoops <= self.maxScoops', message: 'minScoops must not exceed maxScoops' }]),
        properties: {
          minScoops: { type: 'integer' },
          maxScoops: { type: 'integer' },
          cone: {
            type: 'string',
            ...v([{ rule: 'self == oldSelf', message: 'cone is immutable' }]),
          },
          size: {
            type: 'integer',
            ...v([
              {
                rule: 'self >= oldSelf',
                // No string(oldSelf) concatenated: kube-apiserver's cost estimate of a string built
                // from a number is unbounded, and it refuses the CRD.
                messageExpression:
                  "oldSelf >= 2 ? 'size may only grow, from 2 or more' : 'size may only grow'",
              },
            ]),
          },
          flavors: {
            type: 'array',
            items: { type: 'string' },
            ...(rules ? { 'x-kubernetes-list-type': 'set' } : {}),
          },
          toppings: {
            type: 'array',
            items: {
              type: 'object',
              required: ['name'],
              properties: { name: { type: 'string' }, grams: { type: 'integer' } },
            },
            ...(rules ? { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] } : {}),
          },
          shop: {
            type: 'string',
            maxLength: 63, // a rule's estimated cost grows with the longest string it may see
            ...v([
              {
                rule: "self.matches('^[a-z]+$')",
                fieldPath: '',
                reason: 'FieldValueForbidden',
                message: 'lowercase letters only',
              },
            ]),
          },
        },
      },
      status: {
        type: 'object',
        properties: {
          served: { type: 'integer', ...v([{ rule: 'self >= 0', message: 'served is never negative' }]) },
        },
      },
    },
  };
}

function crd(rules: boolean): Obj {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: CRD_NAME },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural: 'scoops', singular: 'scoop', kind: 'Scoop' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: schema(rules) },
        },
      ],
    },
  };
}

let cluster: TestCluster;
let kc: KubeConfig;
let ext: ApiextensionsV1Api;
let ns: string;
let scoops: string;
/**
 * kube-apiserver's words for the value of a failed rule: its schema type before v1.35 (`Invalid value:
 * "object": …`, the local server's v1.32), since then a scalar's value and nothing for an object or a
 * list (kubernetes PRs 132798 and 133832).
 */
let typeWords = true;
const invalid = (type: string, value?: string) =>
  `Invalid value: ${typeWords ? `"${type}": ` : value !== undefined ? `${value}: ` : ''}`;

const scoop = (name: string, spec: Obj): Obj => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'Scoop',
  metadata: { name },
  spec,
});

/** The 422 of a refused write: its message and causes (`reason field: message`). */
function refused(res: { status: number; json: Obj; text: string }): { message: string; causes: string[] } {
  assert.equal(res.status, 422, res.text);
  assert.equal(res.json.reason, 'Invalid');
  return {
    message: res.json.message,
    causes: (res.json.details?.causes ?? []).map((c: Obj) => `${c.reason} ${c.field}: ${c.message}`),
  };
}

async function served(): Promise<void> {
  await waitFor(
    async () => {
      const c = await ext.readCustomResourceDefinition({ name: CRD_NAME });
      return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True') ?? false;
    },
    { message: 'Scoop CRD Established' },
  );
  await waitFor(async () => (await raw(kc, 'GET', scoops)).status === 200, { message: 'scoops served' });
}

/** Replaces the CRD's schema (with or without the rules) and waits until a write sees it. */
async function setRules(rules: boolean): Promise<void> {
  const current = await ext.readCustomResourceDefinition({ name: CRD_NAME });
  const body = crd(rules);
  body.metadata.resourceVersion = current.metadata?.resourceVersion;
  const res = await raw(
    kc,
    'PUT',
    `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`,
    body,
  );
  assert.equal(res.status, 200, res.text);
  // A probe that only the rules refuse: the schema is in force once its answer says so.
  await waitFor(
    async () => {
      const probe = await raw(
        kc,
        'POST',
        `${scoops}?dryRun=All`,
        scoop('probe', { minScoops: 2, maxScoops: 1 }),
      );
      return rules ? probe.status === 422 : probe.status === 201;
    },
    { message: `the CRD's rules ${rules ? 'in' : 'out of'} force` },
  );
}

before(async () => {
  cluster = await startTestCluster();
  kc = cluster.kubeConfig;
  typeWords = Number.parseInt((await raw(kc, 'GET', '/version')).json.minor, 10) < 35;
  ext = kc.makeApiClient(ApiextensionsV1Api);
  ns = await cluster.createNamespace('cel');
  scoops = `/apis/${GROUP}/v1/namespaces/${ns}/scoops`;
  const res = await raw(kc, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd(true));
  assert.equal(res.status, 201, res.text);
  await served();
});

after(async () => {
  await ext.deleteCustomResourceDefinition({ name: CRD_NAME }).catch(() => undefined);
  await cluster?.stop();
});

describe('x-kubernetes-validations on writes', () => {
  test('create: a false rule is 422 Invalid, FieldValueInvalid at the rule’s node, with its message', async () => {
    const r = refused(await raw(kc, 'POST', scoops, scoop('a', { minScoops: 3, maxScoops: 1 })));
    assert.equal(
      r.message,
      `Scoop.${GROUP} "a" is invalid: spec: ${invalid('object')}minScoops must not exceed maxScoops`,
    );
    assert.deepEqual(r.causes, [
      `FieldValueInvalid spec: ${invalid('object')}minScoops must not exceed maxScoops`,
    ]);
    const ok = await raw(
      kc,
      'POST',
      scoops,
      scoop('a', { minScoops: 1, maxScoops: 3, cone: 'waffle', size: 2 }),
    );
    assert.equal(ok.status, 201, ok.text);
  });

  test('a rule’s reason picks the cause (FieldValueForbidden); RE2 matches()', async () => {
    const r = refused(
      await raw(kc, 'POST', scoops, scoop('b', { minScoops: 1, maxScoops: 1, shop: 'Shop1' })),
    );
    assert.deepEqual(r.causes, ['FieldValueForbidden spec.shop: Forbidden: lowercase letters only']);
  });

  test('update and patch: transition rules see oldSelf (immutable, may only grow, messageExpression)', async () => {
    const r = refused(await raw(kc, 'PATCH', `${scoops}/a`, { spec: { cone: 'cup', size: 1 } }, MERGE));
    assert.deepEqual(r.causes.toSorted(), [
      `FieldValueInvalid spec.cone: ${invalid('string', '"cup"')}cone is immutable`,
      `FieldValueInvalid spec.size: ${invalid('integer', '1')}size may only grow, from 2 or more`,
    ]);
    const current = (await raw(kc, 'GET', `${scoops}/a`)).json;
    const put = await raw(kc, 'PUT', `${scoops}/a`, { ...current, spec: { ...current.spec, cone: 'cup' } });
    assert.deepEqual(refused(put).causes, [
      `FieldValueInvalid spec.cone: ${invalid('string', '"cup"')}cone is immutable`,
    ]);
    const grow = await raw(kc, 'PATCH', `${scoops}/a`, { spec: { size: 5 } }, MERGE);
    assert.equal(grow.status, 200, grow.text);
    // A field absent from the old object has no oldSelf: setting it is allowed.
    const fresh = await raw(kc, 'POST', scoops, scoop('c', { minScoops: 1, maxScoops: 1 }));
    assert.equal(fresh.status, 201, fresh.text);
    const set = await raw(kc, 'PATCH', `${scoops}/c`, { spec: { cone: 'cup' } }, MERGE);
    assert.equal(set.status, 200, set.text);
  });

  test('the status subresource: status rules are checked there', async () => {
    const r = refused(await raw(kc, 'PATCH', `${scoops}/a/status`, { status: { served: -1 } }, MERGE));
    assert.deepEqual(r.causes, [
      `FieldValueInvalid status.served: ${invalid('integer', '-1')}served is never negative`,
    ]);
    const ok = await raw(kc, 'PATCH', `${scoops}/a/status`, { status: { served: 4 } }, MERGE);
    assert.equal(ok.status, 200, ok.text);
  });
});

describe('list types', () => {
  test('set refuses a duplicate item, map a duplicate key: FieldValueDuplicate at the item', async () => {
    const r = refused(
      await raw(
        kc,
        'POST',
        scoops,
        scoop('d', {
          minScoops: 1,
          maxScoops: 1,
          flavors: ['mint', 'vanilla', 'mint'],
          toppings: [
            { name: 'nuts', grams: 5 },
            { name: 'nuts', grams: 10 },
          ],
        }),
      ),
    );
    // An object key printed with Go's %#v before v1.35 (the local server's v1.32), as JSON since.
    assert.deepEqual(r.causes.toSorted(), [
      'FieldValueDuplicate spec.flavors[2]: Duplicate value: "mint"',
      `FieldValueDuplicate spec.toppings[1]: Duplicate value: ${typeWords ? 'map[string]interface {}' : ''}{"name":"nuts"}`,
    ]);
  });

  test('server-side apply merges a set by value and a map list by key, across managers', async () => {
    const apply = (manager: string, spec: Obj) =>
      raw(kc, 'PATCH', `${scoops}/e?fieldManager=${manager}`, JSON.stringify(scoop('e', spec)), APPLY);
    const first = await apply('one', {
      minScoops: 1,
      maxScoops: 2,
      flavors: ['mint'],
      toppings: [{ name: 'nuts', grams: 5 }],
    });
    assert.equal(first.status, 201, first.text);
    const second = await apply('two', { flavors: ['vanilla'], toppings: [{ name: 'sprinkles', grams: 1 }] });
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(second.json.spec.flavors.toSorted(), ['mint', 'vanilla']);
    assert.deepEqual(second.json.spec.toppings.map((t: Obj) => t.name).toSorted(), ['nuts', 'sprinkles']);
  });
});

describe('an object stored before its rules', () => {
  test('is kept; a write leaving the invalid value unchanged passes (ratcheting), one changing it is refused', async () => {
    await setRules(false);
    const old = await raw(
      kc,
      'POST',
      scoops,
      scoop('f', { minScoops: 5, maxScoops: 1, flavors: ['a', 'a'] }),
    );
    assert.equal(old.status, 201, old.text);
    await setRules(true);
    const status = await raw(kc, 'PATCH', `${scoops}/f/status`, { status: { served: 1 } }, MERGE);
    assert.equal(status.status, 200, status.text);
    const label = await raw(kc, 'PATCH', `${scoops}/f`, { metadata: { labels: { a: 'b' } } }, MERGE);
    assert.equal(label.status, 200, label.text);
    // A whole PUT with the same spec, its fields in another order: unchanged, so still ratcheted.
    const live = (await raw(kc, 'GET', `${scoops}/f`)).json;
    const reordered = Object.fromEntries(Object.entries(live.spec).reverse());
    const put = await raw(kc, 'PUT', `${scoops}/f`, { ...live, spec: reordered });
    assert.equal(put.status, 200, put.text);
    const changed = await raw(kc, 'PATCH', `${scoops}/f`, { spec: { minScoops: 4 } }, MERGE);
    assert.deepEqual(refused(changed).causes, [
      `FieldValueInvalid spec: ${invalid('object')}minScoops must not exceed maxScoops`,
    ]);
  });
});

describe('a CRD whose rules or list types the API server cannot take', () => {
  test('is refused with 422: a map list key neither required nor defaulted, map keys without map, an empty rule (and its rules left uncompiled)', async () => {
    const group = `bad${uniqueSuffix()}.cel.levelset.dev`;
    const at = 'spec.validation.openAPIV3Schema.properties[spec]'; // one version: its schema is hoisted there
    const res = await raw(kc, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `bads.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'bads', singular: 'bad', kind: 'Bad' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: {
                    type: 'object',
                    'x-kubernetes-validations': [{ rule: ' ' }, { rule: 'self.a <=' }],
                    properties: {
                      ports: {
                        type: 'array',
                        'x-kubernetes-list-type': 'map',
                        'x-kubernetes-list-map-keys': ['name'],
                        items: { type: 'object', properties: { name: { type: 'string' } } },
                      },
                      tags: {
                        type: 'array',
                        'x-kubernetes-list-map-keys': ['name'],
                        items: {
                          type: 'string',
                          maxLength: 10,
                          'x-kubernetes-validations': [{ rule: 'self == oldSelf' }],
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        ],
      },
    });
    assert.equal(res.status, 422, res.text);
    const fields = (res.json.details?.causes ?? []).map((c: Obj) => `${c.reason} ${c.field}`);
    for (const want of [
      `FieldValueRequired ${at}.x-kubernetes-validations[0].rule`,
      `FieldValueRequired ${at}.properties[ports].items.properties[name].default`,
      `FieldValueRequired ${at}.properties[tags].x-kubernetes-list-type`,
    ])
      assert.ok(fields.includes(want), `${want} in ${fields.join(', ')}`);
    const causes = (res.json.details?.causes ?? []).map((c: Obj) => c.message).join('\n');
    assert.match(causes, /must have a default or be a required property/);
    assert.match(causes, /must be map if x-kubernetes-list-map-keys is non-empty/);
    // Rules are compiled only where the schema at and below them is valid: not spec's, nor tags'.
    assert.ok(
      !fields.includes(`FieldValueInvalid ${at}.x-kubernetes-validations[1].rule`),
      fields.join(', '),
    );
  });

  test('is refused with 422 for a rule that does not compile, and for oldSelf in the items of an atomic list', async () => {
    const group = `worse${uniqueSuffix()}.cel.levelset.dev`;
    const at = 'spec.validation.openAPIV3Schema.properties[spec]'; // one version: its schema is hoisted there
    const res = await raw(kc, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `worses.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'worses', singular: 'worse', kind: 'Worse' },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: {
                    type: 'object',
                    'x-kubernetes-validations': [{ rule: 'self.a <=' }],
                    properties: {
                      a: { type: 'integer' },
                      tags: {
                        type: 'array',
                        maxItems: 10,
                        items: {
                          type: 'string',
                          maxLength: 10,
                          'x-kubernetes-validations': [{ rule: 'self == oldSelf' }],
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        ],
      },
    });
    assert.equal(res.status, 422, res.text);
    const fields = (res.json.details?.causes ?? []).map((c: Obj) => `${c.reason} ${c.field}`);
    assert.ok(fields.includes(`FieldValueInvalid ${at}.x-kubernetes-validations[0].rule`), fields.join(', '));
    assert.ok(
      fields.includes(`FieldValueInvalid ${at}.properties[tags].items.x-kubernetes-validations[0].rule`),
      fields.join(', '),
    );
    const causes = (res.json.details?.causes ?? []).map((c: Obj) => c.message).join('\n');
    assert.match(causes, /oldSelf cannot be used on the uncorrelatable portion of the schema within/);
    // cel-go words a parse error its own way (ERROR: <input>:1:9: Syntax error: …); the local server
    // gives @bufbuild/cel's.
    assert.match(causes, /compilation failed: /);
  });
});
