# Log-based metrics from the JSON lines the functions and the relay write (core/log.ts):
# `logging.googleapis.com/labels` becomes the entry's labels (controller, key); the reconcile's final
# line carries `outcome` (success | requeue | transient | terminal | malformed | error) and
# `durationMs`; a key a resync or an audit log entry found drifted adds one WARNING line with
# `drift: true` and `driftSource` (functions/runtime/drift.ts); every line of a delivery carries `deliveryDelayMs`, from the key message's
# `enqueuedAt` to its delivery (functions/runtime/reconcile.ts). Labels `controller` and `cluster` come from
# the line's labels (core/log.ts keyLogger). Alerts: keys in the dead-letter subscription, relay
# publish failures, drift the resync corrected (watch events the relay missed; the audit log's drift
# is expected, counted, never alerted on). The dashboard and the
# SLOs that read these metrics: dashboard.tf.

locals {
  reconcile_log_filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=\"${local.reconcile_function_name}\"",
    "jsonPayload.outcome:*",
  ])

  # One line per key whose resync- or audit-log-triggered reconcile changed something
  # (functions/runtime/drift.ts): the cloud's count of `levelset_drift_corrected_total` (Cloud Run instances
  # are not scraped).
  drift_log_filter = join(" AND ", [
    "resource.type=\"cloud_run_revision\"",
    "resource.labels.service_name=\"${local.reconcile_function_name}\"",
    "jsonPayload.drift=true",
  ])

  # The relay containers of every cluster (GKE's k8s_container resource names the cluster); one
  # cluster's filter is what it was before clusters existed.
  relay_cluster_terms  = [for c in local.cluster_list : "resource.labels.cluster_name=\"${c.name}\""]
  relay_cluster_filter = length(local.relay_cluster_terms) == 1 ? local.relay_cluster_terms[0] : "(${join(" OR ", local.relay_cluster_terms)})"

  relay_publish_error_filter = join(" AND ", [
    "resource.type=\"k8s_container\"",
    local.relay_cluster_filter,
    "resource.labels.namespace_name=\"${var.relay_namespace}\"",
    "resource.labels.container_name=\"relay\"",
    "severity>=ERROR",
    "jsonPayload.message=\"publish failed\"",
  ])
}

resource "google_logging_metric" "reconcile_outcomes" {
  project     = var.project_id
  name        = "${var.name}/reconcile_outcomes"
  description = "Levelset reconcile deliveries by controller and outcome."
  filter      = local.reconcile_log_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "Levelset reconcile outcomes"

    labels {
      key         = "controller"
      value_type  = "STRING"
      description = "The controller (key message's controller)."
    }
    labels {
      key         = "cluster"
      value_type  = "STRING"
      description = "The cluster id of the key (its log line's labels.cluster; default with cluster_name)."
    }
    labels {
      key         = "outcome"
      value_type  = "STRING"
      description = "success, requeue, transient, terminal, malformed or error."
    }
  }

  label_extractors = {
    controller = "EXTRACT(labels.controller)"
    cluster    = "EXTRACT(labels.cluster)"
    outcome    = "EXTRACT(jsonPayload.outcome)"
  }

  depends_on = [google_project_service.apis]
}

resource "google_logging_metric" "reconcile_duration" {
  project         = var.project_id
  name            = "${var.name}/reconcile_duration"
  description     = "Levelset reconcile duration (durationMs of the final line) by controller and outcome."
  filter          = "${local.reconcile_log_filter} AND jsonPayload.durationMs:*"
  value_extractor = "EXTRACT(jsonPayload.durationMs)"

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "DISTRIBUTION"
    unit         = "ms"
    display_name = "Levelset reconcile duration"

    labels {
      key         = "controller"
      value_type  = "STRING"
      description = "The controller (key message's controller)."
    }
    labels {
      key         = "cluster"
      value_type  = "STRING"
      description = "The cluster id of the key (its log line's labels.cluster; default with cluster_name)."
    }
    labels {
      key         = "outcome"
      value_type  = "STRING"
      description = "success, requeue, transient, terminal, malformed or error."
    }
  }

  label_extractors = {
    controller = "EXTRACT(labels.controller)"
    cluster    = "EXTRACT(labels.cluster)"
    outcome    = "EXTRACT(jsonPayload.outcome)"
  }

  bucket_options {
    exponential_buckets {
      num_finite_buckets = 20
      growth_factor      = 2
      scale              = 5
    }
  }

  depends_on = [google_project_service.apis]
}

