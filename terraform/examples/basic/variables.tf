variable "project_id" {
  description = "Google Cloud project of the GKE cluster and of Levelset."
  type        = string
}

variable "region" {
  description = "Region of the functions and the scheduler job, e.g. europe-west1."
  type        = string
}

variable "cluster_name" {
  description = "Name of the existing GKE cluster."
  type        = string
}

variable "cluster_location" {
  description = "Region or zone of the GKE cluster."
  type        = string
}

variable "relay_image" {
  description = "Relay image built from relay/Dockerfile, pinned by tag or digest."
  type        = string
}
