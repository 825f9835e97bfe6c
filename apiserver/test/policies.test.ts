/**
 * ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1) evaluated on writes, as
 * kube-apiserver's admission plugin does: a namespace selector, match conditions, `Deny` (422
 * `Invalid` by default, another code with a validation's `reason`, the message naming the policy and
 * its binding), `Warn` (a `Warning` header), updates. Runs against the local server, or unchanged
 * against a real cluster with TEST_KUBECONFIG.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { KubeConfig } from '@kubernetes/client-node';
import { startTestCluster, type TestCluster, uniqueSuffix } from './cluster.ts';
import { raw } from './helpers.ts';
import { waitFor } from './wait.ts';

// biome-ignore lint/suspicious/noExplicitAny: wire JSON under test
type Obj = Record<string, any>;

const suffix = uniqueSuffix();
const LIMITS = `limits-${suffix}.policies.levelset.dev`;
const REPLICAS = `replicas-${suffix}.policies.levelset.dev`;
const VAP = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies';
const BINDINGS = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings';

let cluster: TestCluster;
let kc: KubeConfig;
let team: string;
let other: string;

function deployment(name: string, limits: boolean, labels: Record<string, string> = {}): Obj {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, ...(Object.keys(labels).length ? { labels } : {}) },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [
            { name: 'web', image: 'nginx', ...(limits ? { resources: { limits: { memory: '64Mi' } } } : {}) },
          ],
        },
      },
    },
  };
}

const deployments = (ns: string) => `/apis/apps/v1/namespaces/${ns}/deployments`;

function policy(name: string, spec: Obj): Obj {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec,
  };
}

function binding(name: string, actions: string[]): Obj {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: { policyName: name, validationActions: actions },
  };
}

const DEPLOYMENT_RULES = {
  resourceRules: [
    {
      apiGroups: ['apps'],
      apiVersions: ['v1'],
      resources: ['deployments'],
      operations: ['CREATE', 'UPDATE'],
    },
  ],
};

before(async () => {
  cluster = await startTestCluster();
  kc = cluster.kubeConfig;
  team = await cluster.createNamespace('vap-team', { team: 'blue' });
  other = await cluster.createNamespace('vap-other');
  const created = [
    await raw(
      kc,
      'POST',
      VAP,
      policy(LIMITS, {
        failurePolicy: 'Fail',
        matchConstraints: {
          ...DEPLOYMENT_RULES,
          namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'Exists' }] },
        },
        matchConditions: [
          {
            name: 'not-exempt',
            expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)",
          },
        ],
        validations: [
          {
            expression:
              'object.spec.template.spec.containers.all(c, has(c.resources) && has(c.resources.limits))',
            message: 'every container sets resources.limits',
          },
        ],
      }),
    ),
    await raw(kc, 'POST', BINDINGS, binding(LIMITS, ['Deny'])),
    await raw(
      kc,
      'POST',
      VAP,
      policy(REPLICAS, {
        matchConstraints: DEPLOYMENT_RULES,
        validations: [
          { expression: 'object.spec.replicas <= 50', message: 'far too many replicas', reason: 'Forbidden' },
          {
            expression: 'object.spec.replicas <= 5',
            messageExpression: "'replicas ' + string(object.spec.replicas) + ' > 5'",
          },
        ],
      }),
    ),
    await raw(kc, 'POST', BINDINGS, binding(REPLICAS, ['Warn', 'Audit'])),
  ];
  for (const r of created) assert.equal(r.status, 201, r.text);
  // A real kube-apiserver loads policies through an informer: wait until a probe is refused.
  await waitFor(
    async () =>
      (await raw(kc, 'POST', `${deployments(team)}?dryRun=All`, deployment('probe', false))).status === 422,
    { message: 'the policy in force' },
  );
});

after(async () => {
  for (const name of [LIMITS, REPLICAS]) {
    await raw(kc, 'DELETE', `${BINDINGS}/${name}`).catch(() => undefined);
    await raw(kc, 'DELETE', `${VAP}/${name}`).catch(() => undefined);
  }
  await cluster?.stop();
});

describe('ValidatingAdmissionPolicy', () => {
  test('Deny: a Deployment without limits in a team namespace is 422 Invalid, naming the policy and binding', async () => {
    const res = await raw(kc, 'POST', deployments(team), deployment('web', false));
    assert.equal(res.status, 422, res.text);
    assert.equal(res.json.reason, 'Invalid');
    const denial = `ValidatingAdmissionPolicy '${LIMITS}' with binding '${LIMITS}' denied request: every container sets resources.limits`;
    assert.equal(res.json.message, `deployments.apps "web" is forbidden: ${denial}`);
    assert.deepEqual(res.json.details, {
      name: 'web',
      group: 'apps',
      kind: 'deployments',
      causes: [{ message: denial }],
    });
  });

  test('the namespace selector: the same Deployment elsewhere is created; with limits it is created', async () => {
    const elsewhere = await raw(kc, 'POST', deployments(other), deployment('web', false));
    assert.equal(elsewhere.status, 201, elsewhere.text);
    const limited = await raw(kc, 'POST', deployments(team), deployment('web', true));
    assert.equal(limited.status, 201, limited.text);
  });

  test('update: taking the limits away is refused', async () => {
    const res = await raw(kc, 'PUT', `${deployments(team)}/web`, deployment('web', false));
    assert.equal(res.status, 422, res.text);
    assert.match(res.json.message, /denied request: every container sets resources.limits$/);
  });

  test('matchConditions: a Deployment they exclude is not judged', async () => {
    const res = await raw(kc, 'POST', deployments(team), deployment('exempt', false, { exempt: 'yes' }));
    assert.equal(res.status, 201, res.text);
  });

  test('Warn: a failed validation is a Warning header, the write goes through', async () => {
    const res = await raw(kc, 'POST', deployments(other), {
      ...deployment('many', true),
      spec: { ...deployment('many', true).spec, replicas: 7 },
    });
    assert.equal(res.status, 201, res.text);
    assert.match(
      res.headers.warning ?? '',
      new RegExp(
        `Validation failed for ValidatingAdmissionPolicy '${REPLICAS.replaceAll('.', '\\.')}' with binding '${REPLICAS.replaceAll('.', '\\.')}': replicas 7 > 5`,
      ),
    );
  });

  test("a validation's reason sets the code: Forbidden is 403; the first denial decides", async () => {
    const scaled = (name: string, replicas: number) => ({
      ...deployment(name, true),
      spec: { ...deployment(name, true).spec, replicas },
    });
    const deny = await raw(kc, 'POST', BINDINGS, {
      ...binding(REPLICAS, ['Deny']),
      metadata: { name: `${REPLICAS}-deny` },
    });
    assert.equal(deny.status, 201, deny.text);
    try {
      await waitFor(
        async () =>
          (await raw(kc, 'POST', `${deployments(other)}?dryRun=All`, scaled('probe', 60))).status === 403,
        { message: 'the Deny binding in force' },
      );
      const huge = await raw(kc, 'POST', deployments(other), scaled('huge', 60));
      assert.equal(huge.status, 403, huge.text);
      assert.equal(huge.json.reason, 'Forbidden');
      assert.match(huge.json.message, /with binding '[^']+-deny' denied request: far too many replicas$/);
      const many = await raw(kc, 'POST', deployments(other), scaled('many-denied', 7));
      assert.equal(many.status, 422, many.text);
      assert.match(many.json.message, /denied request: replicas 7 > 5$/);
    } finally {
      await raw(kc, 'DELETE', `${BINDINGS}/${REPLICAS}-deny`);
    }
  });
});
