# The keys topic and its one push subscription to reconcile (docs/architecture.md "The flow", step 2): message
# ordering on (one key at a time per ordering key controller/namespace/name), exponential backoff,
# a dead-letter topic after max_delivery_attempts, OIDC-authenticated push.

resource "google_pubsub_topic" "keys" {
  project = var.project_id
  name    = var.topic_name
  labels  = local.labels

  depends_on = [google_project_service.apis]
}

resource "google_pubsub_topic" "dead_letter" {
  project = var.project_id
  name    = local.dead_letter_topic_name
  labels  = local.labels

  depends_on = [google_project_service.apis]
}

# Keys that exhausted their deliveries wait here to be inspected and replayed (README "Dead letters").
resource "google_pubsub_subscription" "dead_letter" {
  project = var.project_id
  name    = local.dead_letter_topic_name
  topic   = google_pubsub_topic.dead_letter.id
  labels  = local.labels

  ack_deadline_seconds       = 60
  message_retention_duration = "${var.dead_letter_retention_days * 86400}s"
  retain_acked_messages      = false

  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription" "reconcile" {
  project = var.project_id
  name    = "${var.topic_name}-reconcile"
  topic   = google_pubsub_topic.keys.id
  labels  = local.labels

  enable_message_ordering = true
  ack_deadline_seconds    = var.ack_deadline_seconds

  retry_policy {
    minimum_backoff = "${var.retry_minimum_backoff_seconds}s"
    maximum_backoff = "${var.retry_maximum_backoff_seconds}s"
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.dead_letter.id
    max_delivery_attempts = var.max_delivery_attempts
  }

  push_config {
    push_endpoint = google_cloudfunctions2_function.reconcile.service_config[0].uri

    oidc_token {
      service_account_email = google_service_account.push.email
      audience              = google_cloudfunctions2_function.reconcile.service_config[0].uri
    }
  }

  expiration_policy {
    ttl = ""
  }

  depends_on = [
    google_cloud_run_v2_service_iam_member.reconcile_invoker,
    google_pubsub_topic_iam_member.dead_letter_publisher,
  ]
}

# The resync's keys (core/config.ts, resyncTopicOf): a topic and push subscription of their own,
# to the same reconcile function, so that a live key never waits behind a resync's backlog (one
# subscription would hand out the 100k resync keys queued before it). Pub/Sub delivers each
# subscription's backlog independently; the resync's drains at its own pace (push flow control adapts
# to the function's answers) and never blocks live keys, nor do live keys starve it: both
# subscriptions are pushed at once. Same backoff and dead-letter topic as live keys; no message
# ordering: the resync publishes its keys without ordering key, batched (docs/architecture.md
# decision 33), and a level-driven reconcile needs no order between them. (Changing this replaces
# the subscription: a pending resync backlog is dropped, and the next resync publishes it again.)
resource "google_pubsub_topic" "resync" {
  project = var.project_id
  name    = local.resync_topic_name
  labels  = local.labels

  depends_on = [google_project_service.apis]
}

resource "google_pubsub_subscription" "resync" {
  project = var.project_id
  name    = "${local.resync_topic_name}-reconcile"
  topic   = google_pubsub_topic.resync.id
  labels  = local.labels

  enable_message_ordering = false
  ack_deadline_seconds    = var.ack_deadline_seconds

  retry_policy {
    minimum_backoff = "${var.retry_minimum_backoff_seconds}s"
    maximum_backoff = "${var.retry_maximum_backoff_seconds}s"
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.dead_letter.id
    max_delivery_attempts = var.max_delivery_attempts
  }

  push_config {
    push_endpoint = google_cloudfunctions2_function.reconcile.service_config[0].uri

    oidc_token {
      service_account_email = google_service_account.push.email
      audience              = google_cloudfunctions2_function.reconcile.service_config[0].uri
    }
  }

  expiration_policy {
    ttl = ""
  }

  depends_on = [
    google_cloud_run_v2_service_iam_member.reconcile_invoker,
    google_pubsub_topic_iam_member.dead_letter_publisher,
  ]
}

resource "google_pubsub_subscription_iam_member" "resync_dead_letter_subscriber" {
  project      = var.project_id
  subscription = google_pubsub_subscription.resync.name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_service_agent
}

# resync publishes every key to its own topic.
resource "google_pubsub_topic_iam_member" "functions_resync_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.resync.name
  role    = "roles/pubsub.publisher"
  member  = google_service_account.functions.member
}

# The Pub/Sub service agent forwards dead letters: it publishes to the dead-letter topic and
# acknowledges on the source subscription.
resource "google_pubsub_topic_iam_member" "dead_letter_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.dead_letter.name
  role    = "roles/pubsub.publisher"
  member  = local.pubsub_service_agent
}

resource "google_pubsub_subscription_iam_member" "dead_letter_subscriber" {
  project      = var.project_id
  subscription = google_pubsub_subscription.reconcile.name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_service_agent
}

# resync publishes every key; reconcile may publish a key again (requeue).
resource "google_pubsub_topic_iam_member" "functions_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.keys.name
  role    = "roles/pubsub.publisher"
  member  = google_service_account.functions.member
}

# The relay publishes as its Kubernetes ServiceAccount, through Workload Identity Federation for GKE
# (a direct principal: no Google service account, no annotation).
resource "google_pubsub_topic_iam_member" "relay_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.keys.name
  role    = "roles/pubsub.publisher"
  member  = "principal://iam.googleapis.com/projects/${local.project_number}/locations/global/workloadIdentityPools/${var.project_id}.svc.id.goog/subject/ns/${var.relay_namespace}/sa/${local.relay_service_account}"
}
