# ---------------------------------------------------------------------------------------------------
# Where Levelset runs
# ---------------------------------------------------------------------------------------------------

variable "project_id" {
  description = "Google Cloud project that holds the GKE cluster and receives every Levelset resource (topic, functions, scheduler job, service accounts, metrics)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a project ID (6-30 lowercase letters, digits, hyphens), not a project name or number."
  }
}

variable "region" {
  description = "Region of the functions, the scheduler job, the source bucket and the Artifact Registry repository, e.g. europe-west1."
  type        = string

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must be a Google Cloud region such as europe-west1 (not a zone such as europe-west1-b)."
  }
}

variable "cluster_name" {
  description = "Name of the existing GKE cluster the controllers reconcile (a single-cluster deployment; its id is `default`). It needs Workload Identity Federation for GKE and the DNS-based control-plane endpoint with external traffic allowed. Leave null when `clusters` lists the clusters."
  type        = string
  default     = null

  validation {
    condition     = var.cluster_name == null || can(regex("^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$", var.cluster_name))
    error_message = "cluster_name must be a GKE cluster name (lowercase letters, digits, hyphens; at most 40 characters)."
  }
}

variable "cluster_location" {
  description = "Location of the GKE cluster of cluster_name: a region (regional cluster) or a zone (zonal cluster). Leave null when `clusters` lists the clusters."
  type        = string
  default     = null

  validation {
    condition     = var.cluster_location == null || can(regex("^[a-z]+-[a-z]+[0-9]+(-[a-z])?$", var.cluster_location))
    error_message = "cluster_location must be a region (europe-west1) or a zone (europe-west1-b)."
  }
}

variable "kubernetes_endpoint" {
  description = "Kubernetes API endpoint of the cluster of cluster_name the functions and the kubernetes provider use, as an https URL. Default (null): the cluster's DNS-based control-plane endpoint, read from the cluster. With `clusters`, each entry's kubernetes_endpoint instead."
  type        = string
  default     = null

  validation {
    condition     = var.kubernetes_endpoint == null || can(regex("^https://[^/\\s]+/?$", var.kubernetes_endpoint))
    error_message = "kubernetes_endpoint must be an https URL with a host and no path, e.g. https://gke-1234.europe-west1.gke.goog."
  }
}

variable "clusters" {
  description = "The GKE clusters of a fleet, all in project_id, instead of cluster_name and cluster_location: one set of functions serves them all (LEVELSET_CLUSTERS), each gets a resync scheduler job. `id` (default: the name; a DNS-1123 label) is what key messages name; `kubernetes_endpoint` overrides the DNS-based endpoint. This module installs the relay, CRDs and RBAC in the first cluster; every other cluster needs the modules/cluster module with its own kubernetes provider (examples/fleet). Empty: the single cluster of cluster_name, id `default`."
  type = list(object({
    name                = string
    location            = string
    id                  = optional(string)
    kubernetes_endpoint = optional(string)
  }))
  default  = []
  nullable = false

  validation {
    condition = alltrue([
      for c in var.clusters :
      can(regex("^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$", c.name)) && can(regex("^[a-z]+-[a-z]+[0-9]+(-[a-z])?$", c.location))
    ])
    error_message = "Each of clusters needs a GKE cluster name (lowercase letters, digits, hyphens; at most 40 characters) and a location: a region (europe-west1) or a zone (europe-west1-b)."
  }

  validation {
    condition     = alltrue([for c in var.clusters : c.id == null || can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", c.id))])
    error_message = "A cluster id must be a DNS-1123 label (lowercase letters, digits, hyphens; at most 63 characters): key messages and the relay's RELAY_CLUSTER name it."
  }

  validation {
    condition     = length(distinct([for c in var.clusters : coalesce(c.id, c.name)])) == length(var.clusters)
    error_message = "Cluster ids (id, else name) must be unique in clusters."
  }

  validation {
    condition     = alltrue([for c in var.clusters : c.kubernetes_endpoint == null || can(regex("^https://[^/\\s]+/?$", c.kubernetes_endpoint))])
    error_message = "A cluster's kubernetes_endpoint must be an https URL with a host and no path, e.g. https://gke-1234.europe-west1.gke.goog."
  }

  validation {
    # One way or the other: cluster_name + cluster_location (one cluster) or clusters (a list).
    condition = (length(var.clusters) == 0
      ? var.cluster_name != null && var.cluster_location != null
    : var.cluster_name == null && var.cluster_location == null && var.kubernetes_endpoint == null)
    error_message = "Set either cluster_name and cluster_location (one cluster, optionally kubernetes_endpoint) or clusters (a list of clusters), not both and not neither."
  }
}

variable "name" {
  description = "Prefix of every Levelset resource name (service accounts, functions, bucket, metrics, scheduler job)."
  type        = string
  default     = "levelset"

  validation {
    # Service account IDs are 6-30 characters and the longest suffix is "-scheduler" (10).
    condition     = can(regex("^[a-z][a-z0-9-]{2,18}[a-z0-9]$", var.name))
    error_message = "name must be 4-20 lowercase letters, digits or hyphens, starting with a letter."
  }
}

variable "labels" {
  description = "Labels added to every Google Cloud resource that takes labels."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for k, v in var.labels : can(regex("^[a-z][a-z0-9_-]{0,62}$", k)) && can(regex("^[a-z0-9_-]{0,63}$", v))])
    error_message = "labels keys must start with a lowercase letter; keys and values use lowercase letters, digits, _ and - (at most 63 characters)."
  }
}

