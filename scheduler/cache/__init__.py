"""The edge between raw Kubernetes objects and the engine's snapshot."""
