locals {
  console = "https://console.cloud.google.com"
  project = "project=${var.project_id}"

  # Logs Explorer takes the query in the URL path; urlencode writes spaces as "+", which it reads literally.
  logs_reconcile_query = "resource.type=\"cloud_run_revision\"\nresource.labels.service_name=\"${local.reconcile_function_name}\"\n-- narrow to one key: labels.controller=\"CONTROLLER\" labels.key=\"NAMESPACE/NAME\""
  logs_relay_query     = "resource.type=\"k8s_container\"\nresource.labels.cluster_name=\"${var.cluster_name}\"\nresource.labels.namespace_name=\"${var.relay_namespace}\"\nresource.labels.container_name=\"relay\""
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
  description = "Name of the Cloud Scheduler job that runs resync; `gcloud scheduler jobs run <name> --location <region>` runs it now."
  value       = google_cloud_scheduler_job.resync.name
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
  description = "Kubernetes API endpoint the functions use (KUBERNETES_ENDPOINT): the cluster's DNS-based endpoint unless overridden."
  value       = local.kubernetes_endpoint
}

output "crds" {
  description = "Names of the CustomResourceDefinitions installed from functions/controllers/*/crd.yaml."
  value       = sort(keys(local.crds))
}

output "controllers" {
  description = "Controllers in the registry when the RBAC was generated (terraform/registry.gen.tf.json)."
  value       = local.registry_controllers
}

output "console_links" {
  description = "Google Cloud console pages of the deployment: functions, logs, traces, Pub/Sub, dead letters, scheduler, alerts, metrics, relay."
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
    log_based_metrics        = "${local.console}/logs/metrics?${local.project}"
    relay_deployment         = "${local.console}/kubernetes/deployment/${var.cluster_location}/${var.cluster_name}/${var.relay_namespace}/levelset-relay/overview?${local.project}"
  }
}