variable "enable_apis" {
  description = "Enable the Google Cloud APIs Levelset uses (Cloud Run, Cloud Functions, Cloud Build, Artifact Registry, Pub/Sub, Cloud Scheduler, Cloud Tasks, Cloud Trace, Logging, Monitoring, GKE, IAM). They are never disabled on destroy."
  type        = bool
  default     = true
}

# ---------------------------------------------------------------------------------------------------
# Pub/Sub: keys, delivery, dead letters
# ---------------------------------------------------------------------------------------------------

variable "topic_name" {
  description = "ID of the Pub/Sub topic of keys (the functions' and the relay's LEVELSET_TOPIC). The dead-letter topic is <topic_name>-dead-letter."
  type        = string
  default     = "levelset-keys"

  validation {
    condition     = can(regex("^[a-zA-Z][a-zA-Z0-9._~+%-]{2,220}$", var.topic_name)) && !startswith(var.topic_name, "goog")
    error_message = "topic_name must be 3-221 characters, start with a letter, use letters, digits, - _ . ~ + %, and not start with goog."
  }
}

variable "max_delivery_attempts" {
  description = "Attempts of a failing key before it goes to the dead-letter topic: reconcile retries it itself and dead-letters it after this many (LEVELSET_MAX_DELIVERY_ATTEMPTS), and Pub/Sub's dead-letter policy uses the same number for what still answers non-2xx."
  type        = number
  default     = 10

  validation {
    condition     = var.max_delivery_attempts >= 5 && var.max_delivery_attempts <= 100 && floor(var.max_delivery_attempts) == var.max_delivery_attempts
    error_message = "max_delivery_attempts must be a whole number from 5 to 100 (Pub/Sub's bounds)."
  }
}

variable "retry_minimum_backoff_seconds" {
  description = "Pub/Sub retry policy: first delay, in seconds, before a key whose reconcile failed (5xx) is delivered again; the delay grows exponentially."
  type        = number
  default     = 10

  validation {
    condition     = var.retry_minimum_backoff_seconds >= 0 && var.retry_minimum_backoff_seconds <= 600
    error_message = "retry_minimum_backoff_seconds must be from 0 to 600 (Pub/Sub's bounds)."
  }
}

variable "retry_maximum_backoff_seconds" {
  description = "Pub/Sub retry policy: largest delay, in seconds, between deliveries of a failing key."
  type        = number
  default     = 600

  validation {
    condition     = var.retry_maximum_backoff_seconds >= var.retry_minimum_backoff_seconds && var.retry_maximum_backoff_seconds <= 600
    error_message = "retry_maximum_backoff_seconds must be at least retry_minimum_backoff_seconds and at most 600 (Pub/Sub's bound)."
  }
}

