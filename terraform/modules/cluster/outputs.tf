output "cluster_id" {
  description = "Id of this cluster, as the relay names it in every key (RELAY_CLUSTER unless `default`)."
  value       = var.cluster_id
}

output "relay_namespace" {
  description = "Namespace of the relay Deployment and its ServiceAccount in this cluster."
  value       = local.relay_namespace
}

output "relay_env" {
  description = "Environment of the relay container in this cluster (RELAY_CLUSTER included when the id is not `default`)."
  value       = local.relay_env
}

output "crds" {
  description = "Names of the CustomResourceDefinitions applied to this cluster."
  value       = sort(keys(kubernetes_manifest.crd))
}

output "admission_policies" {
  description = "The admission policies and bindings applied to this cluster, as `<kind>/<name>`."
  value       = sort(keys(kubernetes_manifest.admission_policy))
}
