/**
 * The API server calls the project's webhooks, served by the real `admission` function
 * (functions-framework) behind HTTPS with a local CA, registered with the configurations
 * `levelset build` generates (functions/kit/webhook-configurations.ts): examples/foo's `foo-defaults`
 * (mutating) and `foo-scale` (validating). A create is refused with the webhook's message in
 * kube-apiserver's words, a mutation is stored, a warning reaches the client as a `Warning` header,
 * an update (a merge patch) is refused too, and a webhook that is down gets its failure policy's
 * outcome: `Fail` refuses, `Ignore` admits.
 *
 * Against a real cluster (`TEST_KUBECONFIG`) its API server must reach this machine's front at the
 * address in `TEST_WEBHOOK_HOST` (with a certificate for it: the local one names only localhost and
 * 127.0.0.1), so the file skips there unless that is set; not checked on a real kube-apiserver here.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { after, before, describe, it } from 'node:test';
import type { KubeConfig } from '@kubernetes/client-node';
import { NAMES } from '../../cli/build/generate-manifests.ts';
import { findProject } from '../../core/project.ts';
import { webhooks } from '../../examples/foo/controllers/index.ts';
import { defineValidatingWebhook, resources } from '../../functions/kit/index.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { webhookConfigurations } from '../../functions/kit/webhook-configurations.ts';
import { type LocalAdmission, startLocalAdmission } from '../../local/admission.ts';
import { freePort } from '../../local/pubsub-emulator.ts';

/** This repository's registry (examples/registry.ts), whose webhooks are examples/foo's. */
const REGISTRY = findProject().registry;
const FOO_CRD = new URL('../../examples/foo/controllers/foo/crd.yaml', import.meta.url).pathname;
const foos = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos' };
const skip =
  process.env.TEST_KUBECONFIG && !process.env.TEST_WEBHOOK_HOST
    ? 'a real API server must reach this machine: set TEST_WEBHOOK_HOST'
    : false;