variable "ack_deadline_seconds" {
  description = "How long, in seconds, Pub/Sub waits for reconcile to answer a push before it delivers the key again. At least reconcile_timeout_seconds, so one key is never reconciled twice at once."
  type        = number
  default     = 180

  validation {
    condition     = var.ack_deadline_seconds >= 10 && var.ack_deadline_seconds <= 600 && var.ack_deadline_seconds >= var.reconcile_timeout_seconds
    error_message = "ack_deadline_seconds must be from 10 to 600 (Pub/Sub's bounds) and at least reconcile_timeout_seconds."
  }
}

variable "dead_letter_retention_days" {
  description = "Days the dead-letter subscription keeps keys that exhausted their delivery attempts."
  type        = number
  default     = 7

  validation {
    condition     = var.dead_letter_retention_days >= 1 && var.dead_letter_retention_days <= 31 && floor(var.dead_letter_retention_days) == var.dead_letter_retention_days
    error_message = "dead_letter_retention_days must be a whole number from 1 to 31 (Pub/Sub's bounds)."
  }
}

# ---------------------------------------------------------------------------------------------------
# Functions
# ---------------------------------------------------------------------------------------------------

variable "functions_source_dir" {
  description = "Directory zipped as the functions' source: the functions bundle of the project's registry (`levelset build`; in this repository `npm run package:functions`, which writes terraform/.build/functions)."
  type        = string
}

variable "registry" {
  description = "What the project's controller registry needs (RBAC rules, CRDs, admission policies, the audit log sink's filter): the project's generated deploy/registry.gen.json, passed as `jsondecode(file(...))`. Generated with the manifests (`levelset build`, or `npm run generate:manifests` here); never written by hand."
  type = object({
    controllers = list(string)
    relay_cluster_rules = list(object({
      api_groups = list(string)
      resources  = list(string)
      verbs      = list(string)
    }))
    functions_cluster_rules = list(object({
      api_groups = list(string)
      resources  = list(string)
      verbs      = list(string)
    }))
    audit_log_filter   = string
    crds               = any
    admission_policies = optional(any, [])
    # The admission webhooks' configurations (functions/kit/webhook-configurations.ts; terraform/admission.tf).
    webhook_configurations = optional(any, [])
  })

  validation {
    condition     = alltrue([for crd in var.registry.crds : try(crd.kind == "CustomResourceDefinition", false)])
    error_message = "registry.crds must hold CustomResourceDefinition objects (regenerate deploy/registry.gen.json)."
  }

  validation {
    condition = alltrue([for m in var.registry.admission_policies : try(contains(
      ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"], m.kind
    ), false)])
    error_message = "registry.admission_policies must hold ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding objects (regenerate deploy/registry.gen.json)."
  }
}

variable "reconcile_timeout_seconds" {
  description = "Timeout, in seconds, of one reconcile request (one key)."
  type        = number
  default     = 120

  validation {
    condition     = var.reconcile_timeout_seconds >= 10 && var.reconcile_timeout_seconds <= 600
    error_message = "reconcile_timeout_seconds must be from 10 to 600 (it must fit in the Pub/Sub ack deadline, at most 600)."
  }
}

variable "reconcile_max_instances" {
  description = "Most reconcile instances at once. With reconcile_concurrency it bounds the keys reconciled in parallel, hence the request rate on the Kubernetes API server."
  type        = number
  default     = 10

  validation {
    condition     = var.reconcile_max_instances >= 1 && var.reconcile_max_instances <= 1000 && floor(var.reconcile_max_instances) == var.reconcile_max_instances
    error_message = "reconcile_max_instances must be a whole number from 1 to 1000."
  }
}

variable "kubernetes_request_budget" {
  description = "Requests per second to each cluster's API server from every function instance together, a bound over every 1-second window (core/request-budget.ts): each function instance sends at most floor(kubernetes_request_budget / n) requests in any second, n the instances that may run at once (reconcile_max_instances, as many again for the audit-log function when it is on, and one resync run), and the resync publishes at most floor(kubernetes_request_budget / 6) keys in any second, so a resync or a scale-out never sends more. The default is well within what a GKE control plane's API Priority and Fairness admits from one workload. 0: no client-side limit."
  type        = number
  default     = 100

  validation {
    condition     = var.kubernetes_request_budget >= 0 && var.kubernetes_request_budget <= 10000
    error_message = "kubernetes_request_budget must be from 0 (no limit) to 10000 requests per second."
  }
}

