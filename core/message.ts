/**
 * The key message: the only thing that crosses Pub/Sub (docs/architecture.md "Contracts").
 *
 * A message names *which* key to reconcile, never what changed: the reconcile reads the whole
 * current state (edge-triggered, level-driven).
 */
import { type Context, context, propagation, ROOT_CONTEXT, type TextMapGetter } from '@opentelemetry/api';
import * as z from 'zod';
import { type ControllerKey, DEFAULT_CLUSTER, orderingKeyOf } from './contract/key.ts';
import { clusterId, controllerName, dns1123Label, dns1123Subdomain } from './contract/names.ts';
import { isWellFormedResourceVersion } from './k8s/resource-version.ts';

/**
 * An object name: a DNS-1123 subdomain, as apimachinery's `NameIsDNSSubdomain` accepts it. Every
 * primary kind of the registry names its objects so: Secrets, Pods, Deployments and custom resources
 * (the apiextensions-apiserver validates CR names as subdomains). A future primary kind with another
 * rule (e.g. RBAC's path-segment names such as `system:viewer`) must widen this.
 */
export const objectName = dns1123Subdomain;

/** A namespace (`ValidateNamespaceName`: a DNS-1123 label), or `""` for a cluster-scoped key. */
export const namespaceName = z.union([z.literal(''), dns1123Label]);

/**
 * Why a key was enqueued: a watch event (relay), the periodic resync, an operator, a reconcile
 * that asked to come back later (`requeueAfterMs`, functions/runtime/requeue.ts), or a change made to a
 * cloud resource outside Levelset, reported by Cloud Audit Logs (`audit-log`, functions/runtime/audit-log.ts).
 */
export const enqueueReason = z.enum(['watch', 'resync', 'manual', 'requeue', 'audit-log']);
export type EnqueueReason = z.infer<typeof enqueueReason>;

const keyFields = {
  controller: controllerName,
  namespace: namespaceName,
  name: objectName,
  reason: enqueueReason,
  enqueuedAt: z.iso.datetime(),
};

/**
 * Version 1 of the key message: a key of the default cluster ({@link DEFAULT_CLUSTER}). Strict:
 * unknown fields are malformed. `namespace` is `""` for cluster-scoped keys, else a DNS-1123 label;
 * `name` a DNS-1123 subdomain. `enqueuedAt` is an RFC 3339 timestamp (UTC).
 */
export const keyMessageV1Schema = z.strictObject({ v: z.literal(1), ...keyFields });

/** Version 2: version 1 plus `cluster`, the id (a DNS-1123 label) of the cluster the key is in. */
export const keyMessageV2Schema = z.strictObject({ v: z.literal(2), cluster: clusterId, ...keyFields });

/**
 * The key message, either version. Unknown versions are malformed. Publishers write v1 for a key of
 * the default cluster and v2 for any other ({@link keyMessageOf}), so a single-cluster deployment's
 * messages are those of before clusters existed, and functions of either age read them during a
 * rollout.
 */
export const keyMessageSchema = z.discriminatedUnion('v', [keyMessageV1Schema, keyMessageV2Schema]);
export type KeyMessage = z.infer<typeof keyMessageSchema>;

/** The cluster a key message names: its `cluster` (v2), else {@link DEFAULT_CLUSTER} (v1). */
export function clusterOf(m: KeyMessage): string {
  return m.v === 2 ? m.cluster : DEFAULT_CLUSTER;
}

/** The key a message names, its cluster included. */
export function keyOfMessage(m: KeyMessage): ControllerKey {
  return { cluster: clusterOf(m), controller: m.controller, namespace: m.namespace, name: m.name };
}

/** The key message of `key`: v1 for the default cluster, v2 naming any other. Not validated here ({@link encodeKeyMessage} does). */
export function keyMessageOf(key: ControllerKey, reason: EnqueueReason, enqueuedAt: string): KeyMessage {
  const fields = { controller: key.controller, namespace: key.namespace, name: key.name, reason, enqueuedAt };
  return key.cluster === DEFAULT_CLUSTER ? { v: 1, ...fields } : { v: 2, cluster: key.cluster, ...fields };
}

