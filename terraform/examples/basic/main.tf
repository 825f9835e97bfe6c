# The smallest deployment: an existing GKE cluster (Workload Identity Federation and the DNS-based
# control-plane endpoint enabled), the relay image pushed, `npm run package:functions` run.
#
# The root module configures the google and kubernetes providers itself (it connects to the cluster
# it reads), so it is called here without a providers block.

module "levelset" {
  source = "../.."

  # This repository's own registry, as a user's project passes its own (its deploy/registry.gen.json
  # and its functions bundle, both written by `levelset build`).
  registry             = jsondecode(file("${path.module}/../../../deploy/registry.gen.json"))
  functions_source_dir = "${path.module}/../../.build/functions"

  project_id       = var.project_id
  region           = var.region
  cluster_name     = var.cluster_name
  cluster_location = var.cluster_location
  relay_image      = var.relay_image
}
