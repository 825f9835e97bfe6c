variable "cluster_id" {
  description = "Id of this cluster in the functions' LEVELSET_CLUSTERS (a DNS-1123 label); the relay names it in every key (RELAY_CLUSTER). `default` is a single-cluster deployment's cluster: its relay gets no RELAY_CLUSTER and publishes v1 key messages."
  type        = string
  default     = "default"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.cluster_id))
    error_message = "cluster_id must be a DNS-1123 label (lowercase letters, digits, hyphens; at most 63 characters)."
  }
}

variable "levelset" {
  description = "What every cluster of one Levelset deployment gets alike: the root module's `cluster_module_inputs` output (relay image, namespace, environment and resources; the registry's RBAC rules; the CRDs and admission policies; the functions' service account)."
  type = object({
    relay_namespace        = string
    create_relay_namespace = bool
    relay_service_account  = string
    relay_image            = string
    relay_replicas         = number
    relay_port             = number
    relay_resources = object({
      cpu_request    = string
      memory_request = string
      cpu_limit      = optional(string)
      memory_limit   = optional(string)
    })
    # The relay's environment without RELAY_CLUSTER (this module adds it from cluster_id).
    relay_env = map(string)
    # The email GKE authenticates the functions' Google access token as (a Kubernetes User).
    functions_service_account = string
    relay_cluster_rules = list(object({
      api_groups = list(string)
      resources  = list(string)
      verbs      = list(string)
    }))
    functions_cluster_rules = list(object({
      api_groups = list(string)
      resources  = list(string)
      verbs      = list(string)
    }))
    # CRD manifests by CRD name (each registered controller's crd.yaml, from the registry input).
    crds = any
    # ValidatingAdmissionPolicies and their bindings by "<kind>/<name>" (the registry's `policies`).
    admission_policies = optional(any, {})
    # Admission webhook configurations by name, their URLs the admission service's (terraform/admission.tf).
    webhook_configurations = optional(any, {})
  })
}
