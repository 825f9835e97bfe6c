/**
 * The admission webhook contract (docs/architecture.md "Contracts", decision 55): what a project's
 * webhook declares so that `levelset build` writes its `ValidatingWebhookConfiguration` or
 * `MutatingWebhookConfiguration`, Terraform registers it with the `admission` service's URL, and the
 * `admission` function answers the API server's `AdmissionReview` for it. The kit's
 * `defineValidatingWebhook` / `defineMutatingWebhook` (functions/kit/webhooks.ts) return one; the
 * AdmissionReview's schema and the failure-policy answer are core/admission.ts's.
 *
 * The shapes are admission.k8s.io/v1 `AdmissionRequest`/`AdmissionResponse` and
 * admissionregistration.k8s.io/v1 `ValidatingWebhook`/`MutatingWebhook`, as kube-apiserver's
 * `k8s.io/api/admission/v1` and `k8s.io/api/admissionregistration/v1` types define them.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';

/** The operations a rule matches (admissionregistration/v1 `OperationType`; `*` is not offered: name them). */
export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** A label selector (metav1.LabelSelector), as a webhook's `namespaceSelector` and `objectSelector` take it. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }[];
}

/** One rule of a webhook, admissionregistration/v1 `RuleWithOperations`. */
export interface WebhookRule {
  operations: AdmissionOperation[];
  apiGroups: string[];
  apiVersions: string[];
  /** Plurals, `plural/subresource` for a subresource (`deployments/scale`). */
  resources: string[];
  scope: 'Namespaced' | 'Cluster';
}

/** Who made the request (authentication/v1 `UserInfo`). */
export interface AdmissionUserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/**
 * An admission.k8s.io/v1 `AdmissionRequest`, as the kit hands it to `validate`/`mutate`: `object`
 * is the object to be stored (`undefined` on DELETE), `oldObject` the stored one (UPDATE, DELETE).
 */
export interface AdmissionRequest<T extends KubernetesObject = KubernetesObject> {
  /** Echoed in the response; kube-apiserver refuses an answer with another. */
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  /** The object's name; `""` on a CREATE whose name the server generates (`generateName`). */
  name: string;
  /** `""` for a cluster-scoped object. */
  namespace: string;
  operation: AdmissionOperation;
  userInfo: AdmissionUserInfo;
  object?: T;
  oldObject?: T;
  /** The request is a dry run: nothing is stored; a webhook with side effects must not cause them. */
  dryRun: boolean;
  /** The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`, `PatchOptions`). */
  options?: Record<string, unknown>;
}

/** The `status` of a denial (metav1.Status, the fields a webhook sets). */
export interface AdmissionStatus {
  /** HTTP code the API server answers the client with; kube-apiserver's default for a denial is 403. */
  code?: number;
  message?: string;
  /** A machine-readable reason (metav1.StatusReason, e.g. `Forbidden`, `Invalid`). */
  reason?: string;
}

/** An admission.k8s.io/v1 `AdmissionResponse`. */
export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: AdmissionStatus;
  /** base64 of a JSON Patch (RFC 6902) array; only from a mutating webhook, with `patchType`. */
  patch?: string;
  patchType?: 'JSONPatch';
  /** Shown to the client (kubectl prints them as `Warning: …`); each at most 120 characters is advised. */
  warnings?: string[];
}

/** What a webhook's handler is given beside the request. */
export interface AdmissionContext {
  /** Logger labelled with the webhook (Cloud Logging labels). Never log a Secret's data. */
  log: Logger;
}

/**
 * A registered admission webhook. Its `admit` may throw: the caller (core/admission.ts
 * `answerAdmission`) answers per `failurePolicy`, so the API server always gets a well-formed review.
 */
export interface AdmissionWebhook {
  /**
   * Unique in the project, a DNS-1123 label: the path it is served at (`/<name>`), the metrics'
   * and logs' label; the configuration's webhook is `<name>.levelset.dev` (a fully qualified name,
   * as kube-apiserver requires) in the configuration `levelset-<name>`.
   */
  name: string;
  type: 'validating' | 'mutating';
  rules: WebhookRule[];
  /** What the API server does when the call fails (unreachable, timed out, an answer it cannot read). */
  failurePolicy: 'Fail' | 'Ignore';
  /** Seconds the API server waits for the answer, 1–30. */
  timeoutSeconds: number;
  matchPolicy: 'Exact' | 'Equivalent';
  /** ANDed with the build's own (which leaves out `kube-system` and Levelset's namespace). */
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  /** Mutating webhooks only: call again when a later mutating webhook changed the object. */
  reinvocationPolicy?: 'Never' | 'IfNeeded';
  /** Answers one request; may throw (answered per `failurePolicy`). */
  admit(request: AdmissionRequest, ctx: AdmissionContext): Promise<AdmissionResponse>;
}

/** The suffix of a webhook's fully qualified name (`<name>.levelset.dev`). */
export const WEBHOOK_NAME_SUFFIX = 'levelset.dev';

/** The name kube-apiserver knows the webhook by (its denials say `admission webhook "<this>" denied the request`). */
export function webhookFullName(webhook: Pick<AdmissionWebhook, 'name'>): string {
  return `${webhook.name}.${WEBHOOK_NAME_SUFFIX}`;
}

/**
 * An admission policy a project's registry declares beside its controllers (`export const policies`):
 * a ValidatingAdmissionPolicy and its ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1)
 * as plain manifests, made by the kit's `definePolicy`, written by `levelset build` into
 * `deploy/admission-policies.yaml` and `deploy/registry.gen.json`, applied by the Terraform module.
 */
export interface AdmissionPolicy {
  /** The policy's name (and its binding's). */
  readonly name: string;
  /** The `ValidatingAdmissionPolicy` manifest. */
  readonly policy: Readonly<Record<string, unknown>>;
  /** The `ValidatingAdmissionPolicyBinding` manifest naming it. */
  readonly binding: Readonly<Record<string, unknown>>;
}
