import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { orderingKeyOf } from '../../core/contract/key.ts';
import { createLogger } from '../../core/log.ts';
import {
  ATTEMPT_ATTRIBUTE,
  decodePushEnvelope,
  keyMessageOf,
  RATE_LIMITED_ATTRIBUTE,
} from '../../core/message.ts';
import {
  cloudTask,
  cloudTasksRequeuer,
  PUBSUB_SCOPE,
  type RequeuedMessage,
  readRequeueConfig,
  requeuedMessage,
  type TasksClient,
  timerRequeuer,
} from '../../functions/runtime/requeue.ts';

const PUBLISH_URL = 'https://europe-west1-pubsub.googleapis.com/v1/projects/p/topics/levelset-keys:publish';
const config = readRequeueConfig({
  LEVELSET_REQUEUE: 'cloud-tasks',
  LEVELSET_REQUEUE_URL: PUBLISH_URL,
  LEVELSET_REQUEUE_QUEUE: 'projects/p/locations/europe-west1/queues/levelset-requeue',
  LEVELSET_REQUEUE_INVOKER: 'levelset-functions@p.iam.gserviceaccount.com',
}) as Extract<ReturnType<typeof readRequeueConfig>, { LEVELSET_REQUEUE: 'cloud-tasks' }>;
const key = { cluster: 'default', controller: 'customcluster', namespace: 'team-a', name: 'big' };
const message = keyMessageOf(key, 'requeue', '2026-11-23T10:00:00.000Z');

/** The push envelope Pub/Sub would make of a published message. */
const pushed = (m: RequeuedMessage) => ({
  message: { data: m.data, attributes: m.attributes, messageId: '1' },
});

describe('requeue', () => {
  it('defaults to none, and names every missing or invalid variable of a mechanism', () => {
    assert.equal(readRequeueConfig({}).LEVELSET_REQUEUE, 'none');
    assert.equal(readRequeueConfig({ LEVELSET_REQUEUE: 'local' }).LEVELSET_REQUEUE, 'local');
    assert.throws(
      () => readRequeueConfig({ LEVELSET_REQUEUE: 'cloud-tasks', LEVELSET_REQUEUE_URL: PUBLISH_URL }),
      /LEVELSET_REQUEUE_QUEUE.*LEVELSET_REQUEUE_INVOKER|LEVELSET_REQUEUE_INVOKER.*LEVELSET_REQUEUE_QUEUE/,
    );
    // The URL is the keys topic's publish method, never the function: a requeue goes through the ordered subscription.
    assert.throws(
      () =>
        readRequeueConfig({
          ...config,
          LEVELSET_REQUEUE_URL: 'https://levelset-reconcile-1.europe-west1.run.app/',
        }),
      /LEVELSET_REQUEUE_URL: a Pub\/Sub topics.publish URL/,
    );
    assert.throws(() => readRequeueConfig({ LEVELSET_REQUEUE: 'sqs' }), /invalid requeue configuration/);
  });

  it('publishes the key message as the relay does (its ordering key), with the attempt from the second on', () => {
    const first = requeuedMessage(message);
    assert.equal(first.orderingKey, orderingKeyOf(key));
    const decoded = decodePushEnvelope(pushed(first));
    const { cluster: _default, ...fields } = key;
    assert.deepEqual(decoded.message, { v: 1, ...fields, reason: 'requeue', enqueuedAt: message.enqueuedAt });
    assert.equal(decoded.attributes[ATTEMPT_ATTRIBUTE], undefined);
    assert.equal(decoded.attempt, 1);
    const third = decodePushEnvelope(pushed(requeuedMessage(message, { attempt: 3, rateLimited: 0 })));
    assert.equal(third.attributes[ATTEMPT_ATTRIBUTE], '3');
    assert.equal(third.attributes[RATE_LIMITED_ATTRIBUTE], undefined);
    assert.equal(third.attempt, 3);
    // A rate-limited key: its rate limits, apart from its attempt.
    const limited = decodePushEnvelope(pushed(requeuedMessage(message, { attempt: 1, rateLimited: 4 })));
    assert.deepEqual(
      [limited.attributes[ATTEMPT_ATTRIBUTE], limited.attributes[RATE_LIMITED_ATTRIBUTE]],
      [undefined, '4'],
    );
    assert.deepEqual([limited.attempt, limited.rateLimited], [1, 4]);
    // A key of another cluster comes back as a v2 message naming it.
    const other = decodePushEnvelope(
      pushed(requeuedMessage(keyMessageOf({ ...key, cluster: 'eu' }, 'requeue', message.enqueuedAt))),
    );
    assert.deepEqual(other.message, {
      v: 2,
      cluster: 'eu',
      ...fields,
      reason: 'requeue',
      enqueuedAt: message.enqueuedAt,
    });
  });

  it('builds a Cloud Tasks task due at now + delay that publishes to the keys topic with an OAuth token', () => {
    const now = new Date('2026-11-23T10:00:00.250Z');
    const task = cloudTask(config, message, 1500, { now, counts: { attempt: 2, rateLimited: 1 } });
    assert.deepEqual(task.scheduleTime, {
      seconds: Date.parse('2026-11-23T10:00:01Z') / 1000,
      nanos: 750_000_000,
    });
    assert.equal(task.httpRequest.url, PUBLISH_URL);
    assert.equal(task.httpRequest.httpMethod, 'POST');
    assert.deepEqual(task.httpRequest.oauthToken, {
      serviceAccountEmail: 'levelset-functions@p.iam.gserviceaccount.com',
      scope: PUBSUB_SCOPE,
    });
    const body = JSON.parse(task.httpRequest.body.toString()) as { messages: RequeuedMessage[] };
    assert.equal(body.messages.length, 1);
    const [published] = body.messages as [RequeuedMessage];
    assert.equal(published.orderingKey, orderingKeyOf(key));
    const decoded = decodePushEnvelope(pushed(published));
    assert.equal(decoded.message.name, 'big');
    assert.deepEqual([decoded.attempt, decoded.rateLimited], [2, 1]);
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
    await requeuer.requeue(message, 60_000);
    await requeuer.requeue(message, 60_000);
    await requeuer.requeue({ ...message, name: 'other' }, 60_000);
    assert.ok(names.length >= 2 && names.length <= 3, names.join());
    const failing: TasksClient = {
      createTask: async () => Promise.reject(Object.assign(new Error('denied'), { code: 7 })),
    };
    await assert.rejects(cloudTasksRequeuer(config, failing).requeue(message, 1), /denied/);
  });

  it('local: publishes when the timer is due, never before; close cancels what is pending', async () => {
    const published: RequeuedMessage[] = [];
    let done!: () => void;
    const first = new Promise<void>((resolve) => {
      done = resolve;
    });
    const requeuer = timerRequeuer({
      publish: async (m) => {
        published.push(m);
        done();
      },
      logger: createLogger('test'),
    });
    await requeuer.requeue(message, 0, { attempt: 2, rateLimited: 0 });
    await requeuer.requeue({ ...message, name: 'later' }, 3_600_000);
    assert.equal(published.length, 0, 'not before its timer');
    await first;
    requeuer.close();
    assert.deepEqual(
      published.map((m) => [decodePushEnvelope(pushed(m)).message.name, m.attributes[ATTEMPT_ATTRIBUTE]]),
      [['big', '2']],
    );
  });
});
