# A fleet of two GKE clusters, one Levelset: one topic, one reconcile and one resync function for
# both, a resync scheduler job per cluster, and in each cluster its relay, the CRDs and the RBAC.
#
# The root module (../..) configures the google provider and the kubernetes provider of the first
# cluster itself and installs the in-cluster objects there. Terraform cannot make a provider
# configuration per element of a list, so each other cluster gets a kubernetes provider here, by
# alias, and a call of ../../modules/cluster with it. A third cluster: one more entry in
# `clusters`, one more provider block and one more module call, as for the second.

module "levelset" {
  source = "../.."

  # This repository's own registry, as a user's project passes its own (its deploy/registry.gen.json
  # and its functions bundle, both written by `levelset build`).
  registry             = jsondecode(file("${path.module}/../../../deploy/registry.gen.json"))
  functions_source_dir = "${path.module}/../../.build/functions"

  project_id  = var.project_id
  region      = var.region
  relay_image = var.relay_image
  clusters    = var.clusters
}

provider "google" {
  project = var.project_id
  region  = var.region
}

# The operator's credentials (gcloud auth application-default login), as the root module's
# kubernetes provider uses them for the first cluster.
data "google_client_config" "operator" {}

locals {
  # The second cluster's id (its name unless `id` is set), as the functions' LEVELSET_CLUSTERS has it.
  second = module.levelset.cluster_ids[1]
}

provider "kubernetes" {
  alias = "second"

  host  = module.levelset.clusters[local.second].kubernetes_endpoint
  token = data.google_client_config.operator.access_token
}

module "cluster_second" {
  source = "../../modules/cluster"
  providers = {
    kubernetes = kubernetes.second
  }

  cluster_id = local.second
  levelset   = module.levelset.cluster_module_inputs
}
