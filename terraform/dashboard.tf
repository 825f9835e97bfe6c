# The operator's view in the Cloud console: a Monitoring dashboard of the whole pipeline, and two SLOs
# on a custom service with their burn-rate alerts.
#
# Every metric the dashboard and the SLOs name is either a log-based metric of monitoring.tf
# (logging.googleapis.com/user/<name>/…) or a built-in metric of Pub/Sub, Cloud Run or GKE;
# test/terraform/dashboard.test.ts checks each filter against that list and the JSON against the
# fields the Monitoring API's Dashboard resource accepts. The panels and the SLO targets:
# terraform/README.md, "Dashboard and SLOs".

locals {
  # Bounds (ms) of the delivery-delay distribution (monitoring.tf reconcile_delivery_delay); the
  # delivery SLO's threshold must be one of them (var.delivery_slo_threshold_ms).
  delivery_delay_bounds_ms = [100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000]

  # Multiwindow burn-rate alerting (the Google SRE workbook, "Alerting on SLOs"): a burn rate of 14.4
  # over 1 h spends 2 % of a 30-day error budget in that hour (page), 6 over 6 h spends 5 % (ticket).
  slo_burn_rate_windows = {
    fast = { lookback = "3600s", threshold = 14.4 }
    slow = { lookback = "21600s", threshold = 6 }
  }

  reconcile_outcomes_type = "logging.googleapis.com/user/${google_logging_metric.reconcile_outcomes.name}"
  delivery_delay_type     = "logging.googleapis.com/user/${google_logging_metric.reconcile_delivery_delay.name}"
}

resource "google_monitoring_dashboard" "levelset" {
  project = var.project_id
  dashboard_json = templatefile("${path.module}/dashboard.json.tftpl", {
    display_name             = "Levelset (${var.name})"
    metric_prefix            = var.name
    reconcile_service        = local.reconcile_function_name
    keys_topic               = google_pubsub_topic.keys.name
    reconcile_subscription   = google_pubsub_subscription.reconcile.name
    resync_subscription      = google_pubsub_subscription.resync.name
    dead_letter_subscription = google_pubsub_subscription.dead_letter.name
    relay_namespace          = var.relay_namespace
    reconcile_success_alert  = google_monitoring_alert_policy.reconcile_success_burn_rate.name
    delivery_alert           = google_monitoring_alert_policy.delivery_burn_rate.name
    admission_service        = local.admission_function_name
  })

  depends_on = [
    google_logging_metric.reconcile_outcomes,
    google_logging_metric.reconcile_duration,
    google_logging_metric.reconcile_delivery_delay,
    google_logging_metric.relay_publish_errors,
    google_logging_metric.drift_corrected,
    google_logging_metric.admission_denials,
  ]
}

resource "google_monitoring_custom_service" "levelset" {
  project      = var.project_id
  service_id   = var.name
  display_name = "Levelset (${var.name})"
  user_labels  = local.labels

  depends_on = [google_project_service.apis]
}

resource "google_monitoring_slo" "reconcile_success" {
  project      = var.project_id
  service      = google_monitoring_custom_service.levelset.service_id
  slo_id       = "reconcile-success"
  display_name = "Reconciles that succeed (not error or transient)"

  goal                = var.reconcile_success_slo_goal
  rolling_period_days = var.slo_rolling_period_days

  request_based_sli {
    good_total_ratio {
      total_service_filter = join(" AND ", [
        "metric.type=\"${local.reconcile_outcomes_type}\"",
        "resource.type=\"cloud_run_revision\"",
      ])
      bad_service_filter = join(" AND ", [
        "metric.type=\"${local.reconcile_outcomes_type}\"",
        "resource.type=\"cloud_run_revision\"",
        "metric.label.\"outcome\"=one_of(\"error\",\"transient\")",
      ])
    }
  }
}

resource "google_monitoring_slo" "delivery" {
  project      = var.project_id
  service      = google_monitoring_custom_service.levelset.service_id
  slo_id       = "key-delivery"
  display_name = "Keys delivered within ${var.delivery_slo_threshold_ms} ms of their enqueue"

  goal                = var.delivery_slo_goal
  rolling_period_days = var.slo_rolling_period_days

  request_based_sli {
    distribution_cut {
      distribution_filter = join(" AND ", [
        "metric.type=\"${local.delivery_delay_type}\"",
        "resource.type=\"cloud_run_revision\"",
      ])
      range {
        max = var.delivery_slo_threshold_ms
      }
    }
  }
}

resource "google_monitoring_alert_policy" "reconcile_success_burn_rate" {
  project               = var.project_id
  display_name          = "Levelset: reconcile success SLO burning its error budget"
  combiner              = "OR"
  notification_channels = var.notification_channels
  user_labels           = local.labels

  dynamic "conditions" {
    for_each = local.slo_burn_rate_windows
    content {
      display_name = "Burn rate over ${conditions.value.lookback} > ${conditions.value.threshold}"
      condition_threshold {
        filter          = "select_slo_burn_rate(\"${google_monitoring_slo.reconcile_success.name}\", \"${conditions.value.lookback}\")"
        comparison      = "COMPARISON_GT"
        threshold_value = conditions.value.threshold
        duration        = "0s"
        trigger {
          count = 1
        }
      }
    }
  }

  alert_strategy {
    auto_close = "86400s"
  }

  documentation {
    mime_type = "text/markdown"
    content   = "More than ${(1 - var.reconcile_success_slo_goal) * 100} % of reconciles end in `error` or `transient` at a rate that spends the ${var.slo_rolling_period_days}-day error budget early. The dashboard \"Levelset (${var.name})\" shows which controller and cluster; Logs Explorer: `jsonPayload.outcome=(\"error\" OR \"transient\")` with labels.controller. A 403 is missing RBAC (npm run generate:manifests), a 5xx or timeout the API server (docs/operations.md)."
  }
}

resource "google_monitoring_alert_policy" "delivery_burn_rate" {
  project               = var.project_id
  display_name          = "Levelset: key delivery SLO burning its error budget"
  combiner              = "OR"
  notification_channels = var.notification_channels
  user_labels           = local.labels

  dynamic "conditions" {
    for_each = local.slo_burn_rate_windows
    content {
      display_name = "Burn rate over ${conditions.value.lookback} > ${conditions.value.threshold}"
      condition_threshold {
        filter          = "select_slo_burn_rate(\"${google_monitoring_slo.delivery.name}\", \"${conditions.value.lookback}\")"
        comparison      = "COMPARISON_GT"
        threshold_value = conditions.value.threshold
        duration        = "0s"
        trigger {
          count = 1
        }
      }
    }
  }

  alert_strategy {
    auto_close = "86400s"
  }

  documentation {
    mime_type = "text/markdown"
    content   = "More than ${(1 - var.delivery_slo_goal) * 100} % of watch and manual keys reach reconcile later than ${var.delivery_slo_threshold_ms} ms after they were enqueued, at a rate that spends the ${var.slo_rolling_period_days}-day error budget early. On the dashboard \"Levelset (${var.name})\": a growing backlog or oldest unacknowledged age (reconcile at max instances: reconcile_max_instances), cold starts, or retries of failing keys (each retry is a late delivery)."
  }
}
