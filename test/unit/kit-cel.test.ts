// functions/kit/cel.ts: CEL validation rules and list types declared beside a zod schema, written
// into the CRD's schema and checked by the reconcile (validatePrimary) and by checkRules, the way
// kube-apiserver's apiextensions validation words them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as z from 'zod';
import { celRule, listType, ruleViolations } from '../../functions/kit/cel.ts';
import { crdSchemaOf } from '../../functions/kit/crd-schema.ts';
import { validatePrimary } from '../../functions/kit/steps.ts';
import { checkRules } from '../../functions/kit/testing.ts';

const range = celRule(z.object({ min: z.number().int(), max: z.number().int() }), {
  rule: 'self.min <= self.max',
  message: 'min must not exceed max',
});
const spec = z.object({
  name: celRule(z.string(), { rule: 'self == oldSelf', message: 'name is immutable' }),
  size: celRule(z.number().int(), { rule: 'self >= oldSelf', message: 'size may only grow' }).optional(),
  range: range.optional(),
  flavors: listType(z.array(z.string()), 'set').optional(),
  ports: listType(z.array(z.object({ name: z.string(), port: z.number().int() })), 'map', [
    'name',
  ]).optional(),
});

describe('celRule and listType: written into the CRD schema', () => {
  it('puts x-kubernetes-validations and list types at the node they are declared on, in any wrapper', () => {
    const { schema, notExpressed } = crdSchemaOf(spec, '.spec');
    const props = schema.properties as Record<string, Record<string, unknown>>;
    assert.deepEqual(props.name?.['x-kubernetes-validations'], [
      { rule: 'self == oldSelf', message: 'name is immutable' },
    ]);
    assert.deepEqual(props.range?.['x-kubernetes-validations'], [
      { rule: 'self.min <= self.max', message: 'min must not exceed max' },
    ]);
    assert.equal(props.flavors?.['x-kubernetes-list-type'], 'set');
    assert.equal(props.ports?.['x-kubernetes-list-type'], 'map');
    assert.deepEqual(props.ports?.['x-kubernetes-list-map-keys'], ['name']);
    assert.deepEqual(notExpressed, []);
  });

  it('adds rules up, with messageExpression, fieldPath and reason kept as written', () => {
    const twice = celRule(celRule(z.string(), { rule: "self != ''" }), {
      rule: 'self.size() < 10',
      messageExpression: "'too long: ' + string(self.size())",
      fieldPath: '.x',
      reason: 'FieldValueForbidden',
    });
    const node = (crdSchemaOf(z.object({ s: twice })).schema.properties as Record<string, JSONNode>).s;
    assert.deepEqual(node?.['x-kubernetes-validations'], [
      { rule: "self != ''" },
      {
        rule: 'self.size() < 10',
        messageExpression: "'too long: ' + string(self.size())",
        fieldPath: '.x',
        reason: 'FieldValueForbidden',
      },
    ]);
  });

  it('refuses a rule that does not parse where it is written, and optional syntax the evaluator lacks', () => {
    assert.throws(() => celRule(z.string(), { rule: 'self <=' }), /celRule: self <=: .*found/);
    assert.throws(() => celRule(z.object({}), { rule: "self.?a.orValue('') == ''" }), /celRule/);
    assert.throws(() => celRule(z.string(), { rule: 'true', message: 'a\nb' }), /no line breaks/);
    assert.throws(() => listType(z.array(z.string()) as z.ZodArray, 'map', []), /needs keys/);
    assert.throws(() => listType(z.array(z.string()) as z.ZodArray, 'map', ['name']), /holds objects/);
    const item = z.object({ name: z.string().optional(), port: z.number().int().default(80) });
    assert.throws(() => listType(z.array(item), 'map', ['name']), /name must be required or have a default/);
    assert.throws(() => listType(z.array(item), 'map', ['host']), /host is not a field/);
    assert.doesNotThrow(() => listType(z.array(item), 'map', ['port']));
  });
});

type JSONNode = Record<string, unknown>;

