"""Adapters for Kubeflow workloads (training-operator v1 jobs, MPI, Notebooks)."""
