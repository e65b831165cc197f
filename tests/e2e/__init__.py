"""End-to-end tests on a real Kubernetes control plane (run with ``make e2e``).

The package also holds the control-plane launcher (``controlplane``), so the
benchmark harness in ``benchmarks/kube_scheduler`` starts the very same
processes the tests do.
"""
