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
 * Every delivery ends in one line with `auditLog` (what became of it): `published` (with `keys`
 * as ordering keys and their `messageIds`),
 * `own-write`, `unowned` (no controller owns the name, or no object holds it), `malformed`, `failed`.
 * A malformed push or entry is acknowledged (`204`): a bad entry never loops; a failed read or
 * publish answers `500`, so Pub/Sub retries it.
 */
import type { Request, Response } from '@google-cloud/functions-framework';
import type { KubeConfig } from '@kubernetes/client-node';
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import * as z from 'zod';
import type { Controller } from './contract/controller.ts';
import { type ControllerKey, DEFAULT_CLUSTER, keyString, orderingKeyOf } from './contract/key.ts';
import { type RequestRules, rejectRequest } from './http.ts';
import { errorText } from './k8s/errors.ts';
import { ATTR, SPAN, tracer } from './k8s/tracing.ts';
import type { Logger } from './log.ts';
import { keyMessageOf, pushEnvelopeSchema } from './message.ts';
import type { KeyPublisher } from './publish.ts';
import { flushTraces } from './tracing.ts';

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
 * Decodes a push envelope into the audit log entry it carries.
 * @returns the entry, or the issues that make it malformed
 */
export function decodeAuditLogPush(body: unknown): { entry: AuditLogEntry } | { issues: string[] } {
  const envelope = pushEnvelopeSchema.safeParse(body);
  if (!envelope.success)
    return { issues: envelope.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) };
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(envelope.data.message.data, 'base64').toString('utf8'));
  } catch {
    return { issues: ['message data is not base64-encoded JSON'] };
  }
  const entry = auditLogEntrySchema.safeParse(json);
  if (!entry.success)
    return { issues: entry.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`) };
  return { entry: entry.data };
}

export interface AuditLogHandlerDeps {
  controllers: readonly Controller[];
  /** The ids of every cluster of the registry (functions/clusters.ts); default `[default]`. */
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

/**
 * Builds the HTTP handler of the audit log sink's push subscription. A request that breaks the HTTP
 * rules ({@link rejectRequest}) is refused as `reconcile` refuses it (`401`, `405`, else `204`); a
 * malformed envelope or entry is `204` and one ERROR line; Levelset's own write, or a name no object
 * owns, is `204`; each owner's key is published (`204` once all are accepted); a failed lookup or
 * publish is `500` (Pub/Sub retries, then dead-letters).
 */
export function createAuditLogHandler(
  deps: AuditLogHandlerDeps,
): (req: Request, res: Response) => Promise<void> {
  return async (req, res) => {
    const done = (status: number, outcome: AuditLogOutcome, fields: object, message: string) => {
      const level = outcome === 'malformed' || outcome === 'failed' ? 'error' : 'info';
      deps.logger[level]({ auditLog: outcome, ...fields }, message);
      res.status(status).end();
    };
    const rejection = rejectRequest(req, deps.requestRules);
    if (rejection?.status === 401 || rejection?.status === 405) {
      if (rejection.status === 405) res.set('Allow', 'POST');
      done(rejection.status, 'malformed', { err: rejection.reason }, 'request refused');
      return;
    }
    const decoded = rejection ? { issues: [rejection.reason] } : decodeAuditLogPush(req.body);
    if ('issues' in decoded) {
      done(204, 'malformed', { err: decoded.issues.join('; ') }, 'malformed audit log entry dropped');
      return;
    }
    const { serviceName, methodName, resourceName, authenticationInfo } = decoded.entry.protoPayload;
    const principal = authenticationInfo?.principalEmail;
    const fields = { serviceName, methodName, resourceName, principal, insertId: decoded.entry.insertId };
    try {
      if (principal !== undefined && principal === deps.serviceAccount()) {
        done(204, 'own-write', fields, "Levelset's own write: dropped");
        return;
      }
      const owners = await ownersOf(deps, serviceName, resourceName);
      if (owners.length === 0) {
        done(204, 'unowned', fields, 'no object owns this resource');
        return;
      }
      const enqueuedAt = new Date().toISOString();
      const messageIds = await Promise.all(
        owners.map((owner) => publish(deps.publisher(), owner, enqueuedAt)),
      );
      const keys = owners.map(orderingKeyOf);
      done(204, 'published', { ...fields, keys, messageIds }, `published ${owners.length} keys`);
    } catch (err) {
      done(
        500,
        'failed',
        { ...fields, err: errorText(err) },
        'audit log entry not handled; Pub/Sub retries it',
      );
    }
    await flushTraces();
  };
}

/**
 * Publishes one owner's key under an `enqueue` span that starts its trace (`levelset.cause` `audit-log`).
 * @returns its message id
 */
async function publish(publisher: KeyPublisher, owner: ControllerKey, enqueuedAt: string): Promise<string> {
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
