terraform {
  # 1.9: input validations may refer to other variables (ack deadline ≥ function timeout).
  required_version = ">= 1.9"

  required_providers {
    google = {
      source = "hashicorp/google"
      # 6.x: google_cloudfunctions2_function with nodejs24, GKE control_plane_endpoints_config (DNS endpoint).
      version = ">= 6.14, < 8"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = ">= 2.31, < 4"
    }
    archive = {
      source  = "hashicorp/archive"
      version = ">= 2.4, < 3"
    }
  }
}
