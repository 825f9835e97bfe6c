# The reconcile and resync functions (Cloud Run functions, runtime nodejs24) and the resync's
# scheduler jobs, one per cluster.
#
# Source: `var.functions_source_dir`, the functions bundle of the project's registry (esbuild:
# dist/index.mjs and its chunks with source maps, package.json with main = dist/index.mjs,
# package-lock.json); archive_file zips exactly that, beside the calling root (the module may sit
# read-only in node_modules), and the zip's MD5 names the bucket object, so a changed source
# redeploys and an unchanged one does not.

locals {
  functions_source_dir = var.functions_source_dir

  # How the functions reach the clusters, with the runtime service account's Google access token
  # (core/gke-auth.ts; no CA data: a DNS endpoint's certificate is public). One cluster: the
  # Cloud Run path of core/kube.ts, KUBERNETES_ENDPOINT, the cluster `default` (key messages
  # v1, as before clusters existed). A fleet: LEVELSET_CLUSTERS (functions/runtime/clusters.ts), each
  # cluster's id and endpoint, in the order of `clusters`.
  cluster_env = local.fleet ? {
    LEVELSET_CLUSTERS = jsonencode([for c in local.cluster_list : { id = c.id, endpoint = local.cluster_endpoints[c.id] }])
    } : {
    KUBERNETES_ENDPOINT = local.kubernetes_endpoint
  }

  # The instances that send one cluster requests at once, each with an equal share of its request
  # budget: reconcile's, the audit-log function's when it is on (it reconciles too, and scales to as
  # many), and the cluster's one resync run (decision 69).
  budget_instances = var.reconcile_max_instances * (local.audit_log_enabled ? 2 : 1) + 1

  # The clusters' request budget (core/request-budget.ts), shared by those instances; the resync's
  # run stops publishing RESYNC_DEADLINE_MARGIN_SECONDS before its timeout (decision 64).
  budget_env = var.kubernetes_request_budget > 0 ? {
    LEVELSET_REQUEST_BUDGET         = tostring(var.kubernetes_request_budget)
    LEVELSET_MAX_INSTANCES          = tostring(local.budget_instances)
    LEVELSET_RESYNC_TIMEOUT_SECONDS = tostring(var.resync_timeout_seconds)
  } : {}

  function_env = merge(local.controller_env, local.tracing_env, local.requeue_env, local.retry_env, local.topic_controller_env, local.cluster_env, local.budget_env, {
    # V8's heap limit: half of the instance's memory, stated rather than left to how Node reads the
    # instance's memory, so the garbage collector works before the instance hits its limit (the
    # rest: code, buffers, gRPC). `npm run bench` runs the resync at 100k keys with this limit.
    # --max-semi-space-size=8: a young generation of at most 8 MiB per semi-space; without it V8
    # grows it while a resync lists and publishes and keeps the pages (a 100k-key resync: 301 MiB
    # peak RSS with the heap limit alone, 207 MiB with both; local/stack.ts FUNCTION_NODE_OPTIONS).
    # --enable-source-maps: stack traces in the logs (and Error Reporting) name the TypeScript
    # sources of the bundle, not its minified lines.
    NODE_OPTIONS = "--max-old-space-size=${local.function_heap_mib} --max-semi-space-size=8 --enable-source-maps"
    # V8's code for the modules a start loads, compiled at build time by the package's gcp-build
    # (cli/build/package-functions.ts, WARM_COMPILE_CACHE) with the runtime's Node, so a cold start
    # reads it instead of compiling them. The buildpack builds and runs the function in /workspace.
    NODE_COMPILE_CACHE          = "/workspace/dist/compile-cache"
    NODE_COMPILE_CACHE_PORTABLE = "1"
    # glibc's malloc settings, as the relay's image and the local stack run the functions
    # (local/service.ts ALLOCATOR_ENV). At most 2 arenas: glibc's default keeps one per allocating
    # thread (up to 8 per core), and what a thread frees in its arena is seldom returned, so an
    # instance that lives for hours grew outside its flat V8 heap (decisions 63 and 68). Fixed mmap
    # and trim thresholds of 128 KiB: without them glibc raises both to the largest block freed, then
    # carves large Buffers from the arena and keeps its free top (decision 74).
    MALLOC_ARENA_MAX       = "2"
    MALLOC_MMAP_THRESHOLD_ = "131072"
    MALLOC_TRIM_THRESHOLD_ = "131072"
  })
  function_memory_mib = tonumber(regex("^[0-9]+", var.function_memory)) * (endswith(var.function_memory, "Gi") ? 1024 : 1)
  function_heap_mib   = floor(local.function_memory_mib / 2)
}

data "archive_file" "functions" {
  type        = "zip"
  source_dir  = local.functions_source_dir
  output_path = "${path.root}/.build/levelset-functions.zip"
}

resource "google_storage_bucket" "functions_source" {
  project                     = var.project_id
  name                        = "${var.project_id}-${var.name}-functions"
  location                    = var.region
  labels                      = local.labels
  force_destroy               = var.force_destroy_source_bucket
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  depends_on = [google_project_service.apis]
}

