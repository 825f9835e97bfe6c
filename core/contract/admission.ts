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
