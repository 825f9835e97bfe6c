/**
 * Levelset on Google Cloud and GKE: the keys topic with its push subscription and dead letters
 * (pubsub.tf), the reconcile and resync functions and a resync scheduler job per cluster
 * (functions.tf), the objects in the first cluster (kubernetes.tf, through modules/cluster),
 * log-based metrics and alerts (monitoring.tf). This file holds what they share: the clusters, the
 * APIs, the service accounts and their project-level IAM.
 */

data "google_project" "this" {
  project_id = var.project_id
}

locals {
  # The clusters, by id: `clusters` in its order, or the one cluster of cluster_name, id `default`
  # (core/contract/key.ts DEFAULT_CLUSTER: no LEVELSET_CLUSTERS, no RELAY_CLUSTER, message v1).
  fleet = length(var.clusters) > 0
  cluster_list = local.fleet ? [
    for c in var.clusters : { id = coalesce(c.id, c.name), name = c.name, location = c.location, kubernetes_endpoint = c.kubernetes_endpoint }
    ] : [
    { id = "default", name = var.cluster_name, location = var.cluster_location, kubernetes_endpoint = var.kubernetes_endpoint }
  ]
  clusters    = { for c in local.cluster_list : c.id => c }
  cluster_ids = [for c in local.cluster_list : c.id]
  # The cluster this module installs the relay, CRDs and RBAC in, with its own kubernetes provider
  # (kubernetes.tf); every other one is the caller's (modules/cluster, examples/fleet).
  primary_cluster = local.cluster_list[0]
}

data "google_container_cluster" "cluster" {
  for_each = local.clusters

  project  = var.project_id
  name     = each.value.name
  location = each.value.location
}

locals {
  project_number = data.google_project.this.number

  # Each cluster's GKE DNS-based control-plane endpoint (its certificate is publicly trusted: no CA
  # data), unless its kubernetes_endpoint overrides it.
  cluster_endpoints = {
    for id, c in local.clusters : id => trimsuffix(coalesce(
      c.kubernetes_endpoint,
      "https://${try(data.google_container_cluster.cluster[id].control_plane_endpoints_config[0].dns_endpoint_config[0].endpoint, "")}",
    ), "/")
  }
  # The first cluster's: the kubernetes provider's, and the single cluster's KUBERNETES_ENDPOINT.
  kubernetes_endpoint = local.cluster_endpoints[local.primary_cluster.id]

  workload_pools = {
    for id, c in local.clusters : id => try(data.google_container_cluster.cluster[id].workload_identity_config[0].workload_pool, "")
  }

  labels = merge({ app = "levelset" }, var.labels)

  reconcile_function_name = "${var.name}-reconcile"
  resync_function_name    = "${var.name}-resync"
  dead_letter_topic_name  = "${var.topic_name}-dead-letter"
  # core/config.ts, resyncTopicOf: the resync's keys, on a subscription of their own.
  resync_topic_name = "${var.topic_name}-resync"

  # The controllers' configuration: the same environment for the functions and the relay.
  controller_env = {
    GOOGLE_CLOUD_PROJECT        = var.project_id
    LEVELSET_TOPIC              = var.topic_name
    LEVELSET_RESYNC_TOPIC       = local.resync_topic_name
    LEVELSET_SOURCE_NAMESPACE   = var.source_namespace
    LEVELSET_EXCLUDE_NAMESPACES = join(",", var.exclude_namespaces)
    LOG_LEVEL                   = var.log_level
  }

  pubsub_service_agent = "serviceAccount:service-${local.project_number}@gcp-sa-pubsub.iam.gserviceaccount.com"

  apis = toset([
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "cloudfunctions.googleapis.com",
    "cloudscheduler.googleapis.com",
    "cloudtasks.googleapis.com",
    "cloudtrace.googleapis.com",
    "container.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "storage.googleapis.com",
  ])
}

