/**
 * The `auditLog` function (Pub/Sub push from the audit log sink's topic): drift seen in Cloud Audit
 * Logs instead of found by polling. A change made to a managed cloud resource outside Levelset (a
 * topic deleted in the console) is an Admin Activity entry; the log sink (terraform/audit-log.tf,
 * its filter generated from the registry) publishes it to its topic, and this function maps the
 * entry's `protoPayload.resourceName` to the keys of the objects that own it (each controller's
 * `auditLog`, functions/kit/audit-log.ts) and publishes those keys to the keys topic as the relay
 * publishes any other (the same key message and ordering key, `reason: "audit-log"`), so the owner is
 * reconciled within seconds. Levelset's own writes are recognised by their caller
 * (`protoPayload.authenticationInfo.principalEmail` = `LEVELSET_FUNCTIONS_SERVICE_ACCOUNT`) and
 * dropped, so a reconcile never triggers itself.
 *
 * The in-process mode takes the same entries from a pull subscription of the same topic
 * (functions/runtime/audit-log-subscription.ts) and hands them to the same {@link handleAuditLogEntry}, which adds the keys to
 * its workqueues instead: one mapping, one filter of Levelset's own writes, one log line, both modes.
 *
 * Every entry ends in one line with `auditLog` (what became of it): `published` (with `keys`
 * as ordering keys and their `messageIds`; in-process: added to the workqueues),
 * `own-write`, `unowned` (no controller owns the name, or no object holds it), `malformed`, `failed`.
 * A malformed push or entry is acknowledged (`204`): a bad entry never loops; a failed read or
 * publish answers `500`, so Pub/Sub retries it.
 */
import type { Request, Response } from '@google-cloud/functions-framework';
import type { KubeConfig } from '@kubernetes/client-node';
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import * as z from 'zod';
import type { Controller } from '../../core/contract/controller.ts';
import { type ControllerKey, DEFAULT_CLUSTER, keyString, orderingKeyOf } from '../../core/contract/key.ts';
import { errorText } from '../../core/k8s/errors.ts';
import { ATTR, SPAN, tracer } from '../../core/k8s/tracing.ts';
import type { Logger } from '../../core/log.ts';
import { keyMessageOf, pushEnvelopeSchema } from '../../core/message.ts';
import type { KeyPublisher } from '../../core/publish.ts';
import { flushTraces } from '../../core/tracing.ts';
import { type RequestRules, rejectRequest } from './http.ts';

/** The `@type` of an audit log entry's `protoPayload` (Cloud Audit Logs, "AuditLog"). */
export const AUDIT_LOG_TYPE = 'type.googleapis.com/google.cloud.audit.AuditLog';

/**
 * A `LogEntry` of Cloud Audit Logs, as a log sink publishes it to Pub/Sub (the message's data, JSON:
 * Cloud Logging's `LogEntry` with `protoPayload` an `AuditLog`), reduced to what the function reads;
 * the entry's other fields (`resource`, `request`, `response`, …) are allowed and ignored.
 * `authenticationInfo.principalEmail` may be absent (a caller Google does not name).
 */
export const auditLogEntrySchema = z.object({
  logName: z.string().optional(),
  insertId: z.string().optional(),
  timestamp: z.string().optional(),
  protoPayload: z.object({
    '@type': z.literal(AUDIT_LOG_TYPE),
    serviceName: z.string().min(1),
    methodName: z.string().min(1),
    resourceName: z.string().min(1),
    authenticationInfo: z.object({ principalEmail: z.string().optional() }).optional(),
  }),
});
export type AuditLogEntry = z.infer<typeof auditLogEntrySchema>;

/** What became of one entry: the value of `auditLog` on its line. */
export type AuditLogOutcome = 'published' | 'own-write' | 'unowned' | 'malformed' | 'failed';

/**
 * Decodes a Pub/Sub message's data (the log sink writes the `LogEntry` as JSON) into the audit log
 * entry it carries: the push envelope's data once decoded, or a pulled message's (functions/runtime/audit-log-subscription.ts).
 * @returns the entry, or the issues that make it malformed
 */
