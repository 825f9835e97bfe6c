terraform {
  # 1.9: input validations may refer to other variables.
  required_version = ">= 1.9"

  required_providers {
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = ">= 2.31, < 4"
    }
  }
}