/** One API request with the kubeconfig's credentials: status, body and the `Warning` headers. */
async function send(
  kc: KubeConfig,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string | string[]> = {},
  // biome-ignore lint/suspicious/noExplicitAny: API bodies walked as plain JSON.
): Promise<{ status: number; body: Record<string, any>; warnings: string[] }> {
  const server = new URL(kc.getCurrentCluster()?.server ?? '');
  const options: import('node:https').RequestOptions = {
    method,
    headers: {
      'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
      ...headers,
    },
  };
  await kc.applyToHTTPSOptions(options);
  const request = server.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, server), options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        text += c;
      });
      res.on('end', () => {
        const raw = res.headers.warning;
        const warnings = (Array.isArray(raw) ? raw : raw ? [raw] : []).map((w) =>
          JSON.parse(w.replace(/^299 - /, '')),
        );
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {}, warnings });
      });
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe('the API server calls the project webhooks', { skip }, () => {
  let cluster: TestCluster | undefined;
  let admission: LocalAdmission | undefined;
  let ns = '';
  /** `<plural>/<name>` of every configuration registered, deleted at the end (a real cluster keeps them). */
  const configurations: string[] = [];
  const kc = (): KubeConfig => {
    assert.ok(cluster, 'the cluster started');
    return cluster.kubeConfig;
  };
  const fooPath = (name = '') =>
    `/apis/samplecontroller.k8s.io/v1alpha1/namespaces/${ns}/foos${name ? `/${name}` : ''}`;
  const foo = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: 'samplecontroller.k8s.io/v1alpha1',
    kind: 'Foo',
    metadata: { name },
    spec,
  });

  before(async () => {
    cluster = await startTestCluster();
    ns = await cluster.createNamespace('e2e-webhooks');
    await cluster.applyCrd(FOO_CRD, foos, ns);
    // The admission function behind HTTPS, the foo webhooks registered: what `levelset dev` starts.
    admission = await startLocalAdmission({
      registry: REGISTRY,
      webhooks,
      clusters: [cluster.kubeConfig],
    });
    configurations.push(...admission.configurations);
    // Two webhooks that are down: nothing listens at their URL (a port just found free).
    const down = (failurePolicy: 'Fail' | 'Ignore') =>
      defineValidatingWebhook({
        name: `down-${failurePolicy.toLowerCase()}`,
        failurePolicy,
        timeoutSeconds: 2,
        rules: [{ resource: resources.configmaps, operations: ['CREATE'] }],
        objectSelector: { matchLabels: { 'levelset.dev/webhook-test': failurePolicy } },
        validate: () => undefined,
      });
    const nobody = `https://127.0.0.1:${await freePort()}`;
    for (const c of webhookConfigurations([down('Fail'), down('Ignore')], {
      baseUrl: nobody,
      levelsetNamespace: NAMES.namespace,
    })) {
      const plural = `${String(c.kind).toLowerCase()}s`;
      const created = await send(
        cluster.kubeConfig,
        'POST',
        `/apis/admissionregistration.k8s.io/v1/${plural}`,
        c,
      );
      assert.equal(created.status, 201, JSON.stringify(created.body));
      configurations.push(`${plural}/${(c.metadata as { name: string }).name}`);
    }
  });

  after(async () => {
    for (const c of configurations)
      await send(
        cluster?.kubeConfig as KubeConfig,
        'DELETE',
        `/apis/admissionregistration.k8s.io/v1/${c}`,
      ).catch(() => undefined);
    await admission?.stop();
    await cluster?.stop();
  });

  it('stores the mutating webhook’s change: a Foo without a deployment name gets its own', async () => {
    const r = await send(kc(), 'POST', fooPath(), foo('web', { replicas: 1 }));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.spec.deploymentName, 'web');
    const stored = await send(kc(), 'GET', fooPath('web'));
    assert.deepEqual(stored.body.spec, { replicas: 1, deploymentName: 'web' });
  });

  it('refuses a create with the validating webhook’s message, in kube-apiserver’s words (403)', async () => {
    const r = await send(kc(), 'POST', fooPath(), foo('big', { deploymentName: 'big', replicas: 5 }));
    // The webhook's status as it gave it (kube-apiserver's webhook/errors.ToStatusErr): its code,
    // no reason, and no `<resource> "<name>" is forbidden` prefix (checked on kube-apiserver v1.36).
    assert.equal(r.status, 403);
    assert.equal(r.body.reason, undefined);
    assert.equal(
      r.body.message,
      'admission webhook "foo-scale.levelset.dev" denied the request: spec.replicas 5: more than 3 replicas only for members of the group foo-scalers',
    );
    assert.equal((await send(kc(), 'GET', fooPath('big'))).status, 404, 'nothing stored');
  });

  it('admits it for a member of the group, with the webhook’s warning as a Warning header', async () => {
    const r = await send(kc(), 'POST', fooPath(), foo('scaled', { deploymentName: 'scaled', replicas: 5 }), {
      'Impersonate-User': 'ops',
      // system:masters: the RBAC to create Foos; foo-scalers: what the webhook asks for.
      'Impersonate-Group': ['foo-scalers', 'system:masters'],
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(r.warnings, ['spec.replicas 5: more than 3, allowed to ops (foo-scalers)']);
  });

  it('refuses an update (a merge patch) that scales past the limit, and stores nothing of it', async () => {
    const r = await send(kc(), 'PATCH', fooPath('web'), { spec: { replicas: 6 } });
    assert.equal(r.status, 403, JSON.stringify(r.body));
    assert.match(r.body.message, /denied the request: spec.replicas 6/);
    const stored = await send(kc(), 'GET', fooPath('web'));
    assert.equal(stored.body.spec.replicas, 1);
    const down = await send(kc(), 'PATCH', fooPath('web'), { spec: { replicas: 2 } });
    assert.equal(down.status, 200, JSON.stringify(down.body));
  });

  it('a dry run is admitted by webhooks without side effects, and stores nothing', async () => {
    const r = await send(kc(), 'POST', `${fooPath()}?dryRun=All`, foo('dry', { replicas: 1 }));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.spec.deploymentName, 'dry', 'mutated in the dry run too');
    assert.equal((await send(kc(), 'GET', fooPath('dry'))).status, 404);
  });

  it('a webhook that is down: failurePolicy Fail refuses (500), Ignore admits', async () => {
    const configMap = (name: string, policy: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, labels: { 'levelset.dev/webhook-test': policy } },
    });
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const refused = await send(kc(), 'POST', path, configMap('refused', 'Fail'));
    assert.equal(refused.status, 500, JSON.stringify(refused.body));
    assert.equal(refused.body.reason, 'InternalError');
    assert.match(
      refused.body.message,
      /^Internal error occurred: failed calling webhook "down-fail\.levelset\.dev": /,
    );
    const admitted = await send(kc(), 'POST', path, configMap('admitted', 'Ignore'));
    assert.equal(admitted.status, 201, JSON.stringify(admitted.body));
    const unlabelled = await send(kc(), 'POST', path, { metadata: { name: 'unmatched' } });
    assert.equal(unlabelled.status, 201, 'the object selector leaves other ConfigMaps alone');
  });
});
