/**
 * The admission webhooks' configurations, from the registry's `webhooks` (core/contract/admission.ts):
 * one admissionregistration.k8s.io/v1 `ValidatingWebhookConfiguration` or
 * `MutatingWebhookConfiguration` per webhook, written by `levelset build` into
 * `deploy/webhooks.yaml` (to read and review) and into `deploy/registry.gen.json`
 * (`webhook_configurations`, which Terraform applies with the `admission` service's URL:
 * terraform/admission.tf), and registered by `levelset dev` with the embedded API server
 * (local/admission.ts). A module of the kit's that it does not export, as crd-schema.ts: the build
 * and the local stack share it.
 *
 * What every configuration says, whatever the webhook declares (issue 43; the fields as
 * kube-apiserver's admissionregistration/v1 validation requires them):
 * - `sideEffects: None`: the kit's webhooks only answer, so a dry run calls them too;
 * - `admissionReviewVersions: [v1]`: the only version the kit reads (core/admission.ts);
 * - a `namespaceSelector` that leaves out `kube-system` and Levelset's own namespace (the
 *   `kubernetes.io/metadata.name` label every namespace carries), so a failing webhook can never
 *   block the cluster's own components or Levelset's relay; the webhook's own selector is ANDed;
 * - `clientConfig.url`: the service's URL and `/<name>`; here {@link ADMISSION_URL_PLACEHOLDER}
 *   (`.invalid` never resolves: applied as is, the webhook fails per its failure policy).
 */
import type { AdmissionWebhook, LabelSelector } from '../../core/contract/admission.ts';
import { webhookFullName } from '../../core/contract/admission.ts';

/** The URL `deploy/webhooks.yaml` names until Terraform (or you) put the admission service's. */
export const ADMISSION_URL_PLACEHOLDER = 'https://levelset-admission.invalid';

/** The label every namespace carries with its own name (kube-apiserver sets it since 1.21). */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** Namespaces no webhook of Levelset's is ever called for: the cluster's own, and Levelset's. */
export function excludedNamespaces(levelsetNamespace: string): string[] {
  return ['kube-system', levelsetNamespace];
}

/** The configuration's name: `levelset-<name>` (webhook names are unique in a project). */
export function webhookConfigurationName(webhook: Pick<AdmissionWebhook, 'name'>): string {
  return `levelset-${webhook.name}`;
}

function namespaceSelectorOf(own: LabelSelector | undefined, levelsetNamespace: string): LabelSelector {
  return {
    ...(own?.matchLabels ? { matchLabels: own.matchLabels } : {}),
    matchExpressions: [
      { key: NAMESPACE_NAME_LABEL, operator: 'NotIn', values: excludedNamespaces(levelsetNamespace) },
      ...(own?.matchExpressions ?? []),
    ],
  };
}

/**
 * The configuration of one webhook.
 * @param baseUrl the admission service's URL (no trailing slash); the webhook is at `<baseUrl>/<name>`
 * @param levelsetNamespace Levelset's namespace, left out by the namespace selector
 */
export function webhookConfiguration(
  webhook: AdmissionWebhook,
  options: { baseUrl?: string; levelsetNamespace: string; caBundle?: string },
): Record<string, unknown> {
  const kind =
    webhook.type === 'mutating' ? 'MutatingWebhookConfiguration' : 'ValidatingWebhookConfiguration';
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind,
    metadata: {
      name: webhookConfigurationName(webhook),
      labels: { 'app.kubernetes.io/part-of': 'levelset', 'levelset.dev/webhook': webhook.name },
    },
    webhooks: [
      {
        name: webhookFullName(webhook),
        clientConfig: {
          url: `${options.baseUrl ?? ADMISSION_URL_PLACEHOLDER}/${webhook.name}`,
          ...(options.caBundle ? { caBundle: options.caBundle } : {}),
        },
        rules: webhook.rules,
        failurePolicy: webhook.failurePolicy,
        matchPolicy: webhook.matchPolicy,
        namespaceSelector: namespaceSelectorOf(webhook.namespaceSelector, options.levelsetNamespace),
        objectSelector: webhook.objectSelector ?? {},
        sideEffects: 'None',
        timeoutSeconds: webhook.timeoutSeconds,
        admissionReviewVersions: ['v1'],
        ...(webhook.type === 'mutating' ? { reinvocationPolicy: webhook.reinvocationPolicy ?? 'Never' } : {}),
      },
    ],
  };
}

/**
 * Every webhook's configuration, in registry order.
 * @throws {Error} when two webhooks share a name
 */
export function webhookConfigurations(
  webhooks: readonly AdmissionWebhook[],
  options: { baseUrl?: string; levelsetNamespace: string; caBundle?: string },
): Record<string, unknown>[] {
  const seen = new Set<string>();
  for (const w of webhooks) {
    if (seen.has(w.name)) throw new Error(`two webhooks are named "${w.name}"`);
    seen.add(w.name);
  }
  return webhooks.map((w) => webhookConfiguration(w, options));
}