resource "google_logging_metric" "reconcile_delivery_delay" {
  project     = var.project_id
  name        = "${var.name}/reconcile_delivery_delay"
  description = "Levelset: ms from a key's enqueuedAt to its delivery to reconcile (deliveryDelayMs of the final line), for keys of watch events and operators; by controller and cluster."
  # Only the final line of a delivery (outcome), and only the keys the delivery SLO is about: a
  # resync's keys queue behind each other on purpose, a requeue's wait for their requeueAfterMs.
  filter          = "${local.reconcile_log_filter} AND jsonPayload.deliveryDelayMs:* AND jsonPayload.reason=(\"watch\" OR \"manual\")"
  value_extractor = "EXTRACT(jsonPayload.deliveryDelayMs)"

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "DISTRIBUTION"
    unit         = "ms"
    display_name = "Levelset key delivery delay"

    labels {
      key         = "controller"
      value_type  = "STRING"
      description = "The controller (key message's controller)."
    }
    labels {
      key         = "cluster"
      value_type  = "STRING"
      description = "The cluster id of the key (its log line's labels.cluster; default with cluster_name)."
    }
    labels {
      key         = "source"
      value_type  = "STRING"
      description = "Where the drift was found: resync, or audit-log (a change outside Levelset reported by Cloud Audit Logs)."
    }
  }

  label_extractors = {
    controller = "EXTRACT(labels.controller)"
    cluster    = "EXTRACT(labels.cluster)"
    source     = "EXTRACT(jsonPayload.driftSource)"
  }

  # Explicit bounds, one of which is the delivery SLO's threshold (variable validation): the SLO's
  # distribution cut counts whole buckets, so its threshold must be a bucket bound.
  bucket_options {
    explicit_buckets {
      bounds = local.delivery_delay_bounds_ms
    }
  }

  depends_on = [google_project_service.apis]
}

resource "google_logging_metric" "relay_publish_errors" {
  project     = var.project_id
  name        = "${var.name}/relay_publish_errors"
  description = "Levelset relay: keys it failed to publish to Pub/Sub."
  filter      = local.relay_publish_error_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "Levelset relay publish errors"
  }

  depends_on = [google_project_service.apis]
}

resource "google_logging_metric" "drift_corrected" {
  project     = var.project_id
  name        = "${var.name}/drift_corrected"
  description = "Levelset: keys found drifted (their reconcile changed something no watch event had announced), by controller and source (resync, audit-log)."
  filter      = local.drift_log_filter

  metric_descriptor {
    metric_kind  = "DELTA"
    value_type   = "INT64"
    unit         = "1"
    display_name = "Levelset drift corrected"

    labels {
      key         = "controller"
      value_type  = "STRING"
      description = "The controller (key message's controller)."
    }
    labels {
      key         = "cluster"
      value_type  = "STRING"
      description = "The cluster id of the key (its log line's labels.cluster; default with cluster_name)."
    }
    labels {
      key         = "source"
      value_type  = "STRING"
      description = "Where the drift was found: resync, or audit-log (a change outside Levelset reported by Cloud Audit Logs)."
    }
  }

  label_extractors = {
    controller = "EXTRACT(labels.controller)"
    cluster    = "EXTRACT(labels.cluster)"
    source     = "EXTRACT(jsonPayload.driftSource)"
  }

  depends_on = [google_project_service.apis]
}