check "cluster_prerequisites" {
  assert {
    condition = alltrue([
      for id, c in local.clusters :
      c.kubernetes_endpoint != null || try(data.google_container_cluster.cluster[id].control_plane_endpoints_config[0].dns_endpoint_config[0].allow_external_traffic, false)
    ])
    error_message = "The DNS-based control-plane endpoint does not allow external traffic on: ${join(", ", [for id, c in local.clusters : c.name if c.kubernetes_endpoint == null && !try(data.google_container_cluster.cluster[id].control_plane_endpoints_config[0].dns_endpoint_config[0].allow_external_traffic, false)])}. Run gcloud container clusters update CLUSTER --location=LOCATION --enable-dns-access for each (or set its kubernetes_endpoint)."
  }
  assert {
    condition     = alltrue([for id, pool in local.workload_pools : pool == "${var.project_id}.svc.id.goog"])
    error_message = "Workload Identity Federation for GKE (workload pool ${var.project_id}.svc.id.goog) is not enabled on: ${join(", ", [for id, pool in local.workload_pools : local.clusters[id].name if pool != "${var.project_id}.svc.id.goog"])}. Their relays cannot publish to Pub/Sub."
  }
}

resource "google_project_service" "apis" {
  for_each = var.enable_apis ? local.apis : toset([])

  project                    = var.project_id
  service                    = each.value
  disable_on_destroy         = false
  disable_dependent_services = false
}

# ---------------------------------------------------------------------------------------------------
# Service accounts: one identity per caller, each with only what it does.
# ---------------------------------------------------------------------------------------------------

# The functions' runtime identity: publishes keys (resync) and acts in the cluster through RBAC
# bound to its email (kubernetes.tf).
resource "google_service_account" "functions" {
  project      = var.project_id
  account_id   = "${var.name}-functions"
  display_name = "Levelset functions (reconcile, resync)"
  description  = "Runtime identity of the Levelset functions; authorised in the cluster by the ${var.name}-functions ClusterRole."
}

# Builds the functions' source (Cloud Build) instead of the default compute service account.
resource "google_service_account" "build" {
  project      = var.project_id
  account_id   = "${var.name}-build"
  display_name = "Levelset functions build"
  description  = "Cloud Build identity for the Levelset functions' source builds."
}

# Signs the OIDC token of Pub/Sub's push to reconcile.
resource "google_service_account" "push" {
  project      = var.project_id
  account_id   = "${var.name}-push"
  display_name = "Levelset Pub/Sub push"
  description  = "Identity of the Pub/Sub push subscription that invokes the reconcile function."
}

# Signs the OIDC token of the scheduler job that invokes resync.
resource "google_service_account" "scheduler" {
  project      = var.project_id
  account_id   = "${var.name}-scheduler"
  display_name = "Levelset resync scheduler"
  description  = "Identity of the Cloud Scheduler job that invokes the resync function."
}

# Connecting to the cluster: the DNS-based endpoint checks container.clusters.connect; what the
# identity may do inside is Kubernetes RBAC only. A custom role grants exactly that, no more.
resource "google_project_iam_custom_role" "cluster_connect" {
  project     = var.project_id
  role_id     = "${replace(var.name, "-", "_")}_cluster_connect"
  title       = "Levelset: connect to GKE"
  description = "Reach a GKE control plane through its DNS-based endpoint; authorisation inside is Kubernetes RBAC."
  permissions = ["container.clusters.connect", "container.clusters.get"]
}

resource "google_project_iam_member" "functions_cluster_connect" {
  project = var.project_id
  role    = google_project_iam_custom_role.cluster_connect.id
  member  = google_service_account.functions.member
}

resource "google_project_iam_member" "build" {
  for_each = toset([
    "roles/logging.logWriter",
    # Reads the staged source from the gcf-v2-sources-<number>-<region> bucket Cloud Functions creates.
    "roles/storage.objectViewer",
  ])

  project = var.project_id
  role    = each.value
  member  = google_service_account.build.member
}

# Pub/Sub mints the push OIDC token as the push service account (needed for projects created before
# April 2021; harmless after).
resource "google_service_account_iam_member" "push_token_creator" {
  service_account_id = google_service_account.push.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = local.pubsub_service_agent

  depends_on = [google_project_service.apis]
}
