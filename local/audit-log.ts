/**
 * Cloud Audit Logs' stand-in for the local stack and the tests. There is no Cloud Logging here, so
 * nothing writes audit log entries on its own: whoever changes a cloud resource out of band locally
 * (the `npm start` Topic demo, a test deleting a topic in the emulator) publishes the entry a real
 * Admin Activity log would hold to the audit log topic, as the log sink would (terraform/audit-log.tf),
 * and the `auditLog` function takes it from there. The entry has the documented `LogEntry` shape with
 * an `AuditLog` `protoPayload`; it was not compared with entries Google Cloud wrote
 * (docs/external-resources.md says what was checked).
 */
import { PubSub } from '@google-cloud/pubsub';
import { emulatorClientOptions } from '../core/publish.ts';
import { AUDIT_LOG_TYPE, type AuditLogEntry } from '../functions/runtime/audit-log.ts';

/** The audit log sink's topic id (terraform/audit-log.tf names it `<name>-audit-log`). */
export const AUDIT_LOG_TOPIC = 'levelset-audit-log';

/** The local functions' service account: the principal of Levelset's own writes in a local entry. */
export const LOCAL_FUNCTIONS_SERVICE_ACCOUNT = 'levelset-functions@local-project.iam.gserviceaccount.com';

/** The principal of a change made out of band in a local entry: someone in the console. */
export const LOCAL_OPERATOR = 'operator@example.com';

/** What changed, and who changed it. */
export interface AuditLogChange {
  /** e.g. `pubsub.googleapis.com`. */
  serviceName: string;
  /** e.g. `google.pubsub.v1.Publisher.DeleteTopic`. */
  methodName: string;
  /** e.g. `projects/levelset-external/topics/k8s.demo.example-topic`. */
  resourceName: string;
  /** Default {@link LOCAL_OPERATOR}. */
  principalEmail?: string;
}

/**
 * The Admin Activity `LogEntry` of `change` in `project` (Cloud Logging's `LogEntry`, its
 * `protoPayload` an `AuditLog`): log name `projects/<project>/logs/cloudaudit.googleapis.com%2Factivity`,
 * severity `NOTICE`, an OK `status`.
 */
export function auditLogEntry(project: string, change: AuditLogChange, at: Date = new Date()): AuditLogEntry {
  const timestamp = at.toISOString();
  return {
    logName: `projects/${project}/logs/cloudaudit.googleapis.com%2Factivity`,
    insertId: `local-${at.getTime().toString(36)}-${Math.random().toString(36).slice(2, 10)}`,
    timestamp,
    receiveTimestamp: timestamp,
    severity: 'NOTICE',
    resource: { type: 'audited_resource', labels: { project_id: project, service: change.serviceName } },
    protoPayload: {
      '@type': AUDIT_LOG_TYPE,
      status: {},
      authenticationInfo: { principalEmail: change.principalEmail ?? LOCAL_OPERATOR },
      requestMetadata: { callerIp: '127.0.0.1' },
      serviceName: change.serviceName,
      methodName: change.methodName,
      resourceName: change.resourceName,
    },
  } as AuditLogEntry;
}

/**
 * Publishes `entry` (or any JSON body, e.g. a malformed one for a test) to the audit log topic of
 * the emulator at `emulatorHost`, in `projectId` (the stack's), as the log sink would.
 * @returns the message id
 */
export async function publishAuditLogEntry(
  emulatorHost: string,
  projectId: string,
  entry: unknown,
  topic: string = AUDIT_LOG_TOPIC,
): Promise<string> {
  const pubsub = new PubSub({ projectId, ...emulatorClientOptions(emulatorHost) });
  try {
    return await pubsub.topic(topic).publishMessage({ data: Buffer.from(JSON.stringify(entry)) });
  } finally {
    await pubsub.close();
  }
}
