output "clusters" {
  description = "The clusters the functions serve, by id, with their Kubernetes API endpoints."
  value       = module.levelset.clusters
}

output "resync_jobs" {
  description = "Each cluster's Cloud Scheduler resync job, by cluster id."
  value       = module.levelset.resync_jobs
}

output "console_links" {
  description = "Google Cloud console pages of the deployment."
  value       = module.levelset.console_links
}
