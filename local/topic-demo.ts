/**
 * The Topic controller's part of the `npm start` demo: a Topic applied into namespace `demo`, its
 * topic and subscription appearing in the Pub/Sub emulator (in the controller's own project, never
 * the keys project); the topic deleted out of band, as in the console, and the Admin Activity entry
 * Cloud Audit Logs would write published (local/audit-log.ts), so the topic is recreated at once,
 * not at the next resync; then the Topic deleted and the topic gone with it (its finalizer at work).
 */
import { PubSub } from '@google-cloud/pubsub';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { emulatorClientOptions } from '../core/publish.ts';
import { googleCloudConfig } from '../functions/kit/google-cloud.ts';
import { waitFor } from '../functions/kit/wait.ts';
import { auditLogEntry, publishAuditLogEntry } from './audit-log.ts';
import type { PubSubEmulator } from './pubsub-emulator.ts';

const topics = { group: 'pubsub.levelset.dev', version: 'v1alpha1', plural: 'topics', namespace: 'demo' };

/**
 * Plays the Topic demo against the stack's emulator (the audit log topic in its project), printing
 * each checked step with `say`.
 * @throws when a step does not converge within 30 s
 */
export async function topicDemo(
  kubeConfig: KubeConfig,
  emulator: Pick<PubSubEmulator, 'host' | 'projectId'>,
  say: (line: string) => void,
): Promise<void> {
  const emulatorHost = emulator.host;
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const { project } = googleCloudConfig({ PUBSUB_EMULATOR_HOST: emulatorHost });
  const pubsub = new PubSub({ projectId: project, ...emulatorClientOptions(emulatorHost) });
  const timed = async (what: string, probe: () => Promise<unknown>) => {
    const started = Date.now();
    await waitFor(probe, { timeoutMs: 30_000, message: what });
    say(`demo        ✓ ${what} (${Date.now() - started} ms)`);
  };
  const topicIds = async () => (await pubsub.getTopics())[0].map((t) => t.name);
  const name = `projects/${project}/topics/k8s.demo.example-topic`;
  try {
    say('demo        creating Topic demo/example-topic (pubsub.levelset.dev/v1alpha1)');
    await custom
      .createNamespacedCustomObject({
        ...topics,
        body: {
          apiVersion: 'pubsub.levelset.dev/v1alpha1',
          kind: 'Topic',
          metadata: { name: 'example-topic' },
          spec: {
            labels: { team: 'demo' },
            subscriptions: [{ id: 'example-topic-worker', ackDeadlineSeconds: 30 }],
          },
        },
      })
      .catch((err: { code?: number }) => {
        if (err.code !== 409) throw err;
      });
    await timed(
      `topic ${name} and its subscription in the emulator, finalizer levelset.dev/topic on the Topic`,
      async () => {
        const topic = (await custom.getNamespacedCustomObject({ ...topics, name: 'example-topic' })) as {
          metadata?: { finalizers?: string[] };
        };
        const [subscription] = await pubsub.subscription('example-topic-worker').exists();
        return (
          topic.metadata?.finalizers?.includes('levelset.dev/topic') &&
          (await topicIds()).includes(name) &&
          subscription
        );
      },
    );
    say(
      `demo        deleting topic ${name} out of band (as in the console), and publishing its audit log entry`,
    );
    await pubsub.topic(name).delete();
    await publishAuditLogEntry(
      emulatorHost,
      emulator.projectId,
      auditLogEntry(project, {
        serviceName: 'pubsub.googleapis.com',
        methodName: 'google.pubsub.v1.Publisher.DeleteTopic',
        resourceName: name,
      }),
    );
    await timed(`topic ${name} recreated after its audit log entry was published`, async () =>
      (await topicIds()).includes(name),
    );
    say('demo        deleting Topic demo/example-topic');
    await custom.deleteNamespacedCustomObject({ ...topics, name: 'example-topic' });
    await timed(`topic ${name} deleted from the emulator, then the Topic gone`, async () => {
      if ((await topicIds()).includes(name)) return false;
      return custom.getNamespacedCustomObject({ ...topics, name: 'example-topic' }).then(
        () => false,
        (err: { code?: number }) => err.code === 404,
      );
    });
  } finally {
    await pubsub.close();
  }
}
