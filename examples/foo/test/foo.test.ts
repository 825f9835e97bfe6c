// The foo controller's pure parts: its CRD against upstream sample-controller's, the spec schema,
// the Deployment it asks for, its status, and how watch events map to keys.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import { FIELD_MANAGER, type WatchEvent } from 'levelset/kit';
import { keysFor } from 'levelset/kit/testing';
import { parse } from 'yaml';
import { type Foo, fooResource, fooSpecSchema, messageResourceExists } from '../controllers/foo/api.ts';
import { newDeployment, readyFromDeployment } from '../controllers/foo/desired.ts';
import { fooController } from '../controllers/foo/index.ts';

/** The project's root (this file is in `test/`). */
const root = new URL('../', import.meta.url);
const readYaml = (path: string) => parse(readFileSync(new URL(path, root), 'utf8'));

// biome-ignore lint/suspicious/noExplicitAny: CRD documents are walked as plain JSON.
type Json = any;
const ours: Json = readYaml('controllers/foo/crd.yaml');
const upstream: Json = readYaml('test/fixtures/upstream/sample-controller-crd.yaml');
const example: Json = readYaml('test/fixtures/upstream/sample-controller-example-foo.yaml');

const foo = (
  over: Partial<Foo['metadata']> = {},
  spec: unknown = { deploymentName: 'example-foo', replicas: 1 },
): Foo => ({
  apiVersion: 'samplecontroller.k8s.io/v1alpha1',
  kind: 'Foo',
  metadata: { name: 'example-foo', namespace: 'team-a', uid: 'uid-foo', generation: 3, ...over },
  spec,
});

/** Every object schema node that has properties must say `type: object` (a structural schema). */
function assertStructural(node: Json, path: string): void {
  if (node.properties) {
    assert.equal(node.type, 'object', `${path} needs type: object`);
    for (const [k, v] of Object.entries(node.properties)) assertStructural(v, `${path}.${k}`);
  } else {
    assert.ok(node.type, `${path} needs a type`);
  }
  if (node.items) assertStructural(node.items, `${path}[]`);
}

describe('foo CRD', () => {
  const version = ours.spec.versions[0];
  const schema = version.schema.openAPIV3Schema;
  const upstreamVersion = upstream.spec.versions[0];

  it('serves what upstream sample-controller serves: group, version, kind, plural, scope', () => {
    assert.equal(ours.apiVersion, 'apiextensions.k8s.io/v1');
    assert.equal(ours.metadata.name, upstream.metadata.name);
    assert.equal(ours.spec.group, upstream.spec.group);
    assert.equal(ours.spec.names.kind, upstream.spec.names.kind);
    assert.equal(ours.spec.names.plural, upstream.spec.names.plural);
    assert.equal(ours.spec.scope, upstream.spec.scope);
    assert.equal(version.name, upstreamVersion.name);
    assert.ok(version.served && version.storage);
    assert.deepEqual(
      {
        group: ours.spec.group,
        version: version.name,
        plural: ours.spec.names.plural,
        kind: ours.spec.names.kind,
      },
      {
        group: fooResource.group,
        version: fooResource.version,
        plural: fooResource.plural,
        kind: fooResource.kind,
      },
    );
  });

  it('carries the api-approved annotation a *.k8s.io group needs on a real API server', () => {
    assert.match(ours.metadata.annotations['api-approved.kubernetes.io'], /^unapproved/);
  });

  it('declares every upstream field with the same type and bounds', () => {
    for (const part of ['spec', 'status'] as const) {
      const theirs = upstreamVersion.schema.openAPIV3Schema.properties[part].properties;
      for (const [field, def] of Object.entries<Json>(theirs)) {
        const mine = schema.properties[part].properties[field];
        assert.ok(mine, `${part}.${field} declared`);
        assert.equal(mine.type, def.type, `${part}.${field} type`);
        if (def.minimum !== undefined) assert.equal(mine.minimum, def.minimum, `${part}.${field} minimum`);
        if (def.maximum !== undefined) assert.equal(mine.maximum, def.maximum, `${part}.${field} maximum`);
      }
    }
    assert.equal(schema.properties.spec.required, undefined, 'deploymentName stays optional, as upstream');
  });

  it('has a full structural schema, the status subresource and printer columns', () => {
    assertStructural(schema, 'openAPIV3Schema');
    assert.deepEqual(version.subresources, { status: {} });
    const columns = version.additionalPrinterColumns.map((c: Json) => c.jsonPath);
    for (const path of ['.spec.deploymentName', '.spec.replicas', '.status.availableReplicas']) {
      assert.ok(columns.includes(path), `printer column ${path}`);
    }
    assert.deepEqual(schema.properties.status.properties.conditions['x-kubernetes-list-map-keys'], ['type']);
  });

  it('the upstream example is a Foo the reconcile accepts as it is', () => {
    assert.equal(example.apiVersion, `${ours.spec.group}/${version.name}`);
    assert.equal(example.kind, ours.spec.names.kind);
    assert.deepEqual(fooSpecSchema.parse(example.spec), { deploymentName: 'example-foo', replicas: 1 });
    for (const field of Object.keys(example.spec)) assert.ok(schema.properties.spec.properties[field], field);
  });
});

