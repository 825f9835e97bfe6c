# Levelset's Terraform module, from the installed package (npm install levelset@<new> upgrades it),
# with this project's registry (deploy/registry.gen.json) and functions bundle (build/functions),
# both written by `levelset build`.
module "levelset" {
  source = "../node_modules/levelset/terraform"

  registry             = jsondecode(file("${path.module}/../deploy/registry.gen.json"))
  functions_source_dir = "${path.module}/../build/functions"

  project_id       = var.project_id
  region           = var.region
  cluster_name     = var.cluster_name
  cluster_location = var.cluster_location
  relay_image      = var.relay_image
}

variable "project_id" {
  type        = string
  description = "The Google Cloud project of the functions and the Pub/Sub topics."
}

variable "region" {
  type        = string
  description = "The region of the functions, e.g. europe-west1."
}

variable "cluster_name" {
  type        = string
  description = "The GKE cluster the relay runs in."
}

variable "cluster_location" {
  type        = string
  description = "The cluster's location (region or zone)."
}

variable "relay_image" {
  type        = string
  description = "The relay's image, built from build/relay and pushed (REGION-docker.pkg.dev/PROJECT/REPO/relay:TAG)."
}
