# Traces (core/tracing.ts, docs/operations.md "Traces"): the functions and the relay export one
# trace per key to Cloud Trace with the OpenTelemetry SDK (Cloud Trace exporter, API v2). Each
# identity that writes spans gets roles/cloudtrace.agent (cloudtrace.traces.patch) and nothing else
# for it; the push and scheduler identities write none.

locals {
  tracing_env = {
    LEVELSET_TRACING            = var.enable_tracing ? "cloud-trace" : "off"
    LEVELSET_TRACE_SAMPLE_RATIO = tostring(var.trace_sample_ratio)
  }
  # Cloud Trace's trace-list filter for Levelset's traces: each of its spans carries this label.
  trace_filter = "HasLabel:levelset.controller"
}

resource "google_project_iam_member" "functions_trace_agent" {
  count = var.enable_tracing ? 1 : 0

  project = var.project_id
  role    = "roles/cloudtrace.agent"
  member  = google_service_account.functions.member
}

# The relay's Kubernetes ServiceAccount, through Workload Identity Federation (as its publish grant).
resource "google_project_iam_member" "relay_trace_agent" {
  count = var.enable_tracing ? 1 : 0

  project = var.project_id
  role    = "roles/cloudtrace.agent"
  member  = "principal://iam.googleapis.com/projects/${local.project_number}/locations/global/workloadIdentityPools/${var.project_id}.svc.id.goog/subject/ns/${var.relay_namespace}/sa/${local.relay_service_account}"
}