variable "reconcile_concurrency" {
  description = "Requests (keys) one reconcile instance serves at once (max_instance_request_concurrency)."
  type        = number
  default     = 8

  validation {
    condition     = var.reconcile_concurrency >= 1 && var.reconcile_concurrency <= 1000 && floor(var.reconcile_concurrency) == var.reconcile_concurrency
    error_message = "reconcile_concurrency must be a whole number from 1 to 1000."
  }

  validation {
    # Cloud Run functions serve concurrent requests only with at least one vCPU.
    condition     = var.reconcile_concurrency == 1 || tonumber(var.function_cpu) >= 1
    error_message = "reconcile_concurrency above 1 needs function_cpu of at least 1."
  }
}

variable "resync_timeout_seconds" {
  description = "Timeout, in seconds, of one resync run (LIST every key of every controller in one cluster and publish it); also the scheduler jobs' attempt deadline. With a request budget a run publishes at most floor(kubernetes_request_budget / 6) × (resync_timeout_seconds - 30) keys (11 040 with the defaults) and leaves the rest to the next run, which starts again from the first key: size it to the largest cluster's keys."
  type        = number
  default     = 720

  validation {
    condition     = var.resync_timeout_seconds >= 15 && var.resync_timeout_seconds <= 1800
    error_message = "resync_timeout_seconds must be from 15 to 1800 (Cloud Scheduler's attempt deadline bounds for HTTP targets)."
  }
}

variable "resync_schedule" {
  description = "Cron schedule (unix-cron, 5 fields) of the resync job."
  type        = string
  default     = "*/10 * * * *"

  validation {
    condition     = length(split(" ", trimspace(var.resync_schedule))) == 5
    error_message = "resync_schedule must be a 5-field unix-cron expression such as */10 * * * *."
  }
}

variable "resync_time_zone" {
  description = "Time zone (tz database name) in which resync_schedule is read."
  type        = string
  default     = "Etc/UTC"
}

variable "function_cpu" {
  description = "vCPUs of each function instance (Cloud Run functions), e.g. \"1\" or \"0.5\"."
  type        = string
  default     = "1"

  validation {
    condition     = can(tonumber(var.function_cpu)) && tonumber(var.function_cpu) > 0 && tonumber(var.function_cpu) <= 8
    error_message = "function_cpu must be a number of vCPUs from 0.083 to 8, as a string."
  }
}

variable "function_memory" {
  description = "Memory of each function instance, e.g. 512Mi. The V8 heap limit is half of it (NODE_OPTIONS=--max-old-space-size)."
  type        = string
  default     = "512Mi"

  validation {
    condition     = can(regex("^[0-9]+(Mi|Gi)$", var.function_memory))
    error_message = "function_memory must be a quantity in Mi or Gi, e.g. 512Mi."
  }
}

variable "ingress_settings" {
  description = "Ingress of both functions. ALLOW_INTERNAL_ONLY (default) admits Pub/Sub push and Cloud Scheduler from this project; every request must also carry an OIDC token of an invoker."
  type        = string
  default     = "ALLOW_INTERNAL_ONLY"

  validation {
    condition     = contains(["ALLOW_INTERNAL_ONLY", "ALLOW_INTERNAL_AND_GCLB", "ALLOW_ALL"], var.ingress_settings)
    error_message = "ingress_settings must be ALLOW_INTERNAL_ONLY, ALLOW_INTERNAL_AND_GCLB or ALLOW_ALL."
  }
}

variable "log_level" {
  description = "LOG_LEVEL of the functions and the relay (pino level)."
  type        = string
  default     = "info"

  validation {
    condition     = contains(["fatal", "error", "warn", "info", "debug", "trace"], var.log_level)
    error_message = "log_level must be one of fatal, error, warn, info, debug, trace."
  }
}

variable "force_destroy_source_bucket" {
  description = "Let terraform destroy delete the functions' source bucket with the archives in it."
  type        = bool
  default     = false
}

# ---------------------------------------------------------------------------------------------------
# Controller configuration (functions and relay read the same variables)
# ---------------------------------------------------------------------------------------------------

