/**
 * Admission webhooks, declared beside controllers (docs/writing-a-controller.md "Admission
 * webhooks"): for a rule the CRD's schema and CEL cannot say (a lookup, a rule over several objects,
 * a default computed from elsewhere), a `validate` that allows or denies, or a `mutate` that returns
 * the changed object, the kit computing the JSON Patch (fast-json-patch's `compare`). The project's
 * registry exports them as `webhooks`; the `admission` function serves each at `/<name>`,
 * `levelset build` writes its configuration (core/contract/admission.ts).
 *
 *   export const fooReplicas = defineValidatingWebhook({
 *     name: 'foo-replicas',
 *     rules: [{ resource: fooType, operations: ['CREATE', 'UPDATE'] }],
 *     validate: ({ object }) =>
 *       (object?.spec?.replicas ?? 0) <= 10 ? undefined : { allowed: false, message: 'replicas must be at most 10' },
 *   });
 *
 * Safe by default: `failurePolicy: 'Fail'` (kube-apiserver's default: a broken webhook refuses
 * rather than lets through), `timeoutSeconds: 5` (kube-apiserver's default is 10; a warm Cloud Run
 * instance answers in milliseconds, and a short timeout bounds how long a failing webhook holds a
 * write), `matchPolicy: 'Equivalent'`, `reinvocationPolicy: 'Never'`.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import fjp from 'fast-json-patch';
import type {
  AdmissionContext,
  AdmissionOperation,
  AdmissionRequest,
  AdmissionResponse,
  AdmissionWebhook,
  LabelSelector,
  WebhookRule,
} from '../../core/contract/admission.ts';
import type { ResourceType } from '../../core/contract/controller.ts';
import { isDNS1123Label } from '../../core/contract/names.ts';

/** One rule: a resource type (the kit's `resources` table or `customResource`) and the operations on it. */
export interface WebhookRuleDefinition<T extends KubernetesObject = KubernetesObject> {
  resource: ResourceType<T>;
  operations: readonly AdmissionOperation[];
  /** A subresource instead of the resource itself (`status`, `scale`). */
  subresource?: string;
}

/** What both kinds of webhook declare. */
export interface WebhookDefinitionBase<T extends KubernetesObject> {
  /** Unique in the project, a DNS-1123 label (at most 63 characters): its path, its label in logs and metrics. */
  name: string;
  rules: readonly WebhookRuleDefinition<T>[];
  /** Default `Fail`: a webhook that cannot answer refuses the write (kube-apiserver's default). */
  failurePolicy?: 'Fail' | 'Ignore';
  /** Seconds the API server waits, 1–30; default 5. The handler gets 80% of it (core/admission.ts). */
  timeoutSeconds?: number;
  /** Default `Equivalent`: also called for the same resource through another group/version. */
  matchPolicy?: 'Exact' | 'Equivalent';
  /** Only objects in namespaces matching it (ANDed with the build's exclusion of `kube-system` and Levelset's namespace). */
  namespaceSelector?: LabelSelector;
  /** Only objects whose labels match it. */
  objectSelector?: LabelSelector;
}

/** A validating webhook's verdict: `undefined` (or `{ allowed: true }`) admits. */
export type ValidationResult =
  | undefined
  | { allowed: true; warnings?: string[] }
  | {
      allowed: false;
      /** Shown to the client after `admission webhook "<name>.levelset.dev" denied the request: `. */
      message: string;
      /** metav1.StatusReason, e.g. `Invalid`; default `Forbidden` (kube-apiserver's). */
      reason?: string;
      /** HTTP code the client gets, 400–599; default 403 (kube-apiserver's). */
      code?: number;
      warnings?: string[];
    };

export interface ValidatingWebhookDefinition<T extends KubernetesObject = KubernetesObject>
  extends WebhookDefinitionBase<T> {
  /** Allow or deny; a throw is answered per `failurePolicy`. */
  validate(request: AdmissionRequest<T>, ctx: AdmissionContext): ValidationResult | Promise<ValidationResult>;
}

/** A mutating webhook's answer: the changed object (`undefined`: unchanged), or it with warnings. */
export type MutationResult<T> = undefined | T | { object: T; warnings: string[] };

export interface MutatingWebhookDefinition<T extends KubernetesObject = KubernetesObject>
  extends WebhookDefinitionBase<T> {
  /**
   * The object as it should be stored. `request.object` is the handler's own deep copy: change it in
   * place and return it, or return a new object. Called for CREATE and UPDATE (and CONNECT) only: a
   * DELETE has no object to change. A throw is answered per `failurePolicy`.
   */
  mutate(request: AdmissionRequest<T>, ctx: AdmissionContext): MutationResult<T> | Promise<MutationResult<T>>;
  /** Default `Never`; `IfNeeded`: called again when a later mutating webhook changed the object. */
  reinvocationPolicy?: 'Never' | 'IfNeeded';
}

/** kube-apiserver's bounds of `timeoutSeconds` (admissionregistration validation). */
const TIMEOUT_RANGE = [1, 30] as const;
/** The kit's default `timeoutSeconds` (module comment). */
export const DEFAULT_TIMEOUT_SECONDS = 5;

