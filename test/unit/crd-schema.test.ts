// functions/kit/crd-schema.ts: each rule that turns a zod schema into a Kubernetes structural
// schema (a CRD's openAPIV3Schema), one case per rule, and what is listed as not expressed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as z from 'zod';
import { crdSchemaOf, customResourceSchema } from '../../functions/kit/crd-schema.ts';

const field = (schema: z.ZodType) =>
  (crdSchemaOf(z.object({ f: schema })).schema.properties as Record<string, unknown>).f;

describe('crdSchemaOf: the structural schema of a zod schema', () => {
  it('types every node, with bounds, pattern, enum and required', () => {
    assert.deepEqual(
      crdSchemaOf(
        z.object({
          size: z.number().int().min(1).max(10),
          name: z
            .string()
            .min(3)
            .max(20)
            .regex(/^[a-z]+$/),
          tier: z.enum(['gold', 'silver']).optional(),
          tags: z.array(z.string()).max(4).optional(),
        }),
      ).schema,
      {
        type: 'object',
        properties: {
          size: { type: 'integer', minimum: 1, maximum: 10 },
          name: { type: 'string', minLength: 3, maxLength: 20, pattern: '^[a-z]+$' },
          tier: { type: 'string', enum: ['gold', 'silver'] },
          tags: { type: 'array', maxItems: 4, items: { type: 'string' } },
        },
        required: ['size', 'name'],
      },
    );
  });

  it('drops the safe-integer bounds zod gives every .int(); z.int32() is format int32', () => {
    assert.deepEqual(field(z.number().int()), { type: 'integer' });
    assert.deepEqual(field(z.int32().min(0)), { type: 'integer', format: 'int32', minimum: 0 });
  });

  it('exclusive bounds are OpenAPI 3.0 booleans', () => {
    assert.deepEqual(field(z.number().positive()), { type: 'number', minimum: 0, exclusiveMinimum: true });
  });

  it('nullable, not anyOf [T, null]', () => {
    assert.deepEqual(field(z.string().nullable()), { type: 'string', nullable: true });
  });

  it('integer | string is x-kubernetes-int-or-string', () => {
    assert.deepEqual(field(z.union([z.number().int(), z.string()])), { 'x-kubernetes-int-or-string': true });
  });

  it('a union of literals is one enum; a literal is a one-value enum', () => {
    assert.deepEqual(field(z.union([z.literal('a'), z.literal('b')])), { type: 'string', enum: ['a', 'b'] });
    assert.deepEqual(field(z.literal('only')), { type: 'string', enum: ['only'] });
  });

  it('a union of other shapes preserves unknown fields and is listed', () => {
    const r = crdSchemaOf(
      z.object({ f: z.union([z.object({ a: z.string() }), z.object({ b: z.number() })]) }),
    );
    assert.deepEqual((r.schema.properties as Record<string, unknown>).f, {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    });
    assert.deepEqual(r.notExpressed, ['.f: one of 2 shapes (a union)']);
  });

  it('an open value or a loose object preserves unknown fields; additionalProperties never beside properties', () => {
    assert.deepEqual(field(z.unknown()), { 'x-kubernetes-preserve-unknown-fields': true });
    assert.deepEqual(field(z.looseObject({ a: z.string() })), {
      type: 'object',
      properties: { a: { type: 'string' } },
      required: ['a'],
      'x-kubernetes-preserve-unknown-fields': true,
    });
    assert.deepEqual(field(z.record(z.string(), z.unknown())), {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    });
  });

  it('a map is additionalProperties alone; a strict object has no additionalProperties: false', () => {
    assert.deepEqual(field(z.record(z.string(), z.number().int().min(0))), {
      type: 'object',
      additionalProperties: { type: 'integer', minimum: 0 },
    });
    assert.deepEqual(field(z.strictObject({ a: z.string() })), {
      type: 'object',
      properties: { a: { type: 'string' } },
      required: ['a'],
    });
  });

  it('inlines shared schemas (no $ref/$defs); a recursive schema throws', () => {
    const name = z.string().max(5).meta({ id: 'Name' });
    const r = crdSchemaOf(z.object({ a: name, b: z.array(name) }));
    assert.doesNotMatch(JSON.stringify(r.schema), /\$ref|\$defs/);
    assert.deepEqual((r.schema.properties as Record<string, unknown>).b, {
      type: 'array',
      items: { type: 'string', maxLength: 5 },
    });
    const node: z.ZodType = z.lazy(() => z.object({ children: z.array(node) }));
    assert.throws(() => crdSchemaOf(z.object({ tree: node })), /recursive schema has no CRD form/);
  });

  it('keeps only formats kube-apiserver knows; a pattern must be RE2', () => {
    assert.equal((field(z.string().meta({ format: 'date-time' })) as { format: string }).format, 'date-time');
    const r = crdSchemaOf(z.object({ f: z.string().meta({ format: 'semver' }) }));
    assert.deepEqual((r.schema.properties as Record<string, unknown>).f, { type: 'string' });
    assert.deepEqual(r.notExpressed, ['.f: format semver']);
    assert.throws(
      () => crdSchemaOf(z.object({ f: z.string().regex(/^(?!goog)/) })),
      /\.f: pattern .* not an RE2/,
    );
  });

  it('uniqueItems (forbidden in a CRD) is dropped and listed', () => {
    const r = crdSchemaOf(z.object({ f: z.array(z.string()).meta({ uniqueItems: true }) }));
    assert.deepEqual((r.schema.properties as Record<string, unknown>).f, {
      type: 'array',
      items: { type: 'string' },
    });
    assert.deepEqual(r.notExpressed, ['.f: items must be unique']);
  });

  it('a default is kept where the field is, and the field is optional (the input a user writes)', () => {
    const r = crdSchemaOf(z.object({ n: z.number().int().default(3) }));
    assert.deepEqual(r.schema, { type: 'object', properties: { n: { type: 'integer', default: 3 } } });
  });

  it('descriptions and x-kubernetes-* metadata pass through; other keywords do not', () => {
    assert.deepEqual(
      field(
        z
          .array(z.object({ type: z.string() }))
          .describe('Listed by type.')
          .meta({
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-list-map-keys': ['type'],
            title: 'T',
            examples: [],
          }),
      ),
      {
        description: 'Listed by type.',
        type: 'array',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
        items: { type: 'object', properties: { type: { type: 'string' } }, required: ['type'] },
      },
    );
  });

  it('lists refinements, map key rules and transforms at every path they apply to', () => {
    const id = z.string().refine((s) => !s.startsWith('goog'), 'must not start with "goog"');
    const r = crdSchemaOf(
      z
        .object({
          a: id,
          b: z.array(id).optional(),
          labels: z.record(z.string().regex(/^[a-z]+$/), z.string()).optional(),
          n: z.string().transform((s) => s.length),
          min: z.number(),
          max: z.number(),
        })
        .refine((o) => o.min <= o.max, { message: 'min must not exceed max', path: ['min'] }),
      '.spec',
    );
    assert.deepEqual(r.notExpressed.toSorted(), [
      '.spec.a: must not start with "goog"',
      '.spec.b[*]: must not start with "goog"',
      '.spec.labels: keys must match ^[a-z]+$',
      '.spec.n: transformed by the schema',
      '.spec: min must not exceed max (at min)',
    ]);
    assert.doesNotMatch(JSON.stringify(r.schema), /x-levelset/);
  });
});