resource "google_monitoring_alert_policy" "dead_letters" {
  project               = var.project_id
  display_name          = "Levelset: keys in the dead-letter subscription"
  combiner              = "OR"
  notification_channels = var.notification_channels
  user_labels           = local.labels

  conditions {
    display_name = "Undelivered messages in ${local.dead_letter_topic_name} > 0"

    condition_threshold {
      filter = join(" AND ", [
        "resource.type = \"pubsub_subscription\"",
        "resource.labels.subscription_id = \"${google_pubsub_subscription.dead_letter.name}\"",
        "metric.type = \"pubsub.googleapis.com/subscription/num_undelivered_messages\"",
      ])
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"

      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_MAX"
      }

      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "86400s"
  }

  documentation {
    mime_type = "text/markdown"
    content   = "A key failed reconcile ${var.max_delivery_attempts} times and was dead-lettered. Read its story in Logs Explorer (labels.controller and labels.key), fix the cause, then `npx levelset dead-letters replay --project ${var.project_id}` (replays ${google_pubsub_subscription.dead_letter.name}) or `npx levelset resync --project ${var.project_id}` (docs/operations.md \"Dead letters\")."
  }
}

resource "google_monitoring_alert_policy" "relay_publish_errors" {
  project               = var.project_id
  display_name          = "Levelset: relay cannot publish keys"
  combiner              = "OR"
  notification_channels = var.notification_channels
  user_labels           = local.labels

  conditions {
    display_name = "Relay publish failures in 5 min > 0"

    condition_threshold {
      filter = join(" AND ", [
        "resource.type = \"k8s_container\"",
        "metric.type = \"logging.googleapis.com/user/${google_logging_metric.relay_publish_errors.name}\"",
      ])
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"

      aggregations {
        alignment_period   = "300s"
        per_series_aligner = "ALIGN_SUM"
      }

      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "86400s"
  }

  documentation {
    mime_type = "text/markdown"
    content   = "The relay logged \"publish failed\": keys are not reaching Pub/Sub (check Workload Identity Federation and roles/pubsub.publisher on ${var.topic_name}). Watch events are lost until it recovers; the next resync re-publishes every key."
  }
}

resource "google_monitoring_alert_policy" "drift_corrected" {
  project               = var.project_id
  display_name          = "Levelset: the resync corrected drift (missed watch events)"
  combiner              = "OR"
  notification_channels = var.notification_channels
  user_labels           = local.labels

  conditions {
    display_name = "Keys found drifted by the resync in 1 h > 0"

    condition_threshold {
      filter = join(" AND ", [
        "resource.type = \"cloud_run_revision\"",
        "metric.type = \"logging.googleapis.com/user/${google_logging_metric.drift_corrected.name}\"",
        # The audit log's drift is a change someone made outside Levelset, undone as it should be.
        "metric.label.source = \"resync\"",
      ])
      comparison      = "COMPARISON_GT"
      threshold_value = 0
      duration        = "0s"

      aggregations {
        alignment_period     = "3600s"
        per_series_aligner   = "ALIGN_SUM"
        cross_series_reducer = "REDUCE_SUM"
        group_by_fields      = ["metric.label.controller"]
      }

      trigger {
        count = 1
      }
    }
  }

  alert_strategy {
    auto_close = "86400s"
  }

  documentation {
    mime_type = "text/markdown"
    content   = "A resync (schedule `${var.resync_schedule}`) found keys that were not converged although no watch event had announced a change: the relay missed watch events (a watch that silently stopped, a relay outage), or something changed the objects outside the API's events. The resync corrected them. Find them in Logs Explorer with `jsonPayload.drift=true` (labels.controller, labels.key); check `npx levelset status --relay-url …` (informer restarts) and the relay's logs (docs/operations.md \"Missed events\")."
  }
}
