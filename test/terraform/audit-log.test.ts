/**
 * Structural checks of the audit log path in terraform/ (audit-log.tf): the sink's filter is the one
 * generated from the registry (deploy/registry.gen.json, the module's `registry` input), everything exists only when some controller
 * declares `auditLog`, the sink has a writer identity of its own that may publish to its topic and
 * nothing else, the push subscription calls the `auditLog` function with the push identity's OIDC
 * token, and the function knows the principal of Levelset's own writes.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { auditLogFilter, REPO_ROOT } from '../../cli/build/generate-manifests.ts';
import { controllers } from '../../examples/registry.ts';
import { block, loadModule, type Module, resource, resourcesOf } from './hcl.ts';

const ref = (expr: string): string => `\${${expr}}`;

describe('terraform/ audit log', () => {
  let m: Module;
  before(async () => {
    m = await loadModule(join(REPO_ROOT, 'terraform'));
  });

  test("the sink's filter is the registry's, and only a declaring registry enables the path", () => {
    const input = JSON.parse(readFileSync(join(REPO_ROOT, 'deploy', 'registry.gen.json'), 'utf8'));
    assert.equal(input.audit_log_filter, auditLogFilter(controllers));
    assert.equal(m.locals.get('audit_log_enabled'), ref('var.registry.audit_log_filter != ""'));
    for (const [type, name] of [
      ['google_pubsub_topic', 'audit_log'],
      ['google_cloudfunctions2_function', 'audit_log'],
      ['google_cloud_run_v2_service_iam_member', 'audit_log_invoker'],
      ['google_pubsub_subscription', 'audit_log'],
    ] as const)
      assert.equal(resource(m, type, name).count, ref('local.audit_log_enabled ? 1 : 0'), `${type}.${name}`);
    // The sinks (one per audited project) exist only when enabled, too.
    assert.match(String(m.locals.get('audit_log_projects')), /^\$\{local\.audit_log_enabled \?/);
    assert.equal(
      resource(m, 'google_logging_project_sink', 'audit_log').for_each,
      ref('local.audit_log_projects'),
    );
  });

  test('a sink per audited project, with its own writer identity, sending to the topic the filtered entries', () => {
    const sink = resource(m, 'google_logging_project_sink', 'audit_log');
    assert.equal(sink.unique_writer_identity, true);
    assert.equal(sink.project, ref('each.value'));
    assert.equal(sink.destination, `pubsub.googleapis.com/${ref('google_pubsub_topic.audit_log[0].id')}`);
    const filter = String(sink.filter);
    assert.ok(filter.includes('var.registry.audit_log_filter'), filter);
    assert.ok(
      filter.includes('NOT protoPayload.authenticationInfo.principalEmail') &&
        filter.includes('google_service_account.functions.email'),
      "Levelset's own writes left out",
    );
  });

  test('each writer identity may publish to the audit log topic, and that is all it gets', () => {
    const members = [...resourcesOf(m, 'google_pubsub_topic_iam_member').entries()].filter(([, b]) =>
      String(b.member).includes('google_logging_project_sink'),
    );
    assert.deepEqual(
      members.map(([name]) => name),
      ['audit_log_writer'],
    );
    const writer = members[0]?.[1] ?? {};
    assert.equal(writer.role, 'roles/pubsub.publisher');
    assert.equal(writer.topic, ref('google_pubsub_topic.audit_log[0].name'));
    assert.equal(writer.member, ref('google_logging_project_sink.audit_log[each.key].writer_identity'));
    assert.equal(writer.for_each, ref('local.audit_log_projects'));
    for (const type of ['google_project_iam_member', 'google_pubsub_subscription_iam_member'])
      for (const b of resourcesOf(m, type).values())
        assert.ok(!String(b.member).includes('google_logging_project_sink'), `${type}: no more rights`);
  });

  test("the push subscription calls auditLog with the push identity's token; the function knows its own principal", () => {
    const fn = resource(m, 'google_cloudfunctions2_function', 'audit_log');
    assert.equal(block(fn, 'build_config').entry_point, 'auditLog');
    const service = block(fn, 'service_config');
    assert.equal(service.service_account_email, ref('google_service_account.functions.email'));
    const env = String(service.environment_variables);
    assert.ok(env.includes('local.function_env'), env);
    assert.ok(
      env.includes('LEVELSET_FUNCTIONS_SERVICE_ACCOUNT = google_service_account.functions.email'),
      env,
    );
    const invoker = resource(m, 'google_cloud_run_v2_service_iam_member', 'audit_log_invoker');
    assert.equal(invoker.role, 'roles/run.invoker');
    assert.equal(invoker.member, ref('google_service_account.push.member'));
    const sub = resource(m, 'google_pubsub_subscription', 'audit_log');
    assert.equal(sub.topic, ref('google_pubsub_topic.audit_log[0].id'));
    const push = block(sub, 'push_config');
    assert.equal(
      push.push_endpoint,
      ref('google_cloudfunctions2_function.audit_log[0].service_config[0].uri'),
    );
    assert.equal(block(push, 'oidc_token').service_account_email, ref('google_service_account.push.email'));
  });

  test("drift is a log-based metric by source, and only the resync's fires the alert", () => {
    const metric = resource(m, 'google_logging_metric', 'drift_corrected');
    assert.equal(metric.label_extractors.source, 'EXTRACT(jsonPayload.driftSource)');
    const alert = resource(m, 'google_monitoring_alert_policy', 'drift_corrected');
    const filter = block(block(alert, 'conditions'), 'condition_threshold').filter;
    assert.ok(String(filter).includes('metric.label.source = \\"resync\\"'), String(filter));
  });
});
