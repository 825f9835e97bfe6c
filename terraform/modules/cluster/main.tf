# The objects Levelset needs in one cluster: namespace, CRDs, the relay (ServiceAccount, ClusterRole,
# Deployment) and the ClusterRole of the functions' identity. The root module (terraform/) applies
# it to its first cluster with its own kubernetes provider; every other cluster of a fleet calls it
# with that cluster's kubernetes provider (examples/fleet): Terraform cannot make a provider per
# element of a list. What every cluster gets alike comes from the root's `cluster_module_inputs`
# output; only `cluster_id` differs.

locals {
  relay_labels = {
    "app.kubernetes.io/name"       = "levelset-relay"
    "app.kubernetes.io/component"  = "relay"
    "app.kubernetes.io/part-of"    = "levelset"
    "app.kubernetes.io/managed-by" = "terraform"
  }
  relay_selector = {
    "app.kubernetes.io/name" = "levelset-relay"
  }

  relay_namespace = var.levelset.create_relay_namespace ? kubernetes_namespace_v1.levelset[0].metadata[0].name : var.levelset.relay_namespace

  # The relay names its cluster in every key (relay/config.ts RELAY_CLUSTER); the default cluster
  # needs no name (its keys stay message v1).
  relay_env = merge(
    var.levelset.relay_env,
    { RELAY_PORT = tostring(var.levelset.relay_port) },
    var.cluster_id == "default" ? {} : { RELAY_CLUSTER = var.cluster_id },
  )
}

resource "kubernetes_namespace_v1" "levelset" {
  count = var.levelset.create_relay_namespace ? 1 : 0

  metadata {
    name = var.levelset.relay_namespace
    labels = {
      "app.kubernetes.io/part-of"          = "levelset"
      "pod-security.kubernetes.io/enforce" = "restricted"
    }
  }
}

resource "kubernetes_manifest" "crd" {
  for_each = var.levelset.crds

  manifest = each.value
}

# The registry's admission policies (the kit's definePolicy): each ValidatingAdmissionPolicy and its
# ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1, Kubernetes 1.30 or later). The
# API server evaluates them itself: nothing of Levelset runs for them.
resource "kubernetes_manifest" "admission_policy" {
  for_each = var.levelset.admission_policies

  manifest = each.value
}

# The admission webhooks' configurations (terraform/admission.tf): after the CRDs their rules name.
resource "kubernetes_manifest" "webhook_configuration" {
  for_each = var.levelset.webhook_configurations

  manifest   = each.value
  depends_on = [kubernetes_manifest.crd]
}

# ---------------------------------------------------------------------------------------------------
# Relay: list+watch (get/list/watch only, on exactly what the registry watches), publish keys.
# ---------------------------------------------------------------------------------------------------

resource "kubernetes_service_account_v1" "relay" {
  metadata {
    name      = var.levelset.relay_service_account
    namespace = local.relay_namespace
    labels    = local.relay_labels
  }
}

resource "kubernetes_cluster_role_v1" "relay" {
  metadata {
    name   = "levelset-relay"
    labels = local.relay_labels
  }

  dynamic "rule" {
    for_each = var.levelset.relay_cluster_rules
    content {
      api_groups = rule.value.api_groups
      resources  = rule.value.resources
      verbs      = rule.value.verbs
    }
  }
}

resource "kubernetes_cluster_role_binding_v1" "relay" {
  metadata {
    name   = "levelset-relay"
    labels = local.relay_labels
  }
  role_ref {
    api_group = "rbac.authorization.k8s.io"
    kind      = "ClusterRole"
    name      = kubernetes_cluster_role_v1.relay.metadata[0].name
  }
  subject {
    kind      = "ServiceAccount"
    name      = kubernetes_service_account_v1.relay.metadata[0].name
    namespace = local.relay_namespace
  }
}

resource "kubernetes_deployment_v1" "relay" {
  metadata {
    name      = "levelset-relay"
    namespace = local.relay_namespace
    labels    = local.relay_labels
  }

  spec {
    replicas = var.levelset.relay_replicas

    selector {
      match_labels = local.relay_selector
    }

    template {
      metadata {
        labels = local.relay_labels
        annotations = {
          "prometheus.io/scrape" = "true"
          "prometheus.io/port"   = tostring(var.levelset.relay_port)
          "prometheus.io/path"   = "/metrics"
        }
      }

      spec {
        service_account_name            = kubernetes_service_account_v1.relay.metadata[0].name
        automount_service_account_token = true

        security_context {
          run_as_non_root = true
          run_as_user     = 65532
          run_as_group    = 65532
          fs_group        = 65532
          seccomp_profile {
            type = "RuntimeDefault"
          }
        }

        container {
          name  = "relay"
          image = var.levelset.relay_image

          port {
            name           = "http"
            container_port = var.levelset.relay_port
          }

          dynamic "env" {
            for_each = local.relay_env
            content {
              name  = env.key
              value = env.value
            }
          }

          resources {
            requests = {
              cpu    = var.levelset.relay_resources.cpu_request
              memory = var.levelset.relay_resources.memory_request
            }
            limits = {
              for k, v in { cpu = var.levelset.relay_resources.cpu_limit, memory = var.levelset.relay_resources.memory_limit } : k => v if v != null
            }
          }

          liveness_probe {
            http_get {
              path = "/healthz"
              port = "http"
            }
            initial_delay_seconds = 5
            period_seconds        = 10
            timeout_seconds       = 2
            failure_threshold     = 3
          }

          readiness_probe {
            http_get {
              path = "/readyz"
              port = "http"
            }
            period_seconds    = 5
            timeout_seconds   = 2
            failure_threshold = 3
          }

          security_context {
            allow_privilege_escalation = false
            read_only_root_filesystem  = true
            run_as_non_root            = true
            capabilities {
              drop = ["ALL"]
            }
          }

          volume_mount {
            name       = "tmp"
            mount_path = "/tmp"
          }
        }

        volume {
          name = "tmp"
          empty_dir {
            size_limit = "64Mi"
          }
        }
      }
    }
  }

  depends_on = [
    kubernetes_cluster_role_binding_v1.relay,
    kubernetes_manifest.crd,
  ]
}

# ---------------------------------------------------------------------------------------------------
# The functions' identity: GKE authenticates its Google access token as the service account's email;
# this ClusterRole grants exactly the verbs the controllers use (every controller's rbac, Events,
# list for resync).
# ---------------------------------------------------------------------------------------------------

resource "kubernetes_cluster_role_v1" "functions" {
  metadata {
    name = "levelset-functions"
    labels = {
      "app.kubernetes.io/component"  = "functions"
      "app.kubernetes.io/part-of"    = "levelset"
      "app.kubernetes.io/managed-by" = "terraform"
    }
  }

  dynamic "rule" {
    for_each = var.levelset.functions_cluster_rules
    content {
      api_groups = rule.value.api_groups
      resources  = rule.value.resources
      verbs      = rule.value.verbs
    }
  }
}

resource "kubernetes_cluster_role_binding_v1" "functions" {
  metadata {
    name = "levelset-functions"
    labels = {
      "app.kubernetes.io/component"  = "functions"
      "app.kubernetes.io/part-of"    = "levelset"
      "app.kubernetes.io/managed-by" = "terraform"
    }
  }
  role_ref {
    api_group = "rbac.authorization.k8s.io"
    kind      = "ClusterRole"
    name      = kubernetes_cluster_role_v1.functions.metadata[0].name
  }
  subject {
    api_group = "rbac.authorization.k8s.io"
    kind      = "User"
    name      = var.levelset.functions_service_account
  }
}
