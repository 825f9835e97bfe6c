terraform {
  required_version = ">= 1.9"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.14, < 8"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = ">= 2.31, < 4"
    }
  }
}
