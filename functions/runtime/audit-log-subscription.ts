/**
 * The in-process mode's audit log path: drift seen from Cloud Audit Logs as in the serverless mode,
 * without the `auditLog` function. The log sink publishes its entries to its topic either way
 * (terraform/audit-log.tf; locally local/audit-log.ts); the in-process process pulls them from a
 * subscription of that topic (`LEVELSET_AUDIT_LOG_SUBSCRIPTION`, streaming pull) and hands each to
 * the same {@link handleAuditLogEntry} as the function: the same mapping of a resource name to its
 * owners' keys (each controller's `auditLog`), the same drop of Levelset's own writes, the same
 * line; the keys go to the controllers' workqueues with `reason: "audit-log"`.
 *
 * A malformed entry is logged and acknowledged (never redelivered); an entry whose lookup or
 * enqueue failed is nacked, so Pub/Sub delivers it again (and dead-letters it after the
 * subscription's attempts, when it has a dead-letter policy).
 */
import { type Message, PubSub, type Subscription } from '@google-cloud/pubsub';
import '../../core/pubsub-lease.ts';
import { errorText } from '../../core/k8s/errors.ts';
import { emulatorClientOptions, type KeyPublisher } from '../../core/publish.ts';
import {
  type AuditLogMappingDeps,
  type AuditLogOutcome,
  decodeAuditLogData,
  handleAuditLogEntry,
} from './audit-log.ts';

/** Where the in-process mode reads the audit log sink's entries. */
export interface AuditLogSubscriptionConfig {
  /** A subscription of the sink's topic: its id in {@link projectId}, or its full name `projects/<p>/subscriptions/<s>`. */
  subscription: string;
  /** The subscription's project, when {@link subscription} is an id. */
  projectId: string;
  /** `host:port` of a Pub/Sub emulator; default none (Google Cloud). */
  emulatorHost?: string;
  /** The principal of Levelset's own writes (`LEVELSET_FUNCTIONS_SERVICE_ACCOUNT`): their entries are dropped. */
  serviceAccount: string;
}

/** Entries handled at once (the subscriber's flow control): each may LIST a primary. */
export const AUDIT_LOG_MAX_MESSAGES = 10;

export interface AuditLogSubscriber {
  /** Stops pulling; entries being handled finish first. */
  close(): Promise<void>;
}

/**
 * Pulls the audit log subscription and hands every entry to {@link handleAuditLogEntry}, which adds
 * the owners' keys through `publisher`.
 * @throws {Error} when the subscription does not exist (checked at start, so a misconfiguration stops the process)
 */
export async function subscribeToAuditLog(
  config: AuditLogSubscriptionConfig,
  deps: Omit<AuditLogMappingDeps, 'serviceAccount'>,
  publisher: Pick<KeyPublisher, 'publish'>,
): Promise<AuditLogSubscriber> {
  const pubsub = new PubSub({
    projectId: config.projectId,
    ...(config.emulatorHost ? emulatorClientOptions(config.emulatorHost) : {}),
  });
  const mapping: AuditLogMappingDeps = { ...deps, serviceAccount: () => config.serviceAccount };
  let subscription: Subscription | undefined;
  try {
    subscription = pubsub.subscription(config.subscription, {
      flowControl: { maxMessages: AUDIT_LOG_MAX_MESSAGES, allowExcessMessages: false },
    });
    const [exists] = await subscription.exists();
    if (!exists) throw new Error(`audit log subscription ${subscription.name} does not exist`);
  } catch (err) {
    await pubsub.close();
    throw err;
  }
  const running = new Set<Promise<void>>();
  const handle = async (message: Message): Promise<void> => {
    const decoded = decodeAuditLogData(message.data);
    if ('issues' in decoded) {
      deps.logger.error(
        {
          auditLog: 'malformed' satisfies AuditLogOutcome,
          err: decoded.issues.join('; '),
          messageId: message.id,
        },
        'malformed audit log entry dropped',
      );
      message.ack();
      return;
    }
    const { outcome } = await handleAuditLogEntry(mapping, decoded.entry, publisher);
    if (outcome === 'failed') message.nack();
    else message.ack();
  };
  subscription.on('message', (message: Message) => {
    const run = handle(message).catch((err: unknown) => {
      deps.logger.error({ auditLog: 'failed', err: errorText(err) }, 'audit log entry not handled');
      message.nack();
    });
    running.add(run);
    void run.finally(() => running.delete(run));
  });
  // The client reopens its stream on retryable errors itself; what reaches here is logged.
  subscription.on('error', (err: unknown) =>
    deps.logger.warn({ err: errorText(err) }, 'audit log subscription error; the client retries'),
  );
  deps.logger.info({ subscription: subscription.name }, 'pulling the audit log subscription');
  const pulling = subscription;
  return {
    async close() {
      await pulling.close();
      await Promise.all(running);
      await pubsub.close();
    },
  };
}