/**
 * Pub/Sub attributes of a key message: they repeat `cluster`, `controller` and `reason` for
 * filters and logs; {@link ATTEMPT_ATTRIBUTE} and {@link RATE_LIMITED_ATTRIBUTE} on a retried key.
 */
export type KeyMessageAttributes = {
  cluster: string;
  controller: string;
  reason: EnqueueReason;
  [ATTEMPT_ATTRIBUTE]?: string;
  [RATE_LIMITED_ATTRIBUTE]?: string;
  [RESOURCE_VERSION_ATTRIBUTE]?: string;
};

/**
 * The attribute of a retried key message (functions/runtime/retry.ts): which attempt of the key this
 * delivery is, from 1, in decimal. `reconcile` acknowledges a failed attempt and publishes the key
 * again with the next number, so the count lives in the message, not in an instance. Absent (every
 * message of the relay, the resync and an operator, and of functions before retries existed): the
 * first attempt.
 */
export const ATTEMPT_ATTRIBUTE = 'attempt';

/**
 * The attribute naming the key's primary object's `resourceVersion` as its publisher last saw it
 * (the relay's informer, the resync's LIST): the reconcile reads the primary not older than it
 * (core/contract/controller.ts `ReconcileContext.primaryResourceVersion`). Absent when the
 * publisher holds no version of it. A hint, never a key's identity: one that is not a resourceVersion
 * as kube-apiserver writes them ({@link resourceVersionAttribute}) is ignored, the read consistent.
 */
export const RESOURCE_VERSION_ATTRIBUTE = 'resourceVersion';

/**
 * A resourceVersion as kube-apiserver writes them: well formed (core/k8s/resource-version.ts) and at
 * most 20 digits (an unsigned 64-bit number, etcd's revision).
 */
export const resourceVersionAttribute = z
  .string()
  .max(20)
  .refine(isWellFormedResourceVersion, 'a resourceVersion: decimal digits, no leading zero');

/** {@link ATTEMPT_ATTRIBUTE}'s value: a whole number from 1 to 100 (Pub/Sub's most delivery attempts), no sign or leading zero. */
export const attemptAttribute = z
  .string()
  .regex(/^[1-9][0-9]{0,2}$/, 'a whole number from 1, in decimal')
  .transform(Number)
  .pipe(z.number().max(100));

/**
 * The attribute of a key message retried after a rate limit (functions/runtime/retry.ts): how many
 * deliveries of the key a quota or rate limit refused since it last succeeded, from 1, in decimal
 * (the success's requeue, and every other publisher, writes none). Kept apart from
 * {@link ATTEMPT_ATTRIBUTE}, whose count leads to the dead letter: a rate limit is never given up
 * on. Absent: none (every message of before, which therefore decodes; an attribute rather than a
 * field, so functions of before, whose schema is strict, accept it during a rollout and ignore it).
 */
export const RATE_LIMITED_ATTRIBUTE = 'rateLimited';

/** {@link RATE_LIMITED_ATTRIBUTE}'s value: a whole number from 1 to 999 999 999, no sign or leading zero. */
export const rateLimitedAttribute = z
  .string()
  .regex(/^[1-9][0-9]{0,8}$/, 'a whole number from 1, in decimal')
  .transform(Number);

/**
 * What a key's message carries of its retries ({@link ATTEMPT_ATTRIBUTE}, {@link
 * RATE_LIMITED_ATTRIBUTE}): the attempt (from 1) and the rate limits (from 0). The input of
 * the one retry backoff of both modes (functions/runtime/retry.ts `nextRetry`).
 */
export interface RetryCounts {
  attempt: number;
  rateLimited: number;
}

/** The counts of a key's first delivery, and of every message without the attributes. */
export const FIRST_DELIVERY: RetryCounts = { attempt: 1, rateLimited: 0 };

/** What a publisher hands to Pub/Sub for one key message. */
export interface EncodedKeyMessage {
  data: Buffer;
  attributes: KeyMessageAttributes;
  orderingKey: string;
}

