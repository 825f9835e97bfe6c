output "console_links" {
  description = "Google Cloud console pages of the deployment."
  value       = module.levelset.console_links
}

output "dead_letter_subscription" {
  description = "Pull subscription holding dead-lettered keys."
  value       = module.levelset.dead_letter_subscription
}
