/**
 * One case per API group of kube-apiserver v1.32's built-in resources, so the local server cannot
 * drift from a real one (runs unchanged against `TEST_KUBECONFIG`'s cluster): a create that strict
 * field validation refuses, naming the field (apimachinery's strict decoding: `unknown field
 * "metadata.bogus"`, 400), the create, a server-side apply, the watch's event of it, the delete;
 * and discovery's scope and short names. The resources, bodies and names are this file's own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestCluster, type TestCluster, uniqueSuffix } from './cluster.ts';
import { openWatch, raw } from './helpers.ts';
import { waitFor } from './wait.ts';

// biome-ignore lint/suspicious/noExplicitAny: request and response bodies are plain JSON
type Json = any;

/** [group/version, plural, kind, namespaced, a valid body's members besides metadata] */
const CASES: readonly [string, string, string, boolean, Json][] = [
  ['v1', 'resourcequotas', 'ResourceQuota', true, { spec: { hard: { pods: '10' } } }],
  [
    'admissionregistration.k8s.io/v1',
    'validatingwebhookconfigurations',
    'ValidatingWebhookConfiguration',
    false,
    { webhooks: [] },
  ],
  ['apps/v1', 'controllerrevisions', 'ControllerRevision', true, { revision: 1, data: {} }],
  [
    'autoscaling/v2',
    'horizontalpodautoscalers',
    'HorizontalPodAutoscaler',
    true,
    { spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'none' }, maxReplicas: 2 } },
  ],
  [
    'batch/v1',
    'cronjobs',
    'CronJob',
    true,
    {
      spec: {
        schedule: '0 0 1 1 *',
        suspend: true,
        jobTemplate: {
          spec: {
            template: {
              spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1.36' }] },
            },
          },
        },
      },
    },
  ],
  ['coordination.k8s.io/v1', 'leases', 'Lease', true, { spec: { holderIdentity: 'me' } }],
  ['discovery.k8s.io/v1', 'endpointslices', 'EndpointSlice', true, { addressType: 'IPv4', endpoints: [] }],
  [
    'flowcontrol.apiserver.k8s.io/v1',
    'prioritylevelconfigurations',
    'PriorityLevelConfiguration',
    false,
    {
      spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject' } } },
    },
  ],
  ['networking.k8s.io/v1', 'networkpolicies', 'NetworkPolicy', true, { spec: { podSelector: {} } }],
  ['node.k8s.io/v1', 'runtimeclasses', 'RuntimeClass', false, { handler: 'runc' }],
  [
    'policy/v1',
    'poddisruptionbudgets',
    'PodDisruptionBudget',
    true,
    { spec: { minAvailable: 1, selector: { matchLabels: { app: 'none' } } } },
  ],
  ['rbac.authorization.k8s.io/v1', 'roles', 'Role', true, { rules: [] }],
  ['scheduling.k8s.io/v1', 'priorityclasses', 'PriorityClass', false, { value: 1000 }],
  ['storage.k8s.io/v1', 'storageclasses', 'StorageClass', false, { provisioner: 'example.com/none' }],
];