/**
 * Validates and encodes a key message for publishing, with the primary's `resourceVersion`
 * ({@link RESOURCE_VERSION_ATTRIBUTE}) when given and valid.
 * @throws {z.ZodError} when `m` does not satisfy {@link keyMessageSchema}.
 */
export function encodeKeyMessage(m: KeyMessage, resourceVersion?: string): EncodedKeyMessage {
  const valid = keyMessageSchema.parse(m);
  const attributes: KeyMessageAttributes = {
    cluster: clusterOf(valid),
    controller: valid.controller,
    reason: valid.reason,
  };
  if (resourceVersion !== undefined && resourceVersionAttribute.safeParse(resourceVersion).success)
    attributes[RESOURCE_VERSION_ATTRIBUTE] = resourceVersion;
  return {
    data: Buffer.from(JSON.stringify(valid), 'utf8'),
    attributes,
    orderingKey: orderingKeyOf(keyOfMessage(valid)),
  };
}

/**
 * The message attribute that carries a key's W3C trace context (`traceparent`) across Pub/Sub: the
 * name the Pub/Sub client's own OpenTelemetry support writes and Google's subscribers read
 * (`@google-cloud/pubsub` `telemetry-tracing.ts`). `googclient_tracestate` carries `tracestate`.
 */
export const TRACE_CONTEXT_ATTRIBUTE = 'googclient_traceparent';
const PREFIX = 'googclient_';

const attributeGetter: TextMapGetter<Record<string, string>> = {
  get: (carrier, key) => carrier[`${PREFIX}${key}`],
  keys: (carrier) =>
    Object.keys(carrier)
      .filter((k) => k.startsWith(PREFIX))
      .map((k) => k.slice(PREFIX.length)),
};

/**
 * The trace context a key message's attributes carry ({@link TRACE_CONTEXT_ATTRIBUTE}), as the
 * globally registered propagator reads it; `ROOT_CONTEXT` when there is none or tracing is off.
 */
export function traceContextOf(attributes: Record<string, string> | undefined): Context {
  return attributes ? propagation.extract(ROOT_CONTEXT, attributes, attributeGetter) : ROOT_CONTEXT;
}

/** `attributes` plus the active trace context as {@link TRACE_CONTEXT_ATTRIBUTE} (unchanged when tracing is off). */
export function withTraceContext<T extends Record<string, string>>(attributes: T): T {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier, {
    set: (c, key, value) => {
      c[`${PREFIX}${key}`] = value;
    },
  });
  return { ...attributes, ...carrier };
}

/**
 * Attributes Pub/Sub adds to a dead-lettered message (Pub/Sub docs: "Dead-letter topics"); the
 * local push proxy (local/push-proxy.ts) adds the same.
 */
export const DEAD_LETTER_ATTRIBUTES = {
  deliveryAttempts: 'CloudPubSubDeadLetterSourceDeliveryCount',
  sourcePublishTime: 'CloudPubSubDeadLetterSourceTopicPublishTime',
  sourceSubscription: 'CloudPubSubDeadLetterSourceSubscription',
  sourceSubscriptionProject: 'CloudPubSubDeadLetterSourceSubscriptionProject',
} as const;

/**
 * The body Pub/Sub POSTs to a push endpoint (Pub/Sub docs: "Receive messages from push
 * subscriptions"). `data` is base64. The emulator omits `orderingKey` and `deliveryAttempt`.
 */
export const pushEnvelopeSchema = z.object({
  message: z.object({
    /** Standard base64 with padding (RFC 4648 §4), as Pub/Sub writes it. */
    data: z.base64(),
    attributes: z.record(z.string(), z.string()).optional(),
    messageId: z.string().optional(),
    message_id: z.string().optional(),
    publishTime: z.string().optional(),
    orderingKey: z.string().optional(),
  }),
  subscription: z.string().optional(),
  deliveryAttempt: z.number().int().optional(),
});

