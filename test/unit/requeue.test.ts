import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodePushEnvelope } from '../../functions/message.ts';
import {
  cloudTask,
  cloudTasksRequeuer,
  readRequeueConfig,
  requeueEnvelope,
  type TasksClient,
} from '../../functions/requeue.ts';

const config = readRequeueConfig({
  LEVELSET_REQUEUE: 'cloud-tasks',
  LEVELSET_REQUEUE_URL: 'https://levelset-reconcile-1.europe-west1.run.app/',
  LEVELSET_REQUEUE_QUEUE: 'projects/p/locations/europe-west1/queues/levelset-requeue',
  LEVELSET_REQUEUE_INVOKER: 'levelset-push@p.iam.gserviceaccount.com',
}) as Extract<ReturnType<typeof readRequeueConfig>, { LEVELSET_REQUEUE: 'cloud-tasks' }>;
const key = { cluster: 'default', controller: 'customcluster', namespace: 'team-a', name: 'big' };

describe('requeue', () => {
  it('defaults to none, and names every missing variable of a mechanism', () => {
    assert.equal(readRequeueConfig({}).LEVELSET_REQUEUE, 'none');
    assert.throws(() => readRequeueConfig({ LEVELSET_REQUEUE: 'local' }), /LEVELSET_REQUEUE_URL/);
    assert.throws(
      () => readRequeueConfig({ LEVELSET_REQUEUE: 'cloud-tasks', LEVELSET_REQUEUE_URL: 'https://x/' }),
      /LEVELSET_REQUEUE_QUEUE.*LEVELSET_REQUEUE_INVOKER|LEVELSET_REQUEUE_INVOKER.*LEVELSET_REQUEUE_QUEUE/,
    );
    assert.throws(() => readRequeueConfig({ LEVELSET_REQUEUE: 'sqs' }), /invalid requeue configuration/);
  });

  it('delivers the push envelope reconcile decodes, with reason requeue', () => {
    const now = new Date('2026-11-23T10:00:00.000Z');
    const { body } = requeueEnvelope(key, now);
    const { message } = decodePushEnvelope(JSON.parse(body));
    const { cluster: _default, ...fields } = key;
    assert.deepEqual(message, { v: 1, ...fields, reason: 'requeue', enqueuedAt: now.toISOString() });
    // A key of another cluster comes back as a v2 message naming it.
    const other = decodePushEnvelope(JSON.parse(requeueEnvelope({ ...key, cluster: 'eu' }, now).body));
    assert.deepEqual(other.message, {
      v: 2,
      cluster: 'eu',
      ...fields,
      reason: 'requeue',
      enqueuedAt: now.toISOString(),
    });
  });

  it('builds a Cloud Tasks HTTP task due at now + delay, with the OIDC token of the push identity', () => {
    const now = new Date('2026-11-23T10:00:00.250Z');
    const task = cloudTask(config, key, 1500, now);
    assert.deepEqual(task.scheduleTime, {
      seconds: Date.parse('2026-11-23T10:00:01Z') / 1000,
      nanos: 750_000_000,
    });
    assert.equal(task.httpRequest.url, config.LEVELSET_REQUEUE_URL);
    assert.equal(task.httpRequest.httpMethod, 'POST');
    assert.deepEqual(task.httpRequest.oidcToken, {
      serviceAccountEmail: 'levelset-push@p.iam.gserviceaccount.com',
      audience: config.LEVELSET_REQUEUE_URL,
    });
    assert.equal(decodePushEnvelope(JSON.parse(task.httpRequest.body.toString())).message.name, 'big');
    assert.match(
      task.name,
      /^projects\/p\/locations\/europe-west1\/queues\/levelset-requeue\/tasks\/[0-9a-f]{32}-\d+$/,
    );
  });

  it('collapses requeues of one key due in the same second (ALREADY_EXISTS is success), not of others', async () => {
    const names: string[] = [];
    const client: TasksClient = {
      async createTask({ task }) {
        if (names.includes(task.name)) throw Object.assign(new Error('exists'), { code: 6 });
        names.push(task.name);
        return task;
      },
    };
    const requeuer = cloudTasksRequeuer(config, client);
    await requeuer.requeue(key, 60_000);
    await requeuer.requeue(key, 60_000);
    await requeuer.requeue({ ...key, name: 'other' }, 60_000);
    assert.ok(names.length >= 2 && names.length <= 3, names.join());
    const failing: TasksClient = {
      createTask: async () => Promise.reject(Object.assign(new Error('denied'), { code: 7 })),
    };
    await assert.rejects(cloudTasksRequeuer(config, failing).requeue(key, 1), /denied/);
  });
});
