# Drift seen from Cloud Audit Logs (functions/runtime/audit-log.ts, docs/external-resources.md): a change made
# to a managed cloud resource outside Levelset is an Admin Activity entry (always on, free); a log
# sink in each audited project sends the entries of the services the registered controllers manage
# to a topic, whose push subscription calls the auditLog function, which publishes the owning
# object's key to the keys topic. The filter comes from the registry (`var.registry.audit_log_filter`,
# generated with deploy/registry.gen.json); with no controller declaring `auditLog` it is
# empty and nothing here is created.

locals {
  audit_log_enabled       = var.registry.audit_log_filter != ""
  audit_log_function_name = "${var.name}-audit-log"
  # The projects whose resources the controllers manage: the functions' own, and the Topics'.
  audit_log_projects = local.audit_log_enabled ? toset(distinct(concat([var.project_id, local.topic_controller_project], var.audit_log_projects))) : toset([])
}

resource "google_pubsub_topic" "audit_log" {
  count = local.audit_log_enabled ? 1 : 0

  project = var.project_id
  name    = "${var.name}-audit-log"
  labels  = local.labels

  depends_on = [google_project_service.apis]
}

# Levelset's own writes (the functions' service account) are left out here, which saves a delivery
# each; the auditLog function drops them too (LEVELSET_FUNCTIONS_SERVICE_ACCOUNT), whatever sends it
# entries.
resource "google_logging_project_sink" "audit_log" {
  for_each = local.audit_log_projects

  project     = each.value
  name        = "${var.name}-audit-log"
  description = "Levelset: Admin Activity audit log entries of the resources its controllers manage, to the auditLog function."
  destination = "pubsub.googleapis.com/${google_pubsub_topic.audit_log[0].id}"
  filter = join(" AND ", [
    var.registry.audit_log_filter,
    "NOT protoPayload.authenticationInfo.principalEmail=\"${google_service_account.functions.email}\"",
  ])
  unique_writer_identity = true
}

# Each sink writes as its own identity, which may publish to the topic and nothing else.
resource "google_pubsub_topic_iam_member" "audit_log_writer" {
  for_each = local.audit_log_projects

  project = var.project_id
  topic   = google_pubsub_topic.audit_log[0].name
  role    = "roles/pubsub.publisher"
  member  = google_logging_project_sink.audit_log[each.key].writer_identity
}

resource "google_cloudfunctions2_function" "audit_log" {
  count = local.audit_log_enabled ? 1 : 0

  project     = var.project_id
  location    = var.region
  name        = local.audit_log_function_name
  description = "Levelset auditLog: maps an audit log entry of a change made outside Levelset to the owning object's key."
  labels      = local.labels

  build_config {
    runtime           = "nodejs24"
    entry_point       = "auditLog"
    service_account   = google_service_account.build.id
    docker_repository = google_artifact_registry_repository.functions.id

    source {
      storage_source {
        bucket = google_storage_bucket.functions_source.name
        object = google_storage_bucket_object.functions_source.name
      }
    }
  }

  service_config {
    service_account_email            = google_service_account.functions.email
    ingress_settings                 = var.ingress_settings
    all_traffic_on_latest_revision   = true
    timeout_seconds                  = 60
    min_instance_count               = 0
    max_instance_count               = var.reconcile_max_instances
    max_instance_request_concurrency = var.reconcile_concurrency
    available_cpu                    = var.function_cpu
    available_memory                 = var.function_memory
    environment_variables = merge(local.function_env, {
      LEVELSET_FUNCTIONS_SERVICE_ACCOUNT = google_service_account.functions.email
    })
  }

  depends_on = [
    google_project_iam_member.build,
    google_artifact_registry_repository_iam_member.build_writer,
  ]
}

resource "google_cloud_run_v2_service_iam_member" "audit_log_invoker" {
  count = local.audit_log_enabled ? 1 : 0

  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.audit_log[0].service_config[0].service
  role     = "roles/run.invoker"
  member   = google_service_account.push.member
}

# No ordering (the entries of one resource are independent: the reconcile reads the whole state) and
# no dead-letter topic (an entry that keeps failing is dropped after the retention; the resync still
# finds the drift).
resource "google_pubsub_subscription" "audit_log" {
  count = local.audit_log_enabled ? 1 : 0

  project = var.project_id
  name    = "${var.name}-audit-log-push"
  topic   = google_pubsub_topic.audit_log[0].id
  labels  = local.labels

  ack_deadline_seconds       = 60
  message_retention_duration = "3600s"

  retry_policy {
    minimum_backoff = "${var.retry_minimum_backoff_seconds}s"
    maximum_backoff = "${var.retry_maximum_backoff_seconds}s"
  }

  push_config {
    push_endpoint = google_cloudfunctions2_function.audit_log[0].service_config[0].uri

    oidc_token {
      service_account_email = google_service_account.push.email
      audience              = google_cloudfunctions2_function.audit_log[0].service_config[0].uri
    }
  }

  expiration_policy {
    ttl = ""
  }

  depends_on = [google_cloud_run_v2_service_iam_member.audit_log_invoker]
}
