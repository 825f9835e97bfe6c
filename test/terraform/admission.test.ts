/**
 * Structural checks of the admission path in terraform/ (admission.tf): everything exists only when
 * the registry has webhooks; the `admission` function is the bundle's `admission` target on a
 * service of its own with warm instances (never fewer than 1) and a timeout above every webhook's;
 * its identity has no roles; the configurations are the generated ones (deploy/registry.gen.json,
 * functions/kit/webhook-configurations.ts) applied per cluster by modules/cluster with the service's URL.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { NAMES, REPO_ROOT, type RegistryJson } from '../../cli/build/generate-manifests.ts';
import { webhooks } from '../../examples/registry.ts';
import { webhookConfigurations } from '../../functions/kit/webhook-configurations.ts';
import { block, loadModule, type Module, resolveDefault, resource, resourcesOf, strings } from './hcl.ts';

const ref = (expr: string): string => `\${${expr}}`;
const registryInput = JSON.parse(
  readFileSync(join(REPO_ROOT, 'deploy', 'registry.gen.json'), 'utf8'),
) as RegistryJson;

describe('terraform/ admission', () => {
  let m: Module;
  let cluster: Module;
  before(async () => {
    m = await loadModule(join(REPO_ROOT, 'terraform'));
    cluster = await loadModule(join(REPO_ROOT, 'terraform', 'modules', 'cluster'));
  });

  test("the registry's configurations are the generated ones, each webhook safe by construction", () => {
    assert.deepEqual(
      registryInput.webhook_configurations,
      webhookConfigurations(webhooks, { levelsetNamespace: NAMES.namespace }),
    );
    assert.ok(registryInput.webhook_configurations.length >= 2, 'the foo example has two webhooks');
    for (const c of registryInput.webhook_configurations as { webhooks: Record<string, unknown>[] }[])
      for (const w of c.webhooks) {
        assert.equal(w.sideEffects, 'None');
        assert.deepEqual(w.admissionReviewVersions, ['v1']);
        assert.ok(Number(w.timeoutSeconds) >= 1 && Number(w.timeoutSeconds) <= 30);
        assert.match(
          JSON.stringify(w.namespaceSelector),
          /"NotIn","values":\["kube-system","levelset-system"\]/,
        );
      }
  });

  test('everything exists only when the registry has webhooks', () => {
    assert.equal(m.locals.get('admission_enabled'), ref('length(var.registry.webhook_configurations) > 0'));
    for (const [type, name] of [
      ['google_service_account', 'admission'],
      ['google_cloudfunctions2_function', 'admission'],
      ['google_cloud_run_v2_service_iam_member', 'admission_invoker'],
      ['google_logging_metric', 'admission_denials'],
    ] as const)
      assert.equal(resource(m, type, name).count, ref('local.admission_enabled ? 1 : 0'), `${type}.${name}`);
  });

  test('the admission target on a service of its own: warm, bounded, timeout above any webhook, an identity with no roles', () => {
    const fn = resource(m, 'google_cloudfunctions2_function', 'admission');
    assert.equal(block(fn, 'build_config').entry_point, 'admission');
    const svc = block(fn, 'service_config');
    assert.equal(svc.min_instance_count, ref('var.admission_min_instances'));
    assert.equal(resolveDefault(m, svc.min_instance_count), 1);
    assert.equal(svc.max_instance_count, ref('var.admission_max_instances'));
    assert.equal(svc.timeout_seconds, 30, 'at least the largest timeoutSeconds kube-apiserver allows');
    assert.equal(svc.service_account_email, ref('google_service_account.admission[0].email'));
    // The controllers' configuration, never the clusters' endpoints (no credentials to use them).
    assert.match(
      String(svc.environment_variables),
      /^\$\{merge\(local\.controller_env, local\.tracing_env, \{/,
    );
    assert.doesNotMatch(String(svc.environment_variables), /cluster_env|function_env|KUBERNETES_ENDPOINT/);
    // No IAM grant names the admission identity: it only answers reviews.
    for (const [type, byName] of m.resources)
      for (const [name, body] of byName)
        if (type.endsWith('_iam_member'))
          assert.doesNotMatch(String(body.member), /google_service_account\.admission/, `${type}.${name}`);
    // The variable refuses fewer than one warm instance.
    const minVar = m.variables.get('admission_min_instances') as { validation?: { condition: string }[] };
    assert.match(String(strings(minVar.validation)), />= 1/);
  });

  test('modules/cluster applies each configuration with the service URL, after the CRDs', () => {
    const inputs = m.locals.get('cluster_module_inputs') as Record<string, unknown>;
    assert.equal(inputs.webhook_configurations, ref('local.webhook_configurations'));
    const configs = String(m.locals.get('webhook_configurations'));
    assert.match(
      configs,
      /clientConfig = \{ url = "\$\{local\.admission_base_url\}\/\$\{trimsuffix\(w\.name, "\.levelset\.dev"\)\}" \}/,
    );
    const manifest = resource(cluster, 'kubernetes_manifest', 'webhook_configuration');
    assert.equal(manifest.for_each, ref('var.levelset.webhook_configurations'));
    assert.equal(manifest.manifest, ref('each.value'));
    assert.deepEqual(manifest.depends_on, [ref('kubernetes_manifest.crd')]);
    assert.equal(
      resourcesOf(m, 'google_cloud_run_v2_service_iam_member').get('admission_invoker')?.member,
      'allUsers',
    );
  });
});
