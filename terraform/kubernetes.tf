# The objects in the cluster: namespace, CRDs, the relay (ServiceAccount, ClusterRole, Deployment)
# and the ClusterRole of the functions' identity, all in modules/cluster. This module applies it to
# the first cluster (the single cluster of cluster_name, or clusters[0]) with the kubernetes
# provider of providers.tf. Terraform cannot make one provider configuration per element of a list,
# so every other cluster of `clusters` calls modules/cluster itself with its own kubernetes provider
# and this module's `cluster_module_inputs` output (examples/fleet).
#
# The RBAC rules, the CRDs, the admission policies and the controller list come from `var.registry`: the calling project's
# deploy/registry.gen.json, generated from its controller registry (checked in its CI).

locals {
  relay_service_account = "levelset-relay"
  relay_port            = 8080

  registry_controllers    = var.registry.controllers
  relay_cluster_rules     = var.registry.relay_cluster_rules
  functions_cluster_rules = var.registry.functions_cluster_rules
  # Keyed by CRD name (modules/cluster applies one kubernetes_manifest per key).
  crds = { for crd in var.registry.crds : crd.metadata.name => crd }
  # Keyed by "<kind>/<name>": a policy and its binding share a name.
  admission_policies = { for m in var.registry.admission_policies : "${m.kind}/${m.metadata.name}" => m }

  # The relay's V8 flags: a heap limit of half its memory limit, stated rather than left to how Node
  # reads the container's limit, and a young generation of at most 4 MiB per semi-space (V8
  # otherwise grows it during a LIST of many objects and keeps the pages).
  # `npm run bench` measures the relay's informer with these (local/stack.ts RELAY_NODE_OPTIONS).
  # A limit not in Mi or Gi (or none) leaves Node's defaults.
  relay_memory_limit = coalesce(var.relay_resources.memory_limit, "none")
  relay_memory_mib = (can(regex("^[0-9]+(Mi|Gi)$", local.relay_memory_limit))
    ? tonumber(regex("^[0-9]+", local.relay_memory_limit)) * (endswith(local.relay_memory_limit, "Gi") ? 1024 : 1)
  : null)
  relay_node_env = local.relay_memory_mib == null ? {} : {
    NODE_OPTIONS = "--max-old-space-size=${floor(local.relay_memory_mib / 2)} --max-semi-space-size=4"
  }

  # What every cluster gets alike (modules/cluster's `levelset` input); only the cluster id differs.
  cluster_module_inputs = {
    relay_namespace           = var.relay_namespace
    create_relay_namespace    = var.create_relay_namespace
    relay_service_account     = local.relay_service_account
    relay_image               = var.relay_image
    relay_replicas            = var.relay_replicas
    relay_port                = local.relay_port
    relay_resources           = var.relay_resources
    relay_env                 = merge(local.controller_env, local.tracing_env, local.relay_node_env)
    functions_service_account = google_service_account.functions.email
    relay_cluster_rules       = local.relay_cluster_rules
    functions_cluster_rules   = local.functions_cluster_rules
    crds                      = local.crds
    admission_policies        = local.admission_policies
    webhook_configurations    = local.webhook_configurations
  }
}

module "cluster" {
  source = "./modules/cluster"

  cluster_id = local.primary_cluster.id
  levelset   = local.cluster_module_inputs

  # The relay publishes as soon as it runs: its Workload Identity grant on the topic comes first.
  depends_on = [google_pubsub_topic_iam_member.relay_publisher]
}

# The in-cluster objects lived in this module before modules/cluster existed: these moves keep a
# single-cluster deployment's objects (no destroy, no re-create) on its next apply.

moved {
  from = kubernetes_namespace_v1.levelset
  to   = module.cluster.kubernetes_namespace_v1.levelset
}

moved {
  from = kubernetes_manifest.crd
  to   = module.cluster.kubernetes_manifest.crd
}

moved {
  from = kubernetes_service_account_v1.relay
  to   = module.cluster.kubernetes_service_account_v1.relay
}

moved {
  from = kubernetes_cluster_role_v1.relay
  to   = module.cluster.kubernetes_cluster_role_v1.relay
}

moved {
  from = kubernetes_cluster_role_binding_v1.relay
  to   = module.cluster.kubernetes_cluster_role_binding_v1.relay
}

moved {
  from = kubernetes_deployment_v1.relay
  to   = module.cluster.kubernetes_deployment_v1.relay
}

moved {
  from = kubernetes_cluster_role_v1.functions
  to   = module.cluster.kubernetes_cluster_role_v1.functions
}

moved {
  from = kubernetes_cluster_role_binding_v1.functions
  to   = module.cluster.kubernetes_cluster_role_binding_v1.functions
}