describe('foo spec validation (defence in depth)', () => {
  it('accepts a missing deploymentName and missing replicas, as upstream FooSpec', () => {
    assert.deepEqual(fooSpecSchema.parse({}), {});
  });

  for (const [label, spec] of [
    ['replicas "x"', { deploymentName: 'a', replicas: 'x' }],
    ['replicas 0', { deploymentName: 'a', replicas: 0 }],
    ['replicas 11', { deploymentName: 'a', replicas: 11 }],
    ['replicas 1.5', { deploymentName: 'a', replicas: 1.5 }],
    ['deploymentName not a DNS-1123 subdomain', { deploymentName: 'Not_A_Name' }],
    ['deploymentName a number', { deploymentName: 7 }],
  ] as const) {
    it(`rejects ${label}`, () => {
      assert.equal(fooSpecSchema.safeParse(spec).success, false);
    });
  }
});

describe('foo desired state', () => {
  it('newDeployment: named deploymentName, nginx, labels app/controller, replicas (the kit adds namespace and controller reference)', () => {
    const d = newDeployment(foo(), { deploymentName: 'example-foo', replicas: 2 });
    assert.equal(d.metadata?.name, 'example-foo');
    const labels = { app: 'nginx', controller: 'example-foo' };
    assert.deepEqual(d.spec?.selector.matchLabels, labels);
    assert.deepEqual(d.spec?.template.metadata?.labels, labels);
    assert.equal(d.spec?.replicas, 2);
    assert.deepEqual(
      d.spec?.template.spec?.containers.map((c) => [c.name, c.image]),
      [['nginx', 'nginx:latest']],
    );
  });

  it('newDeployment leaves replicas to the API server default when the Foo sets none', () => {
    const d = newDeployment(foo(), { deploymentName: 'example-foo' });
    assert.equal(d.spec && 'replicas' in d.spec, false);
  });

  it('Ready follows available replicas (the kit adds observedGeneration)', () => {
    assert.deepEqual(readyFromDeployment(0, 2), {
      status: false,
      reason: 'DeploymentProgressing',
      message: '0 of 2 replicas available',
    });
    assert.equal(readyFromDeployment(2, 2).status, true);
    assert.equal(readyFromDeployment(2, 2).reason, 'DeploymentAvailable');
  });

  it("spells ErrResourceExists's message as upstream, with Go's %q quoting", () => {
    assert.equal(
      messageResourceExists('example-foo'),
      'Resource "example-foo" already exists and is not managed by Foo',
    );
  });
});