variable "source_namespace" {
  description = "LEVELSET_SOURCE_NAMESPACE: the namespace whose Secrets secret-replicator copies."
  type        = string
  default     = "levelset-system"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.source_namespace))
    error_message = "source_namespace must be a Kubernetes namespace name (RFC 1123 label)."
  }
}

variable "exclude_namespaces" {
  description = "LEVELSET_EXCLUDE_NAMESPACES: namespaces secret-replicator never copies into."
  type        = list(string)
  default     = ["kube-system", "kube-public", "kube-node-lease"]

  validation {
    condition     = alltrue([for ns in var.exclude_namespaces : can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", ns))])
    error_message = "exclude_namespaces must hold Kubernetes namespace names (RFC 1123 labels)."
  }
}

# ---------------------------------------------------------------------------------------------------
# Relay (in the cluster)
# ---------------------------------------------------------------------------------------------------

variable "relay_namespace" {
  description = "Namespace of the relay Deployment and its ServiceAccount."
  type        = string
  default     = "levelset-system"

  validation {
    condition     = can(regex("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", var.relay_namespace))
    error_message = "relay_namespace must be a Kubernetes namespace name (RFC 1123 label)."
  }
}

variable "create_relay_namespace" {
  description = "Create relay_namespace. Set false when it exists already."
  type        = bool
  default     = true
}

variable "relay_image" {
  description = "Container image of the relay (built from relay/Dockerfile), pinned by tag or digest, e.g. europe-west1-docker.pkg.dev/my-project/levelset/relay:0.1.0."
  type        = string

  validation {
    condition     = can(regex("^[^\\s]+(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[a-f0-9]{64})$", var.relay_image)) && !endswith(var.relay_image, ":latest")
    error_message = "relay_image must name a tag or a digest, and not :latest (a rollout must be reproducible)."
  }
}

variable "relay_replicas" {
  description = "Relay replicas. Each runs its own list+watch and publishes every key; more than one only adds duplicates, which reconcile tolerates."
  type        = number
  default     = 1

  validation {
    condition     = var.relay_replicas >= 1 && var.relay_replicas <= 3 && floor(var.relay_replicas) == var.relay_replicas
    error_message = "relay_replicas must be 1, 2 or 3."
  }
}

variable "relay_resources" {
  description = "Resource requests and limits of the relay container (Kubernetes quantities)."
  type = object({
    cpu_request    = optional(string, "50m")
    memory_request = optional(string, "128Mi")
    cpu_limit      = optional(string)
    memory_limit   = optional(string, "512Mi")
  })
  default = {}

  validation {
    condition = alltrue([
      for q in [var.relay_resources.cpu_request, var.relay_resources.memory_request, var.relay_resources.cpu_limit, var.relay_resources.memory_limit] :
      q == null || can(regex("^[0-9]+(\\.[0-9]+)?(m|Ki|Mi|Gi)?$", q))
    ])
    error_message = "relay_resources values must be Kubernetes quantities such as 50m, 128Mi or 1."
  }
}

# ---------------------------------------------------------------------------------------------------
# Operations
# ---------------------------------------------------------------------------------------------------

variable "notification_channels" {
  description = "Cloud Monitoring notification channel IDs (projects/<p>/notificationChannels/<id>) the alert policies notify. Empty: alerts show in the console only."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.notification_channels : can(regex("^projects/[^/]+/notificationChannels/[^/]+$", c))])
    error_message = "notification_channels must hold IDs of the form projects/<project>/notificationChannels/<id>."
  }
}

variable "reconcile_success_slo_goal" {
  description = "Goal of the reconcile success SLO: the share (0 to 1) of reconciles whose outcome is not error or transient, over slo_rolling_period_days (terraform/README.md, \"Dashboard and SLOs\")."
  type        = number
  default     = 0.99

  validation {
    condition     = var.reconcile_success_slo_goal > 0 && var.reconcile_success_slo_goal <= 0.9999
    error_message = "reconcile_success_slo_goal must be above 0 and at most 0.9999 (Cloud Monitoring's bounds for an SLO goal)."
  }
}

