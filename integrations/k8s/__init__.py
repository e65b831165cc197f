"""Adapters for the built-in Kubernetes workload kinds (Pod, Job, CronJob, Deployment)."""
