/**
 * Drift seen in Cloud Audit Logs: a controller of cloud resources declares which resources it owns,
 * as Google names them, and how such a name leads back to the key of the object that owns it. A
 * change made outside Levelset (a topic deleted in the console, its labels changed with gcloud) is
 * then an Admin Activity entry that the `auditLog` function (functions/runtime/audit-log.ts) turns into that
 * key, reconciled within seconds instead of at the next resync (docs/external-resources.md, "Drift
 * from Cloud Audit Logs"). The log sink's filter is generated from the same declarations
 * (cli/build/generate-manifests.ts).
 *
 *   auditLog: {
 *     serviceName: 'pubsub.googleapis.com',
 *     resourceNames: ['projects/{project}/topics/{topic}'],
 *     keyOfName: ({ ids }) => keyOfTopicId(ids.topic),        // the name says it: no read
 *     namesOf: (topic) => [topic.status?.topic],              // else: a LIST of the primary
 *   },
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { AuditLogSource, ResourceType, ResyncContext } from '../../core/contract/controller.ts';
import type { Key, MappedKey } from '../../core/contract/key.ts';
import { listPaged } from '../../core/k8s/list.ts';

/** A resource name matched by one of a declaration's patterns. */
export interface ResourceNameMatch {
  /** The pattern that matched, e.g. `projects/{project}/topics/{topic}`. */
  pattern: string;
  /** The whole resource name, e.g. `projects/p/topics/k8s.team-a.orders`. */
  name: string;
  /** The pattern's variables, e.g. `{ project: 'p', topic: 'k8s.team-a.orders' }`. */
  ids: Record<string, string>;
}

/** What a controller declares as `auditLog` (`defineController`). */
export interface AuditLogDeclaration {
  /** The Google service of the resources (`protoPayload.serviceName`), e.g. `pubsub.googleapis.com`. */
  serviceName: string;
  /**
   * Google resource names (AIP-122): literal collection IDs alternating with `{variable}` segments,
   * e.g. `projects/{project}/topics/{topic}`, as the audit log's `protoPayload.resourceName` gives them.
   */
  resourceNames: readonly string[];
  /**
   * The owner's key when the name alone says it (the controller names the resource after its
   * object, e.g. the Topic's default ID `k8s.<namespace>.<name>`); `undefined` when it does not. Pure
   * and cheap: no read. A key naming no object costs one reconcile that finds nothing.
   */
  keyOfName?(match: ResourceNameMatch): Key | undefined;
  /**
   * The full resource names an object of the primary holds (what it wrote to its status, e.g.
   * `status.topic`): for a name {@link keyOfName} does not resolve, the kit LISTs the primary (whole
   * objects, paged) and returns the keys of the objects holding it. A status keeps the name after
   * the resource is deleted, so a deletion is found too. Pure; one that throws holds nothing.
   */
  namesOf?(object: KubernetesObject): readonly (string | undefined)[];
}

const SERVICE_NAME = /^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$/;
const LITERAL = /^[a-zA-Z][a-zA-Z0-9]*$/;
const VARIABLE = /^\{([a-z][a-zA-Z0-9_]*)\}$/;

/**
 * The segments of a resource name pattern.
 * @throws {Error} unless it alternates literal collection IDs and `{variable}`s, starting with a literal
 */
function segmentsOf(pattern: string): ({ literal: string } | { variable: string })[] {
  const parts = pattern.split('/');
  if (parts.length < 2 || parts.length % 2 !== 0)
    throw new Error(
      `resource name pattern "${pattern}": expected collection/{id} pairs, e.g. projects/{project}`,
    );
  return parts.map((part, i) => {
    const variable = VARIABLE.exec(part)?.[1];
    if (i % 2 === 1 && variable) return { variable };
    if (i % 2 === 0 && LITERAL.test(part)) return { literal: part };
    throw new Error(
      `resource name pattern "${pattern}": segment ${i + 1} "${part}" must be ${i % 2 ? 'a {variable}' : 'a collection ID'}`,
    );
  });
}

/**
 * The regular expression (RE2 and JavaScript alike) of the names a pattern matches, as a string: a
 * variable is one segment (`[^/]+`), e.g. `^projects/[^/]+/topics/[^/]+$`; the log sink's filter
 * uses it as is (Logging query language, `=~`).
 * @throws {Error} for a pattern of the wrong shape
 */
export function resourceNameRegex(pattern: string): string {
  const source = segmentsOf(pattern)
    .map((s) => ('literal' in s ? s.literal : '[^/]+'))
    .join('/');
  return `^${source}$`;
}

/** The variables of `name` under `pattern`, or `undefined` when it does not match. @throws {Error} for a pattern of the wrong shape */
export function matchResourceName(pattern: string, name: string): Record<string, string> | undefined {
  const segments = segmentsOf(pattern);
  const parts = name.split('/');
  if (parts.length !== segments.length) return undefined;
  const ids: Record<string, string> = {};
  for (const [i, s] of segments.entries()) {
    const part = parts[i] ?? '';
    if ('literal' in s) {
      if (part !== s.literal) return undefined;
    } else if (part === '') return undefined;
    else ids[s.variable] = part;
  }
  return ids;
}

/**
 * The contract's `Controller.auditLog` from a definition's: `keysOf` matches the name against the
 * patterns (none: `[]`), asks `keyOfName`, then looks the name up in `namesOf` of every primary.
 * @throws {Error} for a service name or pattern of the wrong shape, or neither `keyOfName` nor `namesOf`
 */
export function compileAuditLog(
  controller: string,
  primary: ResourceType,
  declaration: AuditLogDeclaration,
): AuditLogSource {
  const { serviceName, resourceNames, keyOfName, namesOf } = declaration;
  if (!SERVICE_NAME.test(serviceName))
    throw new Error(
      `${controller}: auditLog.serviceName "${serviceName}" is not a service name (e.g. pubsub.googleapis.com)`,
    );
  if (resourceNames.length === 0) throw new Error(`${controller}: auditLog.resourceNames is empty`);
  for (const pattern of resourceNames) segmentsOf(pattern);
  if (!keyOfName && !namesOf) throw new Error(`${controller}: auditLog needs keyOfName or namesOf`);
  const holds = (object: KubernetesObject, name: string) => {
    try {
      return namesOf?.(object).includes(name) ?? false;
    } catch {
      return false;
    }
  };
  return {
    serviceName,
    resourceNames: [...resourceNames],
    async keysOf(name: string, ctx: ResyncContext): Promise<MappedKey[]> {
      const match = resourceNames
        .map((pattern) => ({ pattern, name, ids: matchResourceName(pattern, name) }))
        .find((m): m is ResourceNameMatch => m.ids !== undefined);
      if (!match) return [];
      const key = keyOfName?.(match);
      if (key) return [{ namespace: key.namespace, name: key.name }];
      if (!namesOf) return [];
      const keys: MappedKey[] = [];
      for await (const object of listPaged(ctx.kubeConfig, primary))
        if (holds(object, name))
          keys.push({ namespace: object.metadata?.namespace ?? '', name: object.metadata?.name ?? '' });
      return keys;
    },
  };
}