function rulesOf(name: string, rules: readonly WebhookRuleDefinition[]): WebhookRule[] {
  if (rules.length === 0) throw new Error(`webhook ${name}: rules must name at least one resource`);
  return rules.map((r) => {
    if (r.operations.length === 0)
      throw new Error(`webhook ${name}: the rule for ${r.resource.plural} names no operation`);
    return {
      operations: [...new Set(r.operations)],
      apiGroups: [r.resource.group],
      apiVersions: [r.resource.version],
      resources: [r.subresource ? `${r.resource.plural}/${r.subresource}` : r.resource.plural],
      scope: r.resource.namespaced ? 'Namespaced' : 'Cluster',
    };
  });
}

function baseOf(def: WebhookDefinitionBase<KubernetesObject>) {
  if (!isDNS1123Label(def.name))
    throw new Error(`webhook name "${def.name}" must be a DNS-1123 label (lower-case letters, digits, '-')`);
  const timeoutSeconds = def.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  if (
    !Number.isInteger(timeoutSeconds) ||
    timeoutSeconds < TIMEOUT_RANGE[0] ||
    timeoutSeconds > TIMEOUT_RANGE[1]
  )
    throw new Error(
      `webhook ${def.name}: timeoutSeconds must be a whole number from 1 to 30, not ${timeoutSeconds}`,
    );
  return {
    name: def.name,
    rules: rulesOf(def.name, def.rules),
    failurePolicy: def.failurePolicy ?? 'Fail',
    timeoutSeconds,
    matchPolicy: def.matchPolicy ?? 'Equivalent',
    ...(def.namespaceSelector ? { namespaceSelector: def.namespaceSelector } : {}),
    ...(def.objectSelector ? { objectSelector: def.objectSelector } : {}),
  } as const;
}

/**
 * Declares a validating admission webhook.
 * @returns the registry's {@link AdmissionWebhook} (export it in the registry's `webhooks` list)
 * @throws {Error} for a name that is not a DNS-1123 label, no rules, a rule without operations, or a
 *   `timeoutSeconds` outside 1–30
 */
export function defineValidatingWebhook<T extends KubernetesObject = KubernetesObject>(
  def: ValidatingWebhookDefinition<T>,
): AdmissionWebhook {
  return {
    ...baseOf(def as unknown as WebhookDefinitionBase<KubernetesObject>),
    type: 'validating',
    async admit(request, ctx): Promise<AdmissionResponse> {
      const verdict = await def.validate(request as AdmissionRequest<T>, ctx);
      const warnings = verdict?.warnings?.length ? { warnings: verdict.warnings } : {};
      if (verdict === undefined || verdict.allowed) return { uid: request.uid, allowed: true, ...warnings };
      return {
        uid: request.uid,
        allowed: false,
        status: {
          code: verdict.code ?? 403,
          message: verdict.message,
          ...(verdict.reason ? { reason: verdict.reason } : {}),
        },
        ...warnings,
      };
    },
  };
}

/**
 * The JSON Patch (RFC 6902) turning `before` into `after`, base64 as an AdmissionResponse carries it;
 * `undefined` when they are equal. Computed by fast-json-patch's `compare` (keys escaped as RFC 6901
 * says: `~0`, `~1`).
 */
export function admissionPatch(before: unknown, after: unknown): string | undefined {
  const ops = fjp.compare(before as object, after as object);
  return ops.length ? Buffer.from(JSON.stringify(ops)).toString('base64') : undefined;
}

/**
 * Declares a mutating admission webhook: `mutate` returns the changed object and the kit answers
 * with the JSON Patch from the request's object to it (`patchType: JSONPatch`).
 * @returns the registry's {@link AdmissionWebhook}
 * @throws {Error} as {@link defineValidatingWebhook}
 */
export function defineMutatingWebhook<T extends KubernetesObject = KubernetesObject>(
  def: MutatingWebhookDefinition<T>,
): AdmissionWebhook {
  return {
    ...baseOf(def as unknown as WebhookDefinitionBase<KubernetesObject>),
    type: 'mutating',
    reinvocationPolicy: def.reinvocationPolicy ?? 'Never',
    async admit(request, ctx): Promise<AdmissionResponse> {
      const original = request.object;
      if (original === undefined) return { uid: request.uid, allowed: true };
      const own = { ...request, object: structuredClone(original) } as AdmissionRequest<T>;
      const result = await def.mutate(own, ctx);
      const changed = result === undefined ? own.object : isWithWarnings(result) ? result.object : result;
      const warnings =
        result !== undefined && isWithWarnings(result) && result.warnings.length
          ? { warnings: result.warnings }
          : {};
      const patch = admissionPatch(original, changed);
      return {
        uid: request.uid,
        allowed: true,
        ...(patch ? { patch, patchType: 'JSONPatch' as const } : {}),
        ...warnings,
      };
    },
  };
}

function isWithWarnings<T>(r: T | { object: T; warnings: string[] }): r is { object: T; warnings: string[] } {
  const o = r as { object?: unknown; warnings?: unknown; apiVersion?: unknown };
  return (
    typeof o === 'object' &&
    o !== null &&
    'object' in o &&
    Array.isArray(o.warnings) &&
    o.apiVersion === undefined
  );
}