resource "google_storage_bucket_object" "functions_source" {
  bucket = google_storage_bucket.functions_source.name
  name   = "functions/${data.archive_file.functions.output_md5}.zip"
  source = data.archive_file.functions.output_path
}

# Images built from the functions' source; the build identity writes here and nowhere else.
resource "google_artifact_registry_repository" "functions" {
  project       = var.project_id
  location      = var.region
  repository_id = "${var.name}-functions"
  format        = "DOCKER"
  description   = "Images of the Levelset functions, built by Cloud Functions."
  labels        = local.labels

  cleanup_policies {
    id     = "keep-recent"
    action = "KEEP"
    most_recent_versions {
      keep_count = 5
    }
  }

  cleanup_policies {
    id     = "delete-old"
    action = "DELETE"
    condition {
      older_than = "2592000s"
    }
  }

  depends_on = [google_project_service.apis]
}

resource "google_artifact_registry_repository_iam_member" "build_writer" {
  project    = var.project_id
  location   = google_artifact_registry_repository.functions.location
  repository = google_artifact_registry_repository.functions.name
  role       = "roles/artifactregistry.writer"
  member     = google_service_account.build.member
}

resource "google_cloudfunctions2_function" "reconcile" {
  project     = var.project_id
  location    = var.region
  name        = local.reconcile_function_name
  description = "Levelset reconcile: one key per Pub/Sub push; converges the cluster to the key's desired state."
  labels      = local.labels

  build_config {
    runtime           = "nodejs24"
    entry_point       = "reconcile"
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
    timeout_seconds                  = var.reconcile_timeout_seconds
    min_instance_count               = 0
    max_instance_count               = var.reconcile_max_instances
    max_instance_request_concurrency = var.reconcile_concurrency
    available_cpu                    = var.function_cpu
    available_memory                 = var.function_memory
    environment_variables            = local.function_env
  }

  depends_on = [
    google_project_iam_member.build,
    google_artifact_registry_repository_iam_member.build_writer,
  ]
}

resource "google_cloudfunctions2_function" "resync" {
  project     = var.project_id
  location    = var.region
  name        = local.resync_function_name
  description = "Levelset resync: publishes every key of every controller (Cloud Scheduler)."
  labels      = local.labels

  build_config {
    runtime           = "nodejs24"
    entry_point       = "resync"
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
    service_account_email          = google_service_account.functions.email
    ingress_settings               = var.ingress_settings
    all_traffic_on_latest_revision = true
    timeout_seconds                = var.resync_timeout_seconds
    min_instance_count             = 0
    # One resync per cluster at a time (a second would only publish the same keys again), and each
    # cluster's scheduler job its own instance: the jobs share a schedule.
    max_instance_count               = length(local.clusters)
    max_instance_request_concurrency = 1
    available_cpu                    = var.function_cpu
    available_memory                 = var.function_memory
    environment_variables            = local.function_env
  }

  depends_on = [
    google_project_iam_member.build,
    google_artifact_registry_repository_iam_member.build_writer,
  ]
}

# Invokers: the push identity may call reconcile, the scheduler identity resync; nobody else.
resource "google_cloud_run_v2_service_iam_member" "reconcile_invoker" {
  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.reconcile.service_config[0].service
  role     = "roles/run.invoker"
  member   = google_service_account.push.member
}

resource "google_cloud_run_v2_service_iam_member" "resync_invoker" {
  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.resync.service_config[0].service
  role     = "roles/run.invoker"
  member   = google_service_account.scheduler.member
}

# One job per cluster, each POSTing {"cluster": "<id>"} (functions/runtime/resync.ts resyncRequestSchema):
# a cluster's enumeration has the whole attempt deadline to itself, an unreachable cluster fails
# and is retried alone, and each cluster's resync has its own outcome (docs/architecture.md,
# decision 27). The single cluster's job keeps its name and its empty body (every cluster of the
# registry, which is `default` alone).
resource "google_cloud_scheduler_job" "resync" {
  for_each = local.clusters

  project          = var.project_id
  region           = var.region
  name             = local.fleet ? "${local.resync_function_name}-${each.key}" : local.resync_function_name
  description      = local.fleet ? "Levelset resync of cluster ${each.key} (${each.value.name}): every key of every controller is published again (level-driven safety net)." : "Levelset resync: every key of every controller is published again (level-driven safety net)."
  schedule         = var.resync_schedule
  time_zone        = var.resync_time_zone
  attempt_deadline = "${var.resync_timeout_seconds}s"

  retry_config {
    # The next scheduled run is the retry.
    retry_count = 0
  }

  http_target {
    http_method = "POST"
    uri         = google_cloudfunctions2_function.resync.service_config[0].uri
    headers     = { "Content-Type" = "application/json" }
    body        = base64encode(local.fleet ? jsonencode({ cluster = each.key }) : "{}")

    oidc_token {
      service_account_email = google_service_account.scheduler.email
      audience              = google_cloudfunctions2_function.resync.service_config[0].uri
    }
  }

  depends_on = [google_cloud_run_v2_service_iam_member.resync_invoker]
}

# The single cluster's job, before there was one per cluster.
moved {
  from = google_cloud_scheduler_job.resync
  to   = google_cloud_scheduler_job.resync["default"]
}
