variable "project_id" {
  description = "Google Cloud project of the GKE clusters and of Levelset."
  type        = string
}

variable "region" {
  description = "Region of the functions and the scheduler jobs, e.g. europe-west1."
  type        = string
}

variable "clusters" {
  description = "The two existing GKE clusters (name, location; optional id, default the name). The first gets the relay, CRDs and RBAC from the root module, the second from modules/cluster here."
  type = list(object({
    name     = string
    location = string
    id       = optional(string)
  }))

  validation {
    condition     = length(var.clusters) == 2
    error_message = "This example wires two clusters; for more, add a provider and a modules/cluster call per cluster to main.tf."
  }
}

variable "relay_image" {
  description = "Relay image built from relay/Dockerfile, pinned by tag or digest."
  type        = string
}