variable "delivery_slo_goal" {
  description = "Goal of the key delivery SLO: the share (0 to 1) of watch and manual keys delivered to reconcile within delivery_slo_threshold_ms of their enqueuedAt, over slo_rolling_period_days."
  type        = number
  default     = 0.98

  validation {
    condition     = var.delivery_slo_goal > 0 && var.delivery_slo_goal <= 0.9999
    error_message = "delivery_slo_goal must be above 0 and at most 0.9999 (Cloud Monitoring's bounds for an SLO goal)."
  }
}

variable "delivery_slo_threshold_ms" {
  description = "A key is delivered in time when it reaches reconcile within this many ms of its enqueuedAt. One of the delivery-delay metric's bucket bounds: 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000."
  type        = number
  default     = 10000

  validation {
    condition     = contains([100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000], var.delivery_slo_threshold_ms)
    error_message = "delivery_slo_threshold_ms must be a bucket bound of the delivery-delay metric: 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000 or 3600000."
  }
}

variable "slo_rolling_period_days" {
  description = "Days of the rolling window over which both SLOs are measured and their error budgets spent."
  type        = number
  default     = 28

  validation {
    condition     = var.slo_rolling_period_days >= 1 && var.slo_rolling_period_days <= 30 && floor(var.slo_rolling_period_days) == var.slo_rolling_period_days
    error_message = "slo_rolling_period_days must be a whole number of days from 1 to 30 (Cloud Monitoring's rolling periods)."
  }
}

# ---------------------------------------------------------------------------------------------------
# Topic controller (opt-in)
# ---------------------------------------------------------------------------------------------------

variable "enable_topic_controller" {
  description = "Let the Topic controller manage Pub/Sub topics and subscriptions: grants the reconcile function's service account a custom role with the topic and subscription permissions it uses, on topic_controller_project. Off: Topics end in Ready=False/PermissionDenied."
  type        = bool
  default     = false
}

variable "topic_controller_project" {
  description = "Project the Topic controller creates topics in (LEVELSET_CLOUD_PROJECT); empty: project_id."
  type        = string
  default     = ""
}

variable "enable_tracing" {
  description = "Export traces of the relay and the functions to Cloud Trace (LEVELSET_TRACING=cloud-trace) and grant them roles/cloudtrace.agent; false: no tracing at all."
  type        = bool
  default     = true
}

variable "trace_sample_ratio" {
  description = "Share (0 to 1) of the traces of keys reconciled with outcome success that are exported (LEVELSET_TRACE_SAMPLE_RATIO); traces of every other outcome are always exported."
  type        = number
  default     = 0.01

  validation {
    condition     = var.trace_sample_ratio >= 0 && var.trace_sample_ratio <= 1
    error_message = "trace_sample_ratio must be between 0 and 1."
  }
}

variable "audit_log_projects" {
  description = "More projects whose Admin Activity audit logs Levelset reads for drift (a log sink in each: terraform/audit-log.tf), besides project_id and topic_controller_project."
  type        = list(string)
  default     = []
  nullable    = false
}

variable "admission_min_instances" {
  description = "Instances of the admission service kept warm, at least 1: a cold start must never meet the API server's webhook timeout (terraform/admission.tf). Only with webhooks in the registry."
  type        = number
  default     = 1

  validation {
    condition     = var.admission_min_instances >= 1
    error_message = "admission_min_instances must be at least 1 (a cold start would meet the webhooks' timeoutSeconds)."
  }
}

variable "admission_max_instances" {
  description = "Most instances of the admission service (80 concurrent reviews each)."
  type        = number
  default     = 10

  validation {
    condition     = var.admission_max_instances >= var.admission_min_instances
    error_message = "admission_max_instances must be at least admission_min_instances."
  }
}

variable "admission_path_token" {
  description = "Optional unguessable first path segment of every webhook URL (at least 32 characters of [A-Za-z0-9_-]; \"\": none). The API server cannot authenticate to Cloud Run (terraform/admission.tf), so this keeps casual callers out; it is readable in the webhook configurations and Terraform's state."
  type        = string
  default     = ""
  sensitive   = true

  validation {
    condition     = var.admission_path_token == "" || can(regex("^[A-Za-z0-9_-]{32,}$", var.admission_path_token))
    error_message = "admission_path_token must be empty or at least 32 characters of letters, digits, '_' and '-'."
  }
}