describe("foo watches (the keys an event enqueues, as the relay computes them: the kit's keysFor)", () => {
  const event = (object: KubernetesObject, type: WatchEvent['type'] = 'MODIFIED'): WatchEvent => ({
    type,
    object,
  });
  const deployments = { group: 'apps', plural: 'deployments' };
  const controlledBy = (kind: string, apiVersion: string): KubernetesObject => ({
    apiVersion: 'meta.k8s.io/v1',
    kind: 'PartialObjectMetadata',
    metadata: {
      name: 'example-foo',
      namespace: 'team-a',
      ownerReferences: [{ apiVersion, kind, name: 'owner-foo', uid: 'u', controller: true }],
    },
  });

  it('maps a Foo to its own key', () => {
    assert.deepEqual(
      keysFor(fooController, event({ metadata: { name: 'f', namespace: 'team-a' } }), {
        resource: fooResource,
      }),
      [{ namespace: 'team-a', name: 'f' }],
    );
  });

  it('maps a Deployment to the key of its controlling Foo, tombstones included', () => {
    const obj = controlledBy('Foo', 'samplecontroller.k8s.io/v1alpha1');
    assert.deepEqual(keysFor(fooController, event(obj), { resource: deployments }), [
      { namespace: 'team-a', name: 'owner-foo' },
    ]);
    assert.deepEqual(keysFor(fooController, event(obj, 'DELETED'), { resource: deployments }), [
      { namespace: 'team-a', name: 'owner-foo' },
    ]);
  });

  it('drops Deployments controlled by something else, or by nothing', () => {
    for (const obj of [
      controlledBy('ReplicaSet', 'apps/v1'),
      controlledBy('Foo', 'other.example/v1'),
      { metadata: { name: 'd', namespace: 'team-a' } },
    ])
      assert.deepEqual(
        keysFor(fooController, event(obj), { resource: deployments }),
        [],
        JSON.stringify(obj),
      );
  });

  it('asks for what its reconcile does (RBAC)', () => {
    const verbs = (group: string, resource: string) =>
      fooController.rbac
        .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
        .flatMap((r) => r.verbs);
    assert.deepEqual(verbs('samplecontroller.k8s.io', 'foos/status'), ['patch']);
    assert.deepEqual(verbs('apps', 'deployments').sort(), ['create', 'delete', 'get', 'list', 'patch']);
  });
});

describe("the foo controller's Deployment watch: its predicates (keysFor)", () => {
  const owner = {
    apiVersion: 'samplecontroller.k8s.io/v1alpha1',
    kind: 'Foo',
    name: 'web',
    uid: 'u1',
    controller: true,
  };
  /** A Deployment of the Foo `web`. */
  const deployment = (
    rv: string,
    generation: number,
    available: number | undefined,
    managers: string[] = [],
  ): KubernetesObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace: 'ns',
      resourceVersion: rv,
      generation,
      ownerReferences: [owner],
      ...(managers.length
        ? { managedFields: managers.map((manager) => ({ manager, operation: 'Update' })) }
        : {}),
    },
    ...(available !== undefined ? { status: { availableReplicas: available } } : {}),
  });
  const keys = (event: WatchEvent) => keysFor(fooController, event);

  it('maps nothing for the echo of its own create, and the Foo for a Deployment another writer created', () => {
    assert.deepEqual(keys({ type: 'ADDED', object: deployment('1', 1, undefined, [FIELD_MANAGER]) }), []);
    assert.deepEqual(keys({ type: 'ADDED', object: deployment('1', 1, undefined, ['kubectl']) }), [
      { namespace: 'ns', name: 'web' },
    ]);
  });

  it('maps the Foo only for status updates that change availableReplicas (absent reads as 0)', () => {
    const none = deployment('1', 1, undefined);
    const zero = deployment('2', 1, 0);
    const one = deployment('3', 1, 1);
    assert.deepEqual(keys({ type: 'MODIFIED', object: zero, oldObject: none }), []);
    assert.deepEqual(keys({ type: 'MODIFIED', object: one, oldObject: zero }), [
      { namespace: 'ns', name: 'web' },
    ]);
  });

  it('maps the Foo for a spec change by someone else (generation) and for a deletion', () => {
    const before = deployment('3', 1, 1);
    const scaled = deployment('4', 2, 1);
    assert.deepEqual(keys({ type: 'MODIFIED', object: scaled, oldObject: before }), [
      { namespace: 'ns', name: 'web' },
    ]);
    assert.deepEqual(keys({ type: 'DELETED', object: scaled }), [{ namespace: 'ns', name: 'web' }]);
  });

  it("maps nothing for its own Foo's status-only update (the primary predicate)", () => {
    const foo = (rv: string, available: number): KubernetesObject =>
      ({
        apiVersion: 'samplecontroller.k8s.io/v1alpha1',
        kind: 'Foo',
        metadata: { name: 'web', namespace: 'ns', resourceVersion: rv, generation: 1 },
        status: { availableReplicas: available },
      }) as KubernetesObject;
    assert.deepEqual(
      keysFor(fooController, { type: 'MODIFIED', object: foo('2', 1), oldObject: foo('1', 0) }),
      [],
    );
  });
});