// Made once: a zod schema costs more to build than to run (decodePushEnvelope runs per delivery).
const optionalAttempt = attemptAttribute.optional();
const optionalRateLimited = rateLimitedAttribute.optional();

/** A push body or key message that can never be processed: acknowledged, logged, never retried. */
export class MalformedMessageError extends Error {
  override readonly name = 'MalformedMessageError';
  readonly issues: string[];
  constructor(message: string, issues: string[] = []) {
    super(issues.length ? `${message}: ${issues.join('; ')}` : message);
    this.issues = issues;
  }
}

function issuesOf(err: z.ZodError): string[] {
  return err.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
}

/** A decoded delivery: the key message and what the push envelope says about it. */
export interface Delivery extends RetryCounts {
  message: KeyMessage;
  /** `""` when absent. */
  messageId: string;
  /** The message's attributes (`{}` when absent). */
  attributes: Record<string, string>;
  /** Pub/Sub's delivery attempt (from 1), when the subscription has a dead-letter policy (locally: the push proxy). */
  deliveryAttempt?: number;
  /** The key's attempt ({@link ATTEMPT_ATTRIBUTE}; 1 when absent). */
  attempt: number;
  /** The key's rate limits ({@link RATE_LIMITED_ATTRIBUTE}; 0 when absent). */
  rateLimited: number;
  /** The primary's resourceVersion its publisher saw ({@link RESOURCE_VERSION_ATTRIBUTE}), when present and valid. */
  resourceVersion?: string;
  /** The message's publish time (RFC 3339), when the envelope has it. */
  publishTime?: string;
  /** The subscription that pushed it (full name), when the envelope says. */
  subscription?: string;
}

/**
 * Decodes a Pub/Sub push envelope into its key message.
 * @returns the key message, the envelope's `messageId`, attributes, delivery attempt, publish time and
 *   subscription, and the key's retry counts ({@link RetryCounts}).
 * @throws {MalformedMessageError} when the envelope, its base64 data, its JSON, the key message,
 *   its {@link ATTEMPT_ATTRIBUTE} or its {@link RATE_LIMITED_ATTRIBUTE} is invalid.
 */
export function decodePushEnvelope(body: unknown): Delivery {
  const envelope = pushEnvelopeSchema.safeParse(body);
  if (!envelope.success)
    throw new MalformedMessageError('not a Pub/Sub push envelope', issuesOf(envelope.error));
  const { data } = envelope.data.message;
  const messageId = envelope.data.message.messageId ?? envelope.data.message.message_id ?? '';
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
  } catch {
    throw new MalformedMessageError('message data is not base64-encoded JSON');
  }
  const parsed = keyMessageSchema.safeParse(json);
  if (!parsed.success) throw new MalformedMessageError('not a v1 or v2 key message', issuesOf(parsed.error));
  const attributes = envelope.data.message.attributes ?? {};
  const counted = (name: string, schema: z.ZodOptional<z.ZodType<number, string>>, absent: number) => {
    const count = schema.safeParse(attributes[name]);
    if (!count.success) throw new MalformedMessageError(`invalid "${name}" attribute`, issuesOf(count.error));
    return count.data ?? absent;
  };
  const delivery: Delivery = {
    message: parsed.data,
    messageId,
    attributes,
    attempt: counted(ATTEMPT_ATTRIBUTE, optionalAttempt, 1),
    rateLimited: counted(RATE_LIMITED_ATTRIBUTE, optionalRateLimited, 0),
  };
  // A hint: one that is not a resourceVersion leaves the reads consistent, and the key is reconciled.
  const resourceVersion = resourceVersionAttribute.safeParse(attributes[RESOURCE_VERSION_ATTRIBUTE]);
  if (resourceVersion.success) delivery.resourceVersion = resourceVersion.data;
  if (envelope.data.deliveryAttempt !== undefined) delivery.deliveryAttempt = envelope.data.deliveryAttempt;
  if (envelope.data.message.publishTime !== undefined)
    delivery.publishTime = envelope.data.message.publishTime;
  if (envelope.data.subscription !== undefined) delivery.subscription = envelope.data.subscription;
  return delivery;
}
