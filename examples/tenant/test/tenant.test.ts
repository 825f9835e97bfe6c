/**
 * The tenant controller against an API server (the local one, or TEST_KUBECONFIG's cluster): a
 * Tenant gets its Namespaces (one that existed already is adopted), a ResourceQuota and a
 * default-deny NetworkPolicy in each; the reconcile after converging writes nothing (the quota's
 * `cpu: 2000m` is stored as `2` on a real cluster: the same quantity); a namespace the Tenant no
 * longer lists is let go, not deleted, and its quota and policy are pruned. Its admission rules (api.ts):
 * each violation refused with 422 and the rule's message by the API server, and a Tenant stored
 * before a rule existed is `Ready=False/InvalidSpec` with the same message.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  NetworkingV1Api,
} from '@kubernetes/client-node';
import { findCondition, parseConditions, resourceClient, resources } from 'levelset/kit';
import {
  reconcilerForTest,
  startTestCluster,
  type TestCluster,
  uniqueSuffix,
  waitFor,
  writesOf,
} from 'levelset/kit/testing';
import { teamLimitsPolicy } from '../controllers/team-limits/policy.ts';
import { tenantController } from '../controllers/tenant/index.ts';

const exec = promisify(execFile);
const folder = new URL('../controllers/tenant/', import.meta.url);
const resource = { group: 'platform.levelset.dev', version: 'v1alpha1', plural: 'tenants' };

describe('tenant controller', () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  const suffix = uniqueSuffix();
  const name = `tenant-${suffix}`;
  const [dev, prod] = [`${name}-dev`, `${name}-prod`];
  const key = { namespace: '', name };

  before(async () => {
    cluster = await startTestCluster();
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    await exec('kubectl', [
      '--kubeconfig',
      cluster.kubeconfigPath,
      'apply',
      '-f',
      new URL('crd.yaml', folder).pathname,
    ]);
    await waitFor(() => custom.listClusterCustomObject(resource).then(() => true), {
      message: 'tenants.platform.levelset.dev to be served',
    });
  });
  const others: string[] = [];
  after(async () => {
    for (const other of [name, ...others])
      await custom?.deleteClusterCustomObject({ ...resource, name: other }).catch(() => undefined);
    for (const namespace of [dev, prod])
      await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
    await cluster?.stop();
  });

  it('keeps a Namespace, a ResourceQuota and a NetworkPolicy per namespace; converged, it writes nothing', async () => {
    await core.createNamespace({ body: { metadata: { name: dev } } }); // there before: adopted
    await custom.createClusterCustomObject({
      ...resource,
      body: {
        apiVersion: 'platform.levelset.dev/v1alpha1',
        kind: 'Tenant',
        metadata: { name },
        spec: { namespaces: [dev, prod], quota: { cpu: '2000m', memory: '4Gi', pods: 20 } },
      },
    });
    const t = reconcilerForTest(tenantController, cluster.kubeconfigPath);
    const runs = await t.converge(key);
    assert.deepEqual(writesOf(runs.at(-1)?.requests ?? []), [], 'the last reconcile writes nothing');
    const networking = cluster.kubeConfig.makeApiClient(NetworkingV1Api);
    for (const namespace of [dev, prod]) {
      const ns = await core.readNamespace({ name: namespace });
      assert.equal(ns.metadata?.ownerReferences?.[0]?.name, name);
      const quota = await core.readNamespacedResourceQuota({ namespace, name: 'tenant' });
      assert.equal(quota.spec?.hard?.pods, '20');
      assert.match(quota.spec?.hard?.cpu ?? '', /^(2000m|2)$/);
      const policy = await networking.readNamespacedNetworkPolicy({
        namespace,
        name: 'default-deny-ingress',
      });
      assert.deepEqual(policy.spec?.policyTypes, ['Ingress']);
    }
    const tenant = (await custom.getClusterCustomObject({ ...resource, name })) as {
      status?: { namespaces?: number; conditions?: unknown };
    };
    assert.equal(tenant.status?.namespaces, 2);
    assert.equal(findCondition(parseConditions(tenant.status?.conditions), 'Ready')?.status, 'True');
  });

  it('lets a namespace it no longer lists go, with what is in it; its quota and policy are pruned', async () => {
    await custom.patchClusterCustomObject({
      ...resource,
      name,
      body: [{ op: 'replace', path: '/spec/namespaces', value: [dev] }],
    });
    await reconcilerForTest(tenantController, cluster.kubeconfigPath).converge(key);
    const kept = await core.readNamespace({ name: prod });
    assert.equal(kept.metadata?.deletionTimestamp, undefined);
    assert.deepEqual(kept.metadata?.ownerReferences ?? [], []);
    await assert.rejects(core.readNamespacedResourceQuota({ namespace: prod, name: 'tenant' }), {
      code: 404,
    });
  });

  describe('admission: the CRD’s CEL rules and list type, from api.ts', () => {
    const tenant = (tenantName: string, spec: Record<string, unknown>) => ({
      apiVersion: 'platform.levelset.dev/v1alpha1',
      kind: 'Tenant',
      metadata: { name: tenantName },
      spec: { namespaces: [], quota: { cpu: '1', memory: '1Gi', pods: 1 }, ...spec },
    });
    const create = (tenantName: string, spec: Record<string, unknown>, dryRun?: string) => {
      if (!dryRun) others.push(tenantName);
      return custom.createClusterCustomObject({ ...resource, body: tenant(tenantName, spec), dryRun });
    };
    /** The 422 `Status` of a refused write: its message and `reason field: message` causes. */
    async function refused(write: Promise<unknown>): Promise<{ message: string; causes: string[] }> {
      const err = await write.then(
        () => assert.fail('the write was accepted'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof ApiException, String(err));
      assert.equal(err.code, 422, String(err.body));
      const status = JSON.parse(String(err.body));
      assert.equal(status.reason, 'Invalid');
      return {
        message: status.message,
        causes: status.details.causes.map(
          (c: { reason: string; field: string; message: string }) => `${c.reason} ${c.field}: ${c.message}`,
        ),
      };
    }
    const badMemory = { containerMemoryMiB: { defaultLimit: 512, max: 256 } };

    it('refuses a LimitRange default above its max with 422 and the rule’s message', async () => {
      const r = await refused(create(`${name}-memory`, badMemory));
      // Before v1.35 kube-apiserver names the field's type (`Invalid value: "object": …`), since then
      // nothing for an object: the rule's message and the field are what every version says.
      assert.match(
        r.message,
        /^Tenant\.platform\.levelset\.dev ".*-memory" is invalid: spec\.containerMemoryMiB: Invalid value: ("object": )?defaultLimit must not exceed max$/,
      );
      assert.equal(r.causes.length, 1);
      assert.match(
        r.causes[0] ?? '',
        /^FieldValueInvalid spec\.containerMemoryMiB: Invalid value: ("object": )?defaultLimit must not exceed max$/,
      );
    });

    it('refuses a namespace listed twice (a set) with 422 Duplicate value', async () => {
      const r = await refused(create(`${name}-twice`, { namespaces: ['a', 'b', 'a'] }));
      assert.deepEqual(r.causes, ['FieldValueDuplicate spec.namespaces[2]: Duplicate value: "a"']);
    });

    it('refuses a change of team (immutable) with 422 and the rule’s message; setting it first is allowed', async () => {
      const teamed = `${name}-team`;
      await create(teamed, {});
      const patch = (team: string) =>
        custom.patchClusterCustomObject({
          ...resource,
          name: teamed,
          body: [{ op: 'add', path: '/spec/team', value: team }],
        });
      await patch('blue');
      const r = await refused(patch('green'));
      // The type before kube-apiserver v1.35 (`"string"`), the value since (`"green"`).
      assert.equal(r.causes.length, 1);
      assert.match(
        r.causes[0] ?? '',
        /^FieldValueInvalid spec\.team: Invalid value: "(string|green)": team is immutable$/,
      );
    });

    it('a Tenant stored before the rule existed: Ready=False/InvalidSpec with the same message', async () => {
      const crdName = 'tenants.platform.levelset.dev';
      const live = await resourceClient(cluster.kubeConfig).get(
        resources.customresourcedefinitions,
        undefined,
        crdName,
      );
      const crd = {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: crdName, labels: live.metadata?.labels },
        spec: (live as KubernetesObject & { spec: unknown }).spec,
      } as KubernetesObject;
      // The CRD as it was before the rules: every x-kubernetes-validations and set list type taken out
      // (the conditions' map list stays: its keys need it).
      const withoutRules = JSON.parse(JSON.stringify(crd), (k, v) =>
        k === 'x-kubernetes-validations' || (k === 'x-kubernetes-list-type' && v === 'set') ? undefined : v,
      );
      const older = `${name}-older`;
      try {
        await cluster.createCrd(withoutRules, resource);
        await waitFor(
          () =>
            create(`${name}-probe`, badMemory, 'All').then(
              () => true,
              () => false,
            ),
          { message: 'the CRD without its rules in force' },
        );
        await create(older, badMemory);
      } finally {
        await cluster.createCrd(crd, resource);
        await waitFor(
          () =>
            create(`${name}-probe`, badMemory, 'All').then(
              () => false,
              () => true,
            ),
          { message: 'the CRD with its rules in force again' },
        );
      }
      const run = await reconcilerForTest(tenantController, cluster.kubeconfigPath).reconcile({
        namespace: '',
        name: older,
      });
      assert.equal(run.error?.reason, 'InvalidSpec');
      const stored = (await custom.getClusterCustomObject({ ...resource, name: older })) as {
        status?: { conditions?: unknown };
      };
      const ready = findCondition(parseConditions(stored.status?.conditions), 'Ready');
      assert.equal(ready?.status, 'False');
      assert.equal(ready?.reason, 'InvalidSpec');
      assert.match(
        ready?.message ?? '',
        /spec\.containerMemoryMiB: Invalid value: "object": defaultLimit must not exceed max/,
      );
    });

    it('gives each namespace the team label and a LimitRange when the spec asks', async () => {
      const withLimits = `${name}-limits`;
      const namespace = `${withLimits}-ns`;
      await create(withLimits, {
        namespaces: [namespace],
        team: 'blue',
        containerMemoryMiB: { defaultLimit: 256, max: 512 },
      });
      try {
        await reconcilerForTest(tenantController, cluster.kubeconfigPath).converge({
          namespace: '',
          name: withLimits,
        });
        const ns = await core.readNamespace({ name: namespace });
        assert.equal(ns.metadata?.labels?.team, 'blue');
        const range = await core.readNamespacedLimitRange({ namespace, name: 'tenant' });
        assert.deepEqual(range.spec?.limits?.[0]?.max, { memory: '512Mi' });
      } finally {
        await core.deleteNamespace({ name: namespace }).catch(() => undefined);
      }
    });
  });

  describe('admission: the team-limits ValidatingAdmissionPolicy (definePolicy)', () => {
    it('refuses a Deployment without limits in a team’s namespace with 422 and the policy’s message; one with limits, or elsewhere, is created', async () => {
      const client = resourceClient(cluster.kubeConfig);
      const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
      const teamed = `${name}-teamed`;
      const namespace = `${teamed}-blue`;
      const web = (limits: boolean) => ({
        metadata: { name: 'web' },
        spec: {
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: {
              containers: [
                {
                  name: 'web',
                  image: 'nginx',
                  ...(limits ? { resources: { limits: { memory: '64Mi' } } } : {}),
                },
              ],
            },
          },
        },
      });
      others.push(teamed);
      await client.apply(resources.validatingadmissionpolicies, teamLimitsPolicy.policy as KubernetesObject);
      await client.apply(
        resources.validatingadmissionpolicybindings,
        teamLimitsPolicy.binding as KubernetesObject,
      );
      try {
        await custom.createClusterCustomObject({
          ...resource,
          body: {
            apiVersion: 'platform.levelset.dev/v1alpha1',
            kind: 'Tenant',
            metadata: { name: teamed },
            spec: { namespaces: [namespace], team: 'blue', quota: { cpu: '1', memory: '1Gi', pods: 10 } },
          },
        });
        await reconcilerForTest(tenantController, cluster.kubeconfigPath).converge({
          namespace: '',
          name: teamed,
        });
        // A real kube-apiserver loads a policy through an informer: in force once a probe is refused.
        const create = (limits: boolean, dryRun?: string) =>
          apps.createNamespacedDeployment({ namespace, body: web(limits), dryRun });
        await waitFor(
          () =>
            create(false, 'All').then(
              () => false,
              () => true,
            ),
          {
            message: 'the team-limits policy in force',
          },
        );
        const err = await create(false).then(
          () => assert.fail('a Deployment without limits was created'),
          (e: unknown) => e,
        );
        assert.ok(err instanceof ApiException, String(err));
        assert.equal(err.code, 422, String(err.body));
        const status = JSON.parse(String(err.body));
        assert.equal(status.reason, 'Invalid');
        assert.equal(
          status.message,
          `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'team-limits.platform.levelset.dev' with binding 'team-limits.platform.levelset.dev' denied request: every container of a team Deployment sets resources.limits: web does not`,
        );
        await create(true);
        const elsewhere = await cluster.createNamespace('no-team');
        await apps.createNamespacedDeployment({ namespace: elsewhere, body: web(false) });
      } finally {
        for (const type of [
          resources.validatingadmissionpolicybindings,
          resources.validatingadmissionpolicies,
        ]) {
          const live = await client.get(type, undefined, teamLimitsPolicy.name).catch(() => undefined);
          if (live) await client.delete(type, live);
        }
        await core.deleteNamespace({ name: namespace }).catch(() => undefined);
      }
    });
  });
});
