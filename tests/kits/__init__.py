"""Test kits: builders, scenario checkers and in-memory API servers that only tests use.

They live here rather than in the product packages so an installed podmuster carries no
test code: ``worlds`` builds cluster pictures and checks the engine's decisions,
``fake_kube`` is an in-memory API server for :mod:`kubeapi` clients, and
``podgrouper_kube`` is the same for the podgrouper's narrow interface.
"""