describe('customResourceSchema: a CRD version’s whole openAPIV3Schema', () => {
  it('has apiVersion, kind, metadata, spec and status with the kit’s observedGeneration and conditions', () => {
    const { schema } = customResourceSchema({
      description: 'A widget.',
      spec: z.object({ size: z.number().int() }),
      status: z.object({ ready: z.number().int().optional() }),
    });
    const props = schema.properties as Record<string, { properties?: Record<string, unknown> }>;
    assert.equal(schema.description, 'A widget.');
    assert.deepEqual(Object.keys(props), ['apiVersion', 'kind', 'metadata', 'spec', 'status']);
    assert.deepEqual(Object.keys(props.status?.properties ?? {}), [
      'ready',
      'observedGeneration',
      'conditions',
    ]);
    assert.deepEqual(props.status?.properties?.observedGeneration, {
      description: 'The metadata.generation this status was computed from.',
      type: 'integer',
      format: 'int64',
      minimum: 0,
    });
    const conditions = props.status?.properties?.conditions as Record<string, unknown>;
    assert.equal(conditions['x-kubernetes-list-type'], 'map');
    assert.deepEqual(
      (conditions.items as { properties: Record<string, unknown> }).properties.lastTransitionTime,
      { type: 'string', format: 'date-time' },
    );
  });
});
