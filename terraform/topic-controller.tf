# The Topic controller (functions/controllers/topic): opt-in. Enabled, the reconcile function's
# service account may create, update and delete Pub/Sub topics and subscriptions in the Topics'
# project, through a custom role holding exactly the permissions the controller uses (narrower than
# roles/pubsub.editor: no publish, no pull, no snapshots, no IAM). Disabled, it gets nothing, and a
# Topic's reconcile ends in Ready=False/PermissionDenied.

locals {
  topic_controller_project = coalesce(var.topic_controller_project, var.project_id)
  topic_controller_env = var.enable_topic_controller ? {
    LEVELSET_CLOUD_PROJECT = local.topic_controller_project
  } : {}
}

resource "google_project_iam_custom_role" "topic_controller" {
  count = var.enable_topic_controller ? 1 : 0

  project     = local.topic_controller_project
  role_id     = "${replace(var.name, "-", "_")}_topic_controller"
  title       = "Levelset: Topic controller"
  description = "Create, read, update and delete the Pub/Sub topics and subscriptions that Topic objects stand for."
  permissions = [
    "pubsub.topics.create",
    "pubsub.topics.get",
    "pubsub.topics.update",
    "pubsub.topics.delete",
    "pubsub.topics.attachSubscription",
    "pubsub.subscriptions.create",
    "pubsub.subscriptions.get",
    "pubsub.subscriptions.update",
    "pubsub.subscriptions.delete",
  ]
}

resource "google_project_iam_member" "topic_controller" {
  count = var.enable_topic_controller ? 1 : 0

  project = local.topic_controller_project
  role    = google_project_iam_custom_role.topic_controller[0].id
  member  = google_service_account.functions.member
}
