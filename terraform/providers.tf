# The operator's own credentials (gcloud auth application-default login) create the Google Cloud
# resources and, through the cluster's DNS-based endpoint with a Google access token, the Kubernetes
# objects (namespace, CRDs, RBAC, relay). The operator needs container.clusters.connect and
# cluster-admin-level RBAC (e.g. roles/container.admin) for the latter.

provider "google" {
  project = var.project_id
  region  = var.region
}

data "google_client_config" "operator" {}

provider "kubernetes" {
  host  = local.kubernetes_endpoint
  token = data.google_client_config.operator.access_token
}
