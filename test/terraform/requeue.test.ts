/**
 * Structural checks of the requeue mechanism in terraform/ (requeue.tf): a Cloud Tasks queue, the
 * functions' environment selecting it (as functions/requeue.ts reads it), and the least IAM it needs —
 * enqueue on that queue only, act-as the push identity (whose OIDC token the tasks carry, the only
 * invoker of reconcile).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { readRequeueConfig } from '../../functions/requeue.ts';
import { REPO_ROOT } from '../../scripts/generate-manifests.ts';
import { block, loadModule, type Module, resource, resourcesOf } from './hcl.ts';

const ref = (expr: string): string => `\${${expr}}`;

describe('terraform/ requeue', () => {
  let m: Module;
  before(async () => {
    m = await loadModule(join(REPO_ROOT, 'terraform'));
  });

  test('a Cloud Tasks queue with bounded retries, its API enabled', () => {
    const queue = resource(m, 'google_cloud_tasks_queue', 'requeue');
    assert.equal(queue.location, ref('var.region'));
    const retry = block(queue, 'retry_config');
    assert.equal(retry.max_attempts, ref('var.max_delivery_attempts'));
    assert.ok((m.locals.get('apis') as string).includes('cloudtasks.googleapis.com'));
  });

  test("the functions' environment selects cloud-tasks with the queue, reconcile's URL and the push identity", () => {
    const env = m.locals.get('requeue_env') as Record<string, string>;
    assert.deepEqual(env, {
      LEVELSET_REQUEUE: 'cloud-tasks',
      LEVELSET_REQUEUE_URL: ref('local.reconcile_deterministic_url'),
      LEVELSET_REQUEUE_QUEUE: ref('google_cloud_tasks_queue.requeue.id'),
      LEVELSET_REQUEUE_INVOKER: ref('google_service_account.push.email'),
    });
    assert.match(String(m.locals.get('function_env')), /local\.requeue_env/);
    assert.equal(
      m.locals.get('reconcile_deterministic_url'),
      `https://${ref('local.reconcile_function_name')}-${ref('local.project_number')}.${ref('var.region')}.run.app/`,
    );
    // The same variables, with values of the shapes Terraform produces, satisfy the functions' schema.
    const config = readRequeueConfig({
      LEVELSET_REQUEUE: 'cloud-tasks',
      LEVELSET_REQUEUE_URL: 'https://levelset-reconcile-123456789.europe-west1.run.app/',
      LEVELSET_REQUEUE_QUEUE: 'projects/p/locations/europe-west1/queues/levelset-requeue',
      LEVELSET_REQUEUE_INVOKER: 'levelset-push@p.iam.gserviceaccount.com',
    });
    assert.equal(config.LEVELSET_REQUEUE, 'cloud-tasks');
  });

  test('the functions may enqueue on that queue only, and act as the push identity only', () => {
    const enqueuers = resourcesOf(m, 'google_cloud_tasks_queue_iam_member');
    assert.deepEqual([...enqueuers.keys()], ['functions_enqueuer']);
    const enqueuer = enqueuers.get('functions_enqueuer') ?? {};
    assert.equal(enqueuer.role, 'roles/cloudtasks.enqueuer');
    assert.equal(enqueuer.name, ref('google_cloud_tasks_queue.requeue.name'));
    assert.equal(enqueuer.member, ref('google_service_account.functions.member'));
    const actAs = resource(m, 'google_service_account_iam_member', 'functions_act_as_push');
    assert.equal(actAs.role, 'roles/iam.serviceAccountUser');
    assert.equal(actAs.service_account_id, ref('google_service_account.push.name'));
    assert.equal(actAs.member, ref('google_service_account.functions.member'));
    for (const [type, byName] of m.resources) {
      for (const [name, body] of byName) {
        if (String(body.role ?? '').startsWith('roles/cloudtasks'))
          assert.equal(
            `${type}.${name}`,
            'google_cloud_tasks_queue_iam_member.functions_enqueuer',
            'no project-wide Cloud Tasks grant',
          );
      }
    }
  });
});
