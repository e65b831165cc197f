"""Adapters for KubeRay workloads (RayCluster, RayJob, RayService)."""
