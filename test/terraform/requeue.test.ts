/**
 * Structural checks of the requeue mechanism in terraform/ (requeue.tf): a Cloud Tasks queue, the
 * functions' environment selecting it (as functions/runtime/requeue.ts and functions/runtime/retry.ts read it), and
 * the least IAM it needs — enqueue on that queue only, act-as the functions' own identity (whose
 * OAuth token the tasks carry to publish to the keys topic), publish to the keys and dead-letter topics.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { REPO_ROOT } from '../../cli/build/generate-manifests.ts';
import { readRequeueConfig } from '../../functions/runtime/requeue.ts';
import { readRetryConfig } from '../../functions/runtime/retry.ts';
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

  test("the functions' environment selects cloud-tasks publishing to the keys topic, as the functions' identity, and the retries' bounds", () => {
    const env = m.locals.get('requeue_env') as Record<string, string>;
    assert.deepEqual(env, {
      LEVELSET_REQUEUE: 'cloud-tasks',
      LEVELSET_REQUEUE_URL: ref('local.keys_publish_url'),
      LEVELSET_REQUEUE_QUEUE: ref('google_cloud_tasks_queue.requeue.id'),
      LEVELSET_REQUEUE_INVOKER: ref('google_service_account.functions.email'),
    });
    // The regional endpoint: one ordering key's messages published in one region keep their order.
    assert.equal(
      m.locals.get('keys_publish_url'),
      `https://${ref('var.region')}-pubsub.googleapis.com/v1/${ref('google_pubsub_topic.keys.id')}:publish`,
    );
    // The attempts before reconcile dead-letters a key are the subscriptions' dead-letter policy's.
    assert.deepEqual(m.locals.get('retry_env'), {
      LEVELSET_MAX_DELIVERY_ATTEMPTS: ref('tostring(var.max_delivery_attempts)'),
      LEVELSET_DEAD_LETTER_TOPIC: ref('local.dead_letter_topic_name'),
    });
    const policy = block(resource(m, 'google_pubsub_subscription', 'reconcile'), 'dead_letter_policy');
    assert.equal(policy.max_delivery_attempts, ref('var.max_delivery_attempts'));
    assert.match(String(m.locals.get('function_env')), /local\.requeue_env, local\.retry_env/);
    // The same variables, with values of the shapes Terraform produces, satisfy the functions' schemas.
    const config = readRequeueConfig({
      LEVELSET_REQUEUE: 'cloud-tasks',
      LEVELSET_REQUEUE_URL:
        'https://europe-west1-pubsub.googleapis.com/v1/projects/p/topics/levelset-keys:publish',
      LEVELSET_REQUEUE_QUEUE: 'projects/p/locations/europe-west1/queues/levelset-requeue',
      LEVELSET_REQUEUE_INVOKER: 'levelset-functions@p.iam.gserviceaccount.com',
    });
    assert.equal(config.LEVELSET_REQUEUE, 'cloud-tasks');
    assert.equal(
      readRetryConfig({
        LEVELSET_MAX_DELIVERY_ATTEMPTS: '5',
        LEVELSET_DEAD_LETTER_TOPIC: 'levelset-keys-dead-letter',
      }).deadLetterTopic,
      'levelset-keys-dead-letter',
    );
  });

  test('the functions may enqueue on that queue only, act as themselves only, publish keys and dead letters', () => {
    const enqueuers = resourcesOf(m, 'google_cloud_tasks_queue_iam_member');
    assert.deepEqual([...enqueuers.keys()], ['functions_enqueuer']);
    const enqueuer = enqueuers.get('functions_enqueuer') ?? {};
    assert.equal(enqueuer.role, 'roles/cloudtasks.enqueuer');
    assert.equal(enqueuer.name, ref('google_cloud_tasks_queue.requeue.name'));
    assert.equal(enqueuer.member, ref('google_service_account.functions.member'));
    const actAs = resourcesOf(m, 'google_service_account_iam_member');
    assert.deepEqual(
      [...actAs.keys()].filter((n) => n.startsWith('functions_act_as')),
      ['functions_act_as_self'],
    );
    const self = actAs.get('functions_act_as_self') ?? {};
    assert.equal(self.role, 'roles/iam.serviceAccountUser');
    assert.equal(self.service_account_id, ref('google_service_account.functions.name'));
    assert.equal(self.member, ref('google_service_account.functions.member'));
    for (const [name, topic] of [
      ['functions_publisher', 'keys'],
      ['functions_dead_letter_publisher', 'dead_letter'],
    ]) {
      const grant = resource(m, 'google_pubsub_topic_iam_member', name as string);
      assert.equal(grant.role, 'roles/pubsub.publisher');
      assert.equal(grant.topic, ref(`google_pubsub_topic.${topic}.name`));
      assert.equal(grant.member, ref('google_service_account.functions.member'));
    }
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
