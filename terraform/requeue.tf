# Requeue (functions/requeue.ts): a reconcile that returns `requeueAfterMs` gets its key delivered
# to reconcile again after that delay, as a Cloud Tasks HTTP task (scheduleTime = now + delay; Cloud
# Tasks dispatches at that second or shortly after) carrying the same push envelope and an OIDC
# token of the push identity — the one identity allowed to invoke reconcile. Cloud Tasks may call an
# internal-only function of its own project. Without this, the next resync brings the key back.

locals {
  # Cloud Run's deterministic URL of the reconcile service (https://SERVICE-PROJECT_NUMBER.REGION.run.app),
  # known before the function exists: the function's own environment cannot reference its uri.
  reconcile_deterministic_url = "https://${local.reconcile_function_name}-${local.project_number}.${var.region}.run.app/"

  requeue_env = {
    LEVELSET_REQUEUE         = "cloud-tasks"
    LEVELSET_REQUEUE_URL     = local.reconcile_deterministic_url
    LEVELSET_REQUEUE_QUEUE   = google_cloud_tasks_queue.requeue.id
    LEVELSET_REQUEUE_INVOKER = google_service_account.push.email
  }
}

resource "google_cloud_tasks_queue" "requeue" {
  project  = var.project_id
  location = var.region
  name     = "${var.name}-requeue"

  # A task answered 500 (transient) is retried as Pub/Sub retries a push; after the last attempt it
  # is dropped, and the resync remains the safety net.
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

# A task carrying the push identity's OIDC token may be created only by who may act as it.
resource "google_service_account_iam_member" "functions_act_as_push" {
  service_account_id = google_service_account.push.name
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.functions.member
}
