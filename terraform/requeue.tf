# Requeue and retry (functions/runtime/requeue.ts, functions/runtime/retry.ts): a key comes back to reconcile after a
# delay — because its reconcile returned `requeueAfterMs`, or because it failed and reconcile
# acknowledged it (never a non-2xx answer: on Pub/Sub that would slow the pushes of every key, the
# push backoff) and retries it after a per-key backoff. Either way a Cloud Tasks HTTP task
# (scheduleTime = now + delay; Cloud Tasks dispatches at that second or shortly after) publishes the
# key message to the keys topic with its ordering key, through Pub/Sub's REST topics.publish with an
# OAuth token of the functions' identity: the key comes back through the ordered subscription, so it
# is never reconciled beside a pushed delivery of itself. After max_delivery_attempts, reconcile
# publishes the key to the dead-letter topic itself, with the attributes Pub/Sub's dead-lettering adds.

locals {
  # Pub/Sub's regional endpoint in the functions' region: messages of one ordering key published
  # in one region are delivered in order.
  keys_publish_url = "https://${var.region}-pubsub.googleapis.com/v1/${google_pubsub_topic.keys.id}:publish"

  requeue_env = {
    LEVELSET_REQUEUE         = "cloud-tasks"
    LEVELSET_REQUEUE_URL     = local.keys_publish_url
    LEVELSET_REQUEUE_QUEUE   = google_cloud_tasks_queue.requeue.id
    LEVELSET_REQUEUE_INVOKER = google_service_account.functions.email
  }

  # The retries' bounds: the same attempts as the subscriptions' dead-letter policy.
  retry_env = {
    LEVELSET_MAX_DELIVERY_ATTEMPTS = tostring(var.max_delivery_attempts)
    LEVELSET_DEAD_LETTER_TOPIC     = local.dead_letter_topic_name
  }
}

resource "google_cloud_tasks_queue" "requeue" {
  project  = var.project_id
  location = var.region
  name     = "${var.name}-requeue"

  # A publish that failed (Pub/Sub unavailable) is retried with backoff; after the last attempt the
  # task is dropped, and the resync remains the safety net.
  retry_config {
    max_attempts = var.max_delivery_attempts
    min_backoff  = "${var.retry_minimum_backoff_seconds}s"
    max_backoff  = "${var.retry_maximum_backoff_seconds}s"
  }

  depends_on = [google_project_service.apis]
}

# The functions create tasks in this queue, and only in it.
resource "google_cloud_tasks_queue_iam_member" "functions_enqueuer" {
  project  = var.project_id
  location = var.region
  name     = google_cloud_tasks_queue.requeue.name
  role     = "roles/cloudtasks.enqueuer"
  member   = google_service_account.functions.member
}

# A task carrying the functions' OAuth token may be created only by who may act as that identity:
# the functions themselves. The token publishes to the keys topic (functions_publisher, pubsub.tf).
resource "google_service_account_iam_member" "functions_act_as_self" {
  service_account_id = google_service_account.functions.name
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.functions.member
}

# reconcile dead-letters a key that failed its every attempt (functions/runtime/retry.ts).
resource "google_pubsub_topic_iam_member" "functions_dead_letter_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.dead_letter.name
  role    = "roles/pubsub.publisher"
  member  = google_service_account.functions.member
}