describe('ruleViolations: apiextensions-apiserver’s CEL validation, on a value and its old value', () => {
  const structural = crdSchemaOf(spec, '.spec').schema;

  it('a false rule is field.Invalid(path, <schema type>, message); valid values pass', () => {
    assert.deepEqual(
      ruleViolations(structural, { name: 'a', range: { min: 1, max: 2 } }, undefined, 'spec'),
      [],
    );
    assert.deepEqual(
      ruleViolations(structural, { name: 'a', range: { min: 3, max: 2 } }, undefined, 'spec'),
      [
        {
          reason: 'FieldValueInvalid',
          field: 'spec.range',
          detail: 'Invalid value: "object": min must not exceed max',
          message: 'min must not exceed max',
        },
      ],
    );
  });

  it('runs transition rules only where an old value exists (self == oldSelf, self >= oldSelf)', () => {
    const next = { name: 'b', size: 1 };
    assert.deepEqual(ruleViolations(structural, next, undefined, 'spec'), []);
    assert.deepEqual(
      ruleViolations(structural, next, { name: 'a', size: 2 }, 'spec').map((v) => `${v.field}: ${v.detail}`),
      [
        'spec.name: Invalid value: "string": name is immutable',
        'spec.size: Invalid value: "integer": size may only grow',
      ],
    );
    // A field absent before has no old value: its transition rules do not run.
    assert.deepEqual(ruleViolations(structural, next, { name: 'b' }, 'spec'), []);
  });

  it('a set refuses a duplicate item, a map list a duplicate key (field.Duplicate at the item)', () => {
    const v = ruleViolations(
      structural,
      {
        name: 'a',
        flavors: ['vanilla', 'mint', 'vanilla'],
        ports: [
          { name: 'http', port: 80 },
          { name: 'http', port: 8080 },
        ],
      },
      undefined,
      'spec',
    );
    assert.deepEqual(
      v.map((x) => [x.reason, x.field, x.detail]),
      [
        ['FieldValueDuplicate', 'spec.flavors[2]', 'Duplicate value: "vanilla"'],
        ['FieldValueDuplicate', 'spec.ports[1]', 'Duplicate value: map[string]interface {}{"name":"http"}'],
      ],
    );
  });

  it('the default message, messageExpression, fieldPath, reason and an evaluation error, worded as kube-apiserver', () => {
    const s = crdSchemaOf(
      z.object({
        a: celRule(z.string(), { rule: "self.startsWith('x')" }),
        b: celRule(z.object({ n: z.number().int() }), {
          rule: 'self.n < 3',
          messageExpression: "'n is ' + string(self.n)",
          fieldPath: '.n',
        }),
        c: celRule(z.string(), { rule: "self != 'no'", message: ' not no ', reason: 'FieldValueForbidden' }),
        d: celRule(z.object({}).loose(), { rule: 'self.missing == 1' }),
      }),
    ).schema;
    assert.deepEqual(
      ruleViolations(s, { a: 'y', b: { n: 5 }, c: 'no', d: {} }, undefined, 'spec').map(
        (v) => `${v.reason} ${v.field}: ${v.detail}`,
      ),
      [
        `FieldValueInvalid spec.a: Invalid value: "string": failed rule: self.startsWith('x')`,
        'FieldValueInvalid spec.b.n: Invalid value: "object": n is 5',
        'FieldValueForbidden spec.c: Forbidden: not no',
        'FieldValueInvalid spec.d: Invalid value: "object": no such key: missing evaluating rule: self.missing == 1',
      ],
    );
  });

  it('integers are CEL ints and numbers doubles; Kubernetes’ list and regex libraries are there; regexes are RE2', () => {
    const s = crdSchemaOf(
      z.object({
        xs: celRule(z.array(z.number().int()), {
          rule: 'self.isSorted() && self.sum() == 6 && self.min() == 1 && self.max() == 3 && self.indexOf(2) == 1',
        }),
        r: celRule(z.number(), { rule: 'self > 0.5 && self < 1' }),
        s: celRule(z.string(), {
          rule: "self.find('[0-9]+') == '12' && self.findAll('[a-z]') == ['a', 'b'] && self.matches('^a12b$')",
        }),
      }),
    ).schema;
    assert.deepEqual(ruleViolations(s, { xs: [1, 2, 3], r: 0.75, s: 'a12b' }, undefined, ''), []);
    assert.equal(ruleViolations(s, { xs: [2, 1, 3], r: 0.75, s: 'a12b' }, undefined, '').length, 1);
    const lookahead = crdSchemaOf(z.object({ s: celRule(z.string(), { rule: "self.matches('(?=a)')" }) }));
    assert.match(
      ruleViolations(lookahead.schema, { s: 'a' }, undefined, '')[0]?.detail ?? '',
      /evaluating rule/,
    );
  });
});

describe('the reconcile checks the same rules (an object stored before a rule existed)', () => {
  it('validatePrimary: Ready=False/InvalidSpec with the rule’s message; transition rules skipped', () => {
    const object = {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'w', namespace: 'ns', uid: 'u' },
      spec: { name: 'a', range: { min: 5, max: 1 } },
    };
    assert.deepEqual(validatePrimary(object, spec, { controller: 'widget', owns: [] }), {
      invalid: 'ns/w: invalid spec: spec.range: Invalid value: "object": min must not exceed max',
    });
  });

  it('checkRules (levelset/kit/testing): a rule checked without a cluster, with an old spec for transitions', () => {
    assert.deepEqual(checkRules(spec, { name: 'a' }), []);
    assert.deepEqual(
      checkRules(spec, { name: 'b', flavors: ['x', 'x'] }, { name: 'a' }).map((v) => v.message),
      ['name is immutable', 'Duplicate value: "x"'],
    );
  });
});