export function decodeAuditLogData(data: Buffer): { entry: AuditLogEntry } | { issues: string[] } {
  let json: unknown;
  try {
    json = JSON.parse(data.toString('utf8'));
  } catch {
    return { issues: ['message data is not JSON'] };
  }
  const entry = auditLogEntrySchema.safeParse(json);
  if (!entry.success)
    return { issues: entry.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`) };
  return { entry: entry.data };
}

/**
 * Decodes a push envelope into the audit log entry it carries ({@link decodeAuditLogData}).
 * @returns the entry, or the issues that make it malformed
 */
export function decodeAuditLogPush(body: unknown): { entry: AuditLogEntry } | { issues: string[] } {
  const envelope = pushEnvelopeSchema.safeParse(body);
  if (!envelope.success)
    return { issues: envelope.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
  return decodeAuditLogData(Buffer.from(envelope.data.message.data, 'base64'));
}

export interface AuditLogHandlerDeps {
  controllers: readonly Controller[];
  /** The ids of every cluster of the registry (functions/runtime/clusters.ts); default `[default]`. */
  clusters?: () => readonly string[];
  /** The KubeConfig of a cluster of {@link clusters}. */
  kubeConfig: (cluster: string) => KubeConfig | undefined;
  /** The keys topic's publisher, with ordering keys (as the relay's). */
  publisher: () => KeyPublisher;
  /** The principal of Levelset's own writes. @throws {Error} when it is not configured */
  serviceAccount: () => string;
  logger: Logger;
  requestRules?: RequestRules;
}

/**
 * The keys of every object that owns `resourceName` of `serviceName`, in every cluster, without
 * repeats: each controller whose `auditLog` names the service is asked (a name its patterns do not
 * match gives none).
 * @throws the first error of a controller's lookup (a LIST that failed)
 */
export async function ownersOf(
  deps: Pick<AuditLogHandlerDeps, 'controllers' | 'clusters' | 'kubeConfig' | 'logger'>,
  serviceName: string,
  resourceName: string,
): Promise<ControllerKey[]> {
  const keys = new Map<string, ControllerKey>();
  for (const controller of deps.controllers) {
    if (controller.auditLog?.serviceName !== serviceName) continue;
    for (const cluster of deps.clusters?.() ?? [DEFAULT_CLUSTER]) {
      const kubeConfig = deps.kubeConfig(cluster);
      if (!kubeConfig) continue;
      const log = deps.logger.child({ cluster, controller: controller.name });
      for (const key of await controller.auditLog.keysOf(resourceName, { cluster, kubeConfig, log })) {
        const owner = { ...key, cluster: key.cluster ?? cluster, controller: controller.name };
        keys.set(orderingKeyOf(owner), owner);
      }
    }
  }
  return [...keys.values()];
}

/** What one entry's line says: its outcome, its fields and its message. */
export interface AuditLogHandled {
  outcome: AuditLogOutcome;
  fields: Record<string, unknown>;
  message: string;
}

/** What {@link handleAuditLogEntry} needs: the registry's clusters and the principal of Levelset's own writes. */
export type AuditLogMappingDeps = Pick<
  AuditLogHandlerDeps,
  'controllers' | 'clusters' | 'kubeConfig' | 'serviceAccount' | 'logger'
>;

/**
 * One decoded entry, the same way in both modes (the `auditLog` function and the in-process mode's
 * subscriber, functions/runtime/audit-log-subscription.ts): Levelset's own write (its principal is
 * {@link AuditLogHandlerDeps.serviceAccount}) is dropped; else the keys of the objects that own the
 * resource ({@link ownersOf}) are handed to `publisher` (serverless: the keys topic; in-process: the
 * workqueues), each under an `enqueue` span, with `reason: "audit-log"`. Writes the entry's one line
 * (`auditLog` = the outcome; ERROR for `failed`).
 * @returns the outcome: `failed` when a lookup or a publish threw (the caller has the entry delivered again)
 */
export async function handleAuditLogEntry(
  deps: AuditLogMappingDeps,
  entry: AuditLogEntry,
  publisher: Pick<KeyPublisher, 'publish'>,
): Promise<AuditLogHandled> {
  const { serviceName, methodName, resourceName, authenticationInfo } = entry.protoPayload;
  const principal = authenticationInfo?.principalEmail;
  const fields = { serviceName, methodName, resourceName, principal, insertId: entry.insertId };
  const handled = await (async (): Promise<AuditLogHandled> => {
    try {
      if (principal !== undefined && principal === deps.serviceAccount())
        return { outcome: 'own-write', fields, message: "Levelset's own write: dropped" };
      const owners = await ownersOf(deps, serviceName, resourceName);
      if (owners.length === 0) return { outcome: 'unowned', fields, message: 'no object owns this resource' };
      const enqueuedAt = new Date().toISOString();
      const messageIds = await Promise.all(owners.map((owner) => publish(publisher, owner, enqueuedAt)));
      const keys = owners.map(orderingKeyOf);
      return {
        outcome: 'published',
        fields: { ...fields, keys, messageIds },
        message: `published ${owners.length} keys`,
      };
    } catch (err) {
      return {
        outcome: 'failed',
        fields: { ...fields, err: errorText(err) },
        message: 'audit log entry not handled; it is delivered again',
      };
    }
  })();
  deps.logger[handled.outcome === 'failed' ? 'error' : 'info'](
    { auditLog: handled.outcome, ...handled.fields },
    handled.message,
  );
  return handled;
}

/**
 * Builds the HTTP handler of the audit log sink's push subscription. A request that breaks the HTTP
 * rules ({@link rejectRequest}) is refused as `reconcile` refuses it (`401`, `405`, else `204`); a
 * malformed envelope or entry is `204` and one ERROR line; then {@link handleAuditLogEntry}: `204`,
 * or `500` when it failed (Pub/Sub retries, then dead-letters).
 */
export function createAuditLogHandler(
  deps: AuditLogHandlerDeps,
): (req: Request, res: Response) => Promise<void> {
  return async (req, res) => {
    const malformed = (status: number, err: string, message: string) => {
      deps.logger.error({ auditLog: 'malformed' satisfies AuditLogOutcome, err }, message);
      res.status(status).end();
    };
    const rejection = rejectRequest(req, deps.requestRules);
    if (rejection?.status === 401 || rejection?.status === 405) {
      if (rejection.status === 405) res.set('Allow', 'POST');
      malformed(rejection.status, rejection.reason, 'request refused');
      return;
    }
    const decoded = rejection ? { issues: [rejection.reason] } : decodeAuditLogPush(req.body);
    if ('issues' in decoded) {
      malformed(204, decoded.issues.join('; '), 'malformed audit log entry dropped');
      return;
    }
    const { outcome } = await handleAuditLogEntry(deps, decoded.entry, deps.publisher());
    await flushTraces();
    res.status(outcome === 'failed' ? 500 : 204).end();
  };
}

/**
 * Publishes one owner's key under an `enqueue` span that starts its trace (`levelset.cause` `audit-log`).
 * @returns its message id
 */
async function publish(
  publisher: Pick<KeyPublisher, 'publish'>,
  owner: ControllerKey,
  enqueuedAt: string,
): Promise<string> {
  const span = tracer().startSpan(SPAN.enqueue, {
    root: true,
    kind: SpanKind.PRODUCER,
    attributes: {
      [ATTR.controller]: owner.controller,
      [ATTR.cluster]: owner.cluster,
      [ATTR.key]: keyString(owner),
      [ATTR.cause]: 'audit-log',
    },
  });
  try {
    return await context.with(trace.setSpan(ROOT_CONTEXT, span), () =>
      publisher.publish(keyMessageOf(owner, 'audit-log', enqueuedAt)),
    );
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: errorText(err) });
    throw err;
  } finally {
    span.end();
  }
}
