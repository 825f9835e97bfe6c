locals {
  console = "https://console.cloud.google.com"
  project = "project=${var.project_id}"

  # Logs Explorer takes the query in the URL path; urlencode writes spaces as "+", which it reads literally.
  logs_reconcile_query = "resource.type=\"cloud_run_revision\"\nresource.labels.service_name=\"${local.reconcile_function_name}\"\n-- narrow to one key: labels.controller=\"CONTROLLER\" labels.key=\"NAMESPACE/NAME\""
  logs_relay_query     = "resource.type=\"k8s_container\"\n${local.relay_cluster_filter}\nresource.labels.namespace_name=\"${var.relay_namespace}\"\nresource.labels.container_name=\"relay\""
}

output "topic_id" {
  description = "Full ID of the keys topic (projects/<p>/topics/<topic>)."
  value       = google_pubsub_topic.keys.id
}

output "dead_letter_subscription" {
  description = "Name of the pull subscription on the dead-letter topic, to inspect and replay dead-lettered keys."
  value       = google_pubsub_subscription.dead_letter.name
}

output "reconcile_subscription" {
  description = "Name of the push subscription that delivers keys to reconcile."
  value       = google_pubsub_subscription.reconcile.name
}

output "reconcile_uri" {
  description = "URL of the reconcile function (invokable only with an OIDC token of the push service account)."
  value       = google_cloudfunctions2_function.reconcile.service_config[0].uri
}

output "resync_uri" {
  description = "URL of the resync function (invokable only with an OIDC token of the scheduler service account)."
  value       = google_cloudfunctions2_function.resync.service_config[0].uri
}

output "resync_job" {
  description = "Name of the first cluster's Cloud Scheduler job that runs resync (the only one with cluster_name); `gcloud scheduler jobs run <name> --location <region>` runs it now."
  value       = google_cloud_scheduler_job.resync[local.primary_cluster.id].name
}

output "resync_jobs" {
  description = "Name of each cluster's Cloud Scheduler resync job, by cluster id (`default` with cluster_name)."
  value       = { for id, job in google_cloud_scheduler_job.resync : id => job.name }
}

output "clusters" {
  description = "The clusters the functions serve, by id (`default` with cluster_name): GKE name, location and the Kubernetes API endpoint the functions use. The first (cluster_ids[0]) has the relay, CRDs and RBAC of this module; the others need modules/cluster."
  value       = { for id, c in local.clusters : id => { name = c.name, location = c.location, kubernetes_endpoint = local.cluster_endpoints[id] } }
}

output "cluster_ids" {
  description = "The cluster ids in the order of `clusters` (`[\"default\"]` with cluster_name); the first is the cluster this module installs the relay, CRDs and RBAC in."
  value       = local.cluster_ids
}

output "cluster_module_inputs" {
  description = "The `levelset` input of modules/cluster for every other cluster of a fleet: relay image, namespace, environment and resources, the registry's RBAC rules, the CRDs, the functions' service account."
  value       = local.cluster_module_inputs
  # A relay publishes as soon as it runs: its Workload Identity grant on the topic comes first.
  depends_on = [google_pubsub_topic_iam_member.relay_publisher]
}

output "functions_service_account" {
  description = "Email of the functions' runtime service account; the levelset-functions ClusterRoleBinding names it as a User."
  value       = google_service_account.functions.email
}

output "push_service_account" {
  description = "Email of the service account whose OIDC token authenticates Pub/Sub's push to reconcile."
  value       = google_service_account.push.email
}

output "scheduler_service_account" {
  description = "Email of the service account whose OIDC token authenticates the scheduler's call to resync."
  value       = google_service_account.scheduler.email
}

output "kubernetes_endpoint" {
  description = "Kubernetes API endpoint of the first cluster (the kubernetes provider's; the functions' KUBERNETES_ENDPOINT with cluster_name): its DNS-based endpoint unless overridden."
  value       = local.kubernetes_endpoint
}

output "crds" {
  description = "Names of the CustomResourceDefinitions installed from the registry input's crds (in every cluster, by modules/cluster)."
  value       = sort(keys(local.crds))
}

output "controllers" {
  description = "Controllers of the registry this deployment was made from (`var.registry.controllers`)."
  value       = local.registry_controllers
}

output "console_links" {
  description = "Google Cloud console pages of the deployment: the dashboard, the SLOs, functions, logs, traces, Pub/Sub, dead letters, scheduler, alerts, metrics, relay."
  value = {
    reconcile_function       = "${local.console}/run/detail/${var.region}/${local.reconcile_function_name}/metrics?${local.project}"
    resync_function          = "${local.console}/run/detail/${var.region}/${local.resync_function_name}/metrics?${local.project}"
    reconcile_logs           = "${local.console}/logs/query;query=${replace(urlencode(local.logs_reconcile_query), "+", "%20")}?${local.project}"
    relay_logs               = "${local.console}/logs/query;query=${replace(urlencode(local.logs_relay_query), "+", "%20")}?${local.project}"
    traces                   = "${local.console}/traces/list?${local.project}&filter=${replace(urlencode(local.trace_filter), "+", "%20")}"
    keys_topic               = "${local.console}/cloudpubsub/topic/detail/${google_pubsub_topic.keys.name}?${local.project}"
    reconcile_subscription   = "${local.console}/cloudpubsub/subscription/detail/${google_pubsub_subscription.reconcile.name}?${local.project}"
    dead_letter_subscription = "${local.console}/cloudpubsub/subscription/detail/${google_pubsub_subscription.dead_letter.name}?${local.project}"
    resync_job               = "${local.console}/cloudscheduler?${local.project}"
    alert_policies           = "${local.console}/monitoring/alerting/policies?${local.project}"
    dashboard                = "${local.console}/monitoring/dashboards/custom/${element(split("/", google_monitoring_dashboard.levelset.id), 3)}?${local.project}"
    slos                     = "${local.console}/monitoring/services?${local.project}"
    log_based_metrics        = "${local.console}/logs/metrics?${local.project}"
    relay_deployment         = "${local.console}/kubernetes/deployment/${local.primary_cluster.location}/${local.primary_cluster.name}/${var.relay_namespace}/levelset-relay/overview?${local.project}"
  }
}

output "admission_uri" {
  description = "URL of the admission service (each webhook at <uri>/<name>, after admission_path_token when set); \"\" when the registry has no webhooks."
  value       = local.admission_enabled ? google_cloudfunctions2_function.admission[0].service_config[0].uri : ""
}