describe('the built-in resources of every API group (a real cluster serves the same)', () => {
  let cluster: TestCluster;
  let ns: string;
  const suffix = uniqueSuffix();
  before(async () => {
    cluster = await startTestCluster();
    ns = await cluster.createNamespace('builtins');
  });
  after(() => cluster?.stop());

  for (const [gv, plural, kind, namespaced, members] of CASES)
    it(`${plural}.${gv}: strict validation names the field; create, apply, watch, delete`, async () => {
      const kc = cluster.kubeConfig;
      const base = `${gv === 'v1' ? '/api/v1' : `/apis/${gv}`}${namespaced ? `/namespaces/${ns}` : ''}/${plural}`;
      const name = `builtins-${suffix}`;
      const body = { apiVersion: gv, kind, metadata: { name }, ...members };

      const strict = await raw(kc, 'POST', `${base}?fieldValidation=Strict`, {
        ...body,
        metadata: { name, bogus: 1 },
      });
      assert.equal(strict.status, 400, strict.text);
      assert.match(strict.json?.message ?? '', /strict decoding error: unknown field "metadata\.bogus"/);

      const created = await raw(kc, 'POST', base, body);
      assert.equal(created.status, 201, created.text);
      try {
        const watch = await openWatch(
          kc,
          `${base}?watch=1&resourceVersion=${created.json.metadata.resourceVersion}&fieldSelector=metadata.name%3D${name}`,
        );
        try {
          const applied = await raw(
            kc,
            'PATCH',
            `${base}/${name}?fieldManager=builtins-test&force=true`,
            { apiVersion: gv, kind, metadata: { name, labels: { applied: 'yes' } } },
            { 'Content-Type': 'application/apply-patch+yaml' },
          );
          assert.equal(applied.status, 200, applied.text);
          assert.equal(applied.json.metadata.labels.applied, 'yes');
          await waitFor(
            () =>
              watch.events.some((e) => e.type === 'MODIFIED' && e.object.metadata?.labels?.applied === 'yes'),
            { message: `the watch's MODIFIED event of ${plural}/${name}` },
          );
        } finally {
          watch.close();
        }
      } finally {
        const deleted = await raw(kc, 'DELETE', `${base}/${name}`);
        assert.ok([200, 202].includes(deleted.status), deleted.text);
      }
    });

  it('the review resources: who am I, may a subject, may a subject in a namespace', async () => {
    const kc = cluster.kubeConfig;
    const me = await raw(kc, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
    });
    assert.equal(me.status, 201, me.text);
    assert.ok(me.json.status.userInfo.username, me.text);
    const review = (kind: string, user: string, groups: string[], namespace = ns) => ({
      apiVersion: 'authorization.k8s.io/v1',
      kind,
      ...(kind === 'LocalSubjectAccessReview' ? { metadata: { namespace } } : {}),
      spec: { user, groups, resourceAttributes: { verb: 'get', resource: 'pods', namespace } },
    });
    const sar = (user: string, groups: string[]) =>
      raw(
        kc,
        'POST',
        '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        review('SubjectAccessReview', user, groups),
      );
    const nobody = await sar(`levelset-nobody-${suffix}`, []);
    assert.equal(nobody.status, 201, nobody.text);
    assert.equal(nobody.json.status.allowed, false);
    const admin = await sar(`levelset-admin-${suffix}`, ['system:masters']);
    assert.equal(admin.json.status.allowed, true, admin.text);
    const none = await sar('', []);
    assert.equal(none.status, 422, none.text);
    const local = await raw(
      kc,
      'POST',
      `/apis/authorization.k8s.io/v1/namespaces/${ns}/localsubjectaccessreviews`,
      review('LocalSubjectAccessReview', `levelset-nobody-${suffix}`, []),
    );
    assert.equal(local.status, 201, local.text);
    assert.equal(local.json.status.allowed, false);
    const elsewhere = await raw(
      kc,
      'POST',
      `/apis/authorization.k8s.io/v1/namespaces/${ns}/localsubjectaccessreviews`,
      review('LocalSubjectAccessReview', `levelset-nobody-${suffix}`, [], 'kube-system'),
    );
    assert.equal(elsewhere.status, 400, elsewhere.text);
  });

  it("garbage collection: a cluster-scoped owner's delete takes its namespaced dependents, of any kind", async () => {
    const kc = cluster.kubeConfig;
    const owner = await raw(kc, 'POST', '/apis/scheduling.k8s.io/v1/priorityclasses', {
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: `builtins-owner-${suffix}` },
      value: 10,
    });
    assert.equal(owner.status, 201, owner.text);
    const ref = {
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      name: owner.json.metadata.name,
      uid: owner.json.metadata.uid,
    };
    const quotas = `/api/v1/namespaces/${ns}/resourcequotas`;
    const dependent = await raw(kc, 'POST', quotas, {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: `builtins-dependent-${suffix}`, ownerReferences: [ref] },
      spec: { hard: { pods: '1' } },
    });
    assert.equal(dependent.status, 201, dependent.text);
    const deleted = await raw(kc, 'DELETE', `/apis/scheduling.k8s.io/v1/priorityclasses/${ref.name}`);
    assert.equal(deleted.status, 200, deleted.text);
    await waitFor(
      async () => (await raw(kc, 'GET', `${quotas}/${dependent.json.metadata.name}`)).status === 404,
      { message: 'the garbage collector to delete the dependent ResourceQuota', timeoutMs: 60_000 },
    );
  });

  it('discovery: scope and short names of the resources kubectl reaches by them', async () => {
    const kc = cluster.kubeConfig;
    const core = await raw(kc, 'GET', '/api/v1');
    const quota = core.json.resources.find((r: Json) => r.name === 'resourcequotas');
    assert.deepEqual([quota?.namespaced, quota?.shortNames], [true, ['quota']]);
    const networking = await raw(kc, 'GET', '/apis/networking.k8s.io/v1');
    const netpol = networking.json.resources.find((r: Json) => r.name === 'networkpolicies');
    assert.deepEqual(
      [netpol?.namespaced, netpol?.shortNames, netpol?.kind],
      [true, ['netpol'], 'NetworkPolicy'],
    );
    const storage = await raw(kc, 'GET', '/apis/storage.k8s.io/v1');
    const sc = storage.json.resources.find((r: Json) => r.name === 'storageclasses');
    assert.deepEqual([sc?.namespaced, sc?.shortNames], [false, ['sc']]);
  });
});
